// How trustworthy an evaluation run's probabilities are, from its progress records alone: each
// returned answer's confidence against whether it matches a gold answer (the metric's
// normalisation), as expected calibration error, Brier score and a reliability diagram; and the
// question's ambiguity probability against AmbigNQ's single/multi annotation, as AUROC and a ROC
// curve. Anyone holding progress.jsonl and the reference can recompute these.
import { normalizeAnswer } from '../../core/normalize-answer.js'
import type { AmbiguitySummary, ConfidenceSummary, ProgressRecord } from './eval-records.js'
import { isMultiAnswer, type AmbigNqRecord } from './score-ambignq.js'

export interface Scored { p: number; positive: boolean }

/** One reliability bin: answers with confidence in [lo, hi) (the last bin closed). */
export interface ReliabilityBin { lo: number; hi: number; count: number; meanConfidence: number; accuracy: number }

type RecordedAnswer = ProgressRecord['answers'][number]

/** Every returned answer's confidence (or another of its probabilities, such as the reader's own
 * before calibration; answers without it left out), and whether it matches any gold alias of any
 * annotation. */
export function answerPoints(records: readonly AmbigNqRecord[], done: ReadonlyMap<string, ProgressRecord>, pick: (a: RecordedAnswer) => number | undefined = (a) => a.confidence): Scored[] {
  return records.flatMap((record) => {
    const golds = new Set(record.annotations.flatMap((a) => (a.type === 'singleAnswer' ? a.answer : a.qaPairs.flatMap((p) => p.answer))).map(normalizeAnswer))
    return (done.get(record.id)?.answers ?? []).flatMap((a) => {
      const p = pick(a)
      return p === undefined ? [] : [{ p: Math.min(1, p), positive: golds.has(normalizeAnswer(a.answer)) }]
    })
  })
}

/** Each question's ambiguity probability against its annotation (questions without one left out). */
export function ambiguityPoints(records: readonly AmbigNqRecord[], done: ReadonlyMap<string, ProgressRecord>): Scored[] {
  return records.flatMap((record) => {
    const ambiguity = done.get(record.id)?.ambiguity
    return typeof ambiguity === 'number' ? [{ p: ambiguity, positive: isMultiAnswer(record) }] : []
  })
}

export function reliabilityBins(points: readonly Scored[], bins = 10): ReliabilityBin[] {
  const out = Array.from({ length: bins }, (_, b) => ({ lo: b / bins, hi: (b + 1) / bins, count: 0, sum: 0, hits: 0 }))
  for (const { p, positive } of points) {
    const bin = out[Math.min(bins - 1, Math.max(0, Math.floor(p * bins)))]!
    bin.count++
    bin.sum += p
    if (positive) bin.hits++
  }
  return out.map((b) => ({ lo: b.lo, hi: b.hi, count: b.count, meanConfidence: b.count ? b.sum / b.count : NaN, accuracy: b.count ? b.hits / b.count : NaN }))
}

/** Expected calibration error: the count-weighted mean |accuracy − confidence| over equal-width bins. */
export function expectedCalibrationError(points: readonly Scored[], bins = 10): number {
  if (points.length === 0) return NaN
  return reliabilityBins(points, bins).reduce((s, b) => (b.count ? s + (b.count * Math.abs(b.accuracy - b.meanConfidence)) : s), 0) / points.length
}

export function brierScore(points: readonly Scored[]): number {
  if (points.length === 0) return NaN
  return points.reduce((s, { p, positive }) => s + (p - (positive ? 1 : 0)) ** 2, 0) / points.length
}

/** The ROC curve from (0,0) to (1,1), one point per distinct score (ties move together). */
export function rocCurve(points: readonly Scored[]): { fpr: number; tpr: number }[] {
  const pos = points.filter((x) => x.positive).length
  const neg = points.length - pos
  const sorted = [...points].sort((a, b) => b.p - a.p)
  const curve = [{ fpr: 0, tpr: 0 }]
  let tp = 0
  let fp = 0
  for (let i = 0; i < sorted.length; i++) {
    if (sorted[i]!.positive) tp++
    else fp++
    if (i + 1 === sorted.length || sorted[i + 1]!.p !== sorted[i]!.p) curve.push({ fpr: neg ? fp / neg : 0, tpr: pos ? tp / pos : 0 })
  }
  return curve
}

/** Area under the ROC curve (trapezoids, so ties count one half); NaN without both classes. */
export function auroc(points: readonly Scored[]): number {
  const pos = points.filter((x) => x.positive).length
  if (pos === 0 || pos === points.length) return NaN
  const curve = rocCurve(points)
  let area = 0
  for (let i = 1; i < curve.length; i++) area += (curve[i]!.fpr - curve[i - 1]!.fpr) * (curve[i]!.tpr + curve[i - 1]!.tpr) / 2
  return area
}

export function confidenceSummary(points: readonly Scored[]): ConfidenceSummary {
  const mean = (f: (x: Scored) => number) => (points.length ? points.reduce((s, x) => s + f(x), 0) / points.length : NaN)
  return { answers: points.length, correctShare: mean((x) => (x.positive ? 1 : 0)), ece: expectedCalibrationError(points), brier: brierScore(points), meanConfidence: mean((x) => x.p) }
}

/** null when the run carries no ambiguity (no detector configured). */
export function ambiguitySummary(points: readonly Scored[]): AmbiguitySummary | null {
  if (points.length === 0) return null
  const share = (f: (x: Scored) => boolean) => points.filter(f).length / points.length
  return { questions: points.length, multiShare: share((x) => x.positive), auroc: auroc(points), accuracy: share((x) => (x.p > 0.5) === x.positive) }
}
