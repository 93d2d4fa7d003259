// What an AmbigNQ evaluation run records: one line of progress.jsonl per answered question, one
// of passages.jsonl per passage read, and the metrics; the report reads them back.
import type { StageTimings } from '../core/stages.js'
import type { AmbigNqMetrics } from './score-ambignq.js'

/** One answered question: a line of progress.jsonl. */
export interface ProgressRecord {
  id: string
  question: string
  answers: { answer: string; question: string; rewritten: boolean; confidence: number; evidence: string[] }[]
  /** Ids of the passages the reader read, in reading order. */
  read: string[]
  timings: StageTimings
}

/** A passage the reader read: a line of passages.jsonl (the report shows them). */
export interface PassageRecord { id: string; title: string; text: string }

export interface TimingSummary { n: number; p50Ms: number; p99Ms: number; meanMs: number }

export interface EvalMetrics extends AmbigNqMetrics {
  timings: Record<'total' | 'retrieval' | 'rerank' | 'read' | 'disambiguate', TimingSummary>
  run: { questions: number; resumed: number; answeredNow: number; seconds: number; questionsPerSecond: number }
  config: Record<string, unknown>
}
