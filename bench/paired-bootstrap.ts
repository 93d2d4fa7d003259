// The difference between two systems scored on the same questions, with a percentile bootstrap
// interval over the questions (Efron & Tibshirani 1993; Koehn 2004 for MT): each resample draws
// questions with replacement and keeps both systems' scores of a question together, so the
// interval reflects how much the difference depends on which questions were asked.
import { seededRandom } from './synthetic-corpus.js'

export interface PairedDifference {
  /** Mean of after − before. */
  difference: number
  /** The interval's bounds (percentiles of the resampled means). */
  low: number
  high: number
  /** Questions whose score changed. */
  changed: number
}

export function pairedBootstrap(before: readonly number[], after: readonly number[], options: { samples?: number; level?: number; seed?: number } = {}): PairedDifference {
  if (before.length !== after.length || before.length === 0) throw new Error(`paired scores need the same questions: ${before.length} before, ${after.length} after`)
  const { samples = 5000, level = 0.95, seed = 1 } = options
  const d = before.map((b, i) => after[i]! - b)
  const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length
  const random = seededRandom(seed)
  const means: number[] = []
  for (let s = 0; s < samples; s++) {
    let sum = 0
    for (let i = 0; i < d.length; i++) sum += d[Math.floor(random() * d.length)]!
    means.push(sum / d.length)
  }
  means.sort((a, b) => a - b)
  const at = (q: number) => means[Math.min(samples - 1, Math.max(0, Math.round(q * (samples - 1))))]!
  return { difference: mean(d), low: at((1 - level) / 2), high: at((1 + level) / 2), changed: d.filter((x) => x !== 0).length }
}
