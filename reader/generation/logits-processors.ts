// The logits processors transformers applies by default for our settings, in its order:
// no-repeat n-gram, minimum length, forced BOS, forced EOS; then an optional constraint. Each
// works in place on one row of scores for one decoder sequence.
import type { GenerationOptions } from './generation-options.js'

/** Tokens allowed after `sequence` (the decoder sequence so far), or undefined for any. */
export type TokenConstraint = (sequence: readonly number[]) => Iterable<number> | undefined

export interface ProcessorContext {
  options: GenerationOptions
  maxLength: number
  eosTokenIds: readonly number[]
  constraint?: TokenConstraint | undefined
}

function forceOnly(scores: Float32Array, token: number): void {
  scores.fill(-Infinity)
  scores[token] = 0
}

function bannedByNgrams(sequence: readonly number[], n: number): number[] {
  const length = sequence.length
  if (n <= 0 || length + 1 < n) return []
  const banned: number[] = []
  const start = length + 1 - n
  for (let i = 0; i + n <= length; i++) {
    let same = true
    for (let j = 0; j < n - 1 && same; j++) same = sequence[i + j] === sequence[start + j]
    if (same) banned.push(sequence[i + n - 1]!)
  }
  return banned
}

export function processScores(scores: Float32Array, sequence: readonly number[], context: ProcessorContext): void {
  const { options, eosTokenIds, maxLength } = context
  const length = sequence.length
  for (const token of bannedByNgrams(sequence, options.noRepeatNgramSize)) scores[token] = -Infinity
  if (length < options.minLength) for (const eos of eosTokenIds) scores[eos] = -Infinity
  if (options.forcedBosTokenId !== undefined && length === 1) forceOnly(scores, options.forcedBosTokenId)
  if (options.forcedEosTokenId !== undefined && length === maxLength - 1) forceOnly(scores, options.forcedEosTokenId)
  const allowed = context.constraint?.(sequence)
  if (allowed) {
    const kept = [...allowed].map((token) => [token, scores[token]!] as const)
    // When the rules above already forbid every allowed token (the forced end at max length, in
    // the middle of a word), they win: an all -Infinity row has no distribution.
    if (kept.every(([, score]) => score === -Infinity)) return
    scores.fill(-Infinity)
    for (const [token, score] of kept) scores[token] = score
  }
}

/** log_softmax in place. */
export function logSoftmax(scores: Float32Array): void {
  let max = -Infinity
  for (const s of scores) if (s > max) max = s
  let sum = 0
  for (const s of scores) sum += Math.exp(s - max)
  const logZ = max + Math.log(sum)
  for (let v = 0; v < scores.length; v++) scores[v] = scores[v]! - logZ
}
