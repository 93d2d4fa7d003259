// Per-question F1 answer of answer sets chosen offline (bench/reader-union, bench/set-rules).
import { scoreAmbigNq, type AmbigNqRecord } from '../src/eval/score-ambignq.js'

/** Each record's F1 answer for the set `setOf` gives it, in the records' order; an empty set
 * scores 0 (the metric wants a non-empty list). */
export function setF1<Q extends { record: AmbigNqRecord }>(questions: readonly Q[], setOf: (q: Q) => string[]): number[] {
  const { perQuestion } = scoreAmbigNq(questions.map((q) => q.record), Object.fromEntries(questions.map((q) => { const set = setOf(q); return [q.record.id, set.length > 0 ? set : ['']] })))
  return questions.map((q) => perQuestion[q.record.id]!['F1 answer']!)
}

export const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length
export const pct = (x: number): string => (100 * x).toFixed(1)
