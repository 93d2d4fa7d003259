// BLEU of one hypothesis against its references, as coco-caption's BleuScorer computes it for a
// single segment with the `closest` reference length (pycocoevalcap/bleu/bleu_scorer.py), the way the
// official AmbigQA evaluation calls it. Same float operations in the same order, so results agree
// with the Python ones to the last bits.
import { pySplit } from '../../core/normalize-answer.js'

const SMALL = 1e-9
const TINY = 1e-15

function ngramCounts(words: readonly string[], n: number): Map<string, number> {
  const counts = new Map<string, number>()
  for (let k = 1; k <= n; k++) {
    for (let i = 0; i + k <= words.length; i++) {
      // The separator cannot occur in a word (words come from a whitespace split).
      const gram = words.slice(i, i + k).join(' ')
      counts.set(gram, (counts.get(gram) ?? 0) + 1)
    }
  }
  return counts
}

/**
 * BLEU-1..BLEU-n (default n = 4) of `hypothesis` against `references`; every string is split on
 * whitespace. Returns `[bleu1, …, bleun]`.
 */
export function bleuScores(hypothesis: string, references: readonly string[], n = 4): number[] {
  if (references.length === 0) throw new RangeError('bleuScores needs at least one reference')
  const refLens: number[] = []
  const maxCounts = new Map<string, number>()
  for (const ref of references) {
    const words = pySplit(ref)
    refLens.push(words.length)
    for (const [gram, count] of ngramCounts(words, n)) {
      maxCounts.set(gram, Math.max(maxCounts.get(gram) ?? 0, count))
    }
  }
  const hypWords = pySplit(hypothesis)
  const testLen = hypWords.length
  // reflen: the reference length closest to the hypothesis length, the shorter one on a tie.
  let refLen = refLens[0] ?? 0
  for (const l of refLens) {
    const d = Math.abs(l - testLen)
    const best = Math.abs(refLen - testLen)
    if (d < best || (d === best && l < refLen)) refLen = l
  }
  const guess: number[] = []
  const correct: number[] = new Array<number>(n).fill(0)
  for (let k = 1; k <= n; k++) guess.push(Math.max(0, testLen - k + 1))
  for (const [gram, count] of ngramCounts(hypWords, n)) {
    const k = gram.split(' ').length
    correct[k - 1] = (correct[k - 1] ?? 0) + Math.min(maxCounts.get(gram) ?? 0, count)
  }
  const scores: number[] = []
  let bleu = 1
  for (let k = 0; k < n; k++) {
    bleu *= ((correct[k] ?? 0) + TINY) / ((guess[k] ?? 0) + SMALL)
    scores.push(bleu ** (1 / (k + 1)))
  }
  const ratio = (testLen + TINY) / (refLen + SMALL)
  if (ratio < 1) {
    const penalty = Math.exp(1 - 1 / ratio)
    for (let k = 0; k < n; k++) scores[k] = (scores[k] ?? 0) * penalty
  }
  return scores
}
