// What an AmbigNQ evaluation run records: one line of progress.jsonl per answered question, one
// of passages.jsonl per passage read, and the metrics; the report reads them back.
import type { StageTimings } from '../../core/stages.js'
import type { AmbigNqMetrics } from './score-ambignq.js'

/** One answered question: a line of progress.jsonl. */
export interface ProgressRecord {
  id: string
  question: string
  /** confidence: calibrated when the run had a calibration (reader.calibration), else the reader's
   * probability; readerProbability: the reader's probability, when calibrated (the "before"). */
  answers: { answer: string; question: string; rewritten?: boolean; confidence: number; readerProbability?: number; evidence: string[] }[]
  /** P(more than one answer) from the ambiguity detector; absent without one. */
  ambiguity?: number
  /** Ids of the passages the reader read, in reading order. */
  read: string[]
  timings: StageTimings
}

/** A passage the reader read: a line of passages.jsonl (the report shows them). */
export interface PassageRecord { id: string; title: string; text: string }

/** The returned answers' confidence against correctness (src/eval/confidence-metrics.ts). */
export interface ConfidenceSummary { answers: number; correctShare: number; ece: number; brier: number; meanConfidence: number }
/** The ambiguity probability against AmbigNQ's single/multi (AUROC; accuracy of P > 0.5). */
export interface AmbiguitySummary { questions: number; multiShare: number; auroc: number; accuracy: number }

export interface TimingSummary { n: number; p50Ms: number; p99Ms: number; meanMs: number }

export interface EvalMetrics extends AmbigNqMetrics {
  timings: Record<'total' | 'retrieval' | 'rerank' | 'read' | 'decide' | 'disambiguate', TimingSummary>
  run: { questions: number; resumed: number; answeredNow: number; seconds: number; questionsPerSecond: number }
  config: Record<string, unknown>
  /** The returned answers' confidence against correctness (ECE over 10 bins, Brier). */
  confidence: ConfidenceSummary
  /** The same for the reader's own probabilities (before calibration); null when uncalibrated. */
  readerConfidence: ConfidenceSummary | null
  /** The ambiguity probability against single/multi; null when the run had no detector. */
  ambiguity: AmbiguitySummary | null
}
