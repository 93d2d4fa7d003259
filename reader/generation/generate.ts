// Greedy and beam search over a Seq2SeqModel with the KV cache, reproducing transformers'
// `generate` (4.57) token for token: the same logits processors, the same top-2k candidate
// selection, the same length penalty and stopping rules. Batched; a forced decoder prefix per
// input (inputs are grouped by prefix length, since decoder rows share one length).
import type { GenerationOptions } from './generation-options.js'
import { logSoftmax, processScores, type ProcessorContext, type TokenConstraint } from './logits-processors.js'
import type { DecoderOutput, EncoderState, PastState, Seq2SeqModel } from './seq2seq-model.js'

export interface GenerateRequest {
  /** Encoder input ids, special tokens included. */
  input: readonly number[]
  /** Decoder tokens forced after the start token (a known answer and the separator, say). */
  prefix?: readonly number[]
  /** Restricts the tokens each step may choose (span-constrained decoding). */
  constraint?: TokenConstraint
  /** This request's own maximum length, instead of the options' (so that what a request gets does
   * not depend on the other requests' lengths). */
  maxLength?: number
}

export interface Hypothesis {
  /** The whole decoder sequence: start token, prefix, generated tokens, EOS when finished. */
  tokens: number[]
  /** The generated tokens only (after the prefix), EOS and padding removed. */
  generated: number[]
  /** Beam search: sum of log-probs / generated_length ** lengthPenalty (transformers' sequences_scores). Greedy: sum of log-probs. */
  score: number
  /** Sum of the log-probabilities of the generated tokens (EOS included). */
  logProb: number
  /** The log-probability of each token after the prompt (same positions as tokens after it). */
  tokenLogProbs: number[]
}

export interface GenerateRun {
  /** false recomputes the whole decoder each step (the baseline the KV cache is measured against). */
  useCache?: boolean
  signal?: AbortSignal
}

/** One hypothesis list per request, best first (numReturnSequences each). */
export async function generate(model: Seq2SeqModel, requests: readonly GenerateRequest[], options: GenerationOptions, run: GenerateRun = {}): Promise<Hypothesis[][]> {
  const results: Hypothesis[][] = new Array(requests.length)
  const groups = new Map<number, number[]>()
  requests.forEach((r, i) => {
    const key = r.prefix?.length ?? 0
    groups.set(key, [...(groups.get(key) ?? []), i])
  })
  for (const indices of groups.values()) {
    const group = indices.map((i) => requests[i]!)
    const out = options.numBeams > 1 ? await beamSearch(model, group, options, run) : await greedySearch(model, group, options, run)
    indices.forEach((i, j) => { results[i] = out[j]! })
  }
  return results
}

interface Decoding {
  model: Seq2SeqModel
  encoder: EncoderState
  useCache: boolean
  past?: PastState | undefined
  signal?: AbortSignal | undefined
}

function maxLengthFor(options: GenerationOptions, promptLength: number): number {
  return options.maxNewTokens !== undefined ? promptLength + options.maxNewTokens : options.maxLength
}

/** The decoder's next-token logits for every row; with the cache only the last tokens are fed. */
async function nextLogits(d: Decoding, sequences: readonly number[][], first: boolean): Promise<Float32Array> {
  d.signal?.throwIfAborted()
  let out: DecoderOutput
  if (!d.useCache) out = await d.model.decodeFull(d.encoder, sequences, false)
  else if (first || !d.past) out = await d.model.decodeFull(d.encoder, sequences, true)
  else out = await d.model.step(d.encoder, sequences.map((s) => s[s.length - 1]!), d.past)
  d.past = out.past
  return out.logits
}

function contextFor(model: Seq2SeqModel, options: GenerationOptions, promptLength: number, request: GenerateRequest): ProcessorContext {
  return { options, maxLength: request.maxLength ?? maxLengthFor(options, promptLength), eosTokenIds: model.config.eosTokenIds, constraint: request.constraint }
}

async function greedySearch(model: Seq2SeqModel, requests: readonly GenerateRequest[], options: GenerationOptions, run: GenerateRun): Promise<Hypothesis[][]> {
  const { decoderStartTokenId: start, padTokenId: pad, eosTokenIds, vocabSize } = model.config
  const sequences = requests.map((r) => [start, ...(r.prefix ?? [])])
  const promptLength = sequences[0]!.length
  const d: Decoding = { model, encoder: await model.encode(requests.map((r) => r.input)), useCache: run.useCache ?? true, signal: run.signal }
  const contexts = requests.map((r) => contextFor(model, options, promptLength, r))
  const maxLength = Math.max(...contexts.map((c) => c.maxLength))
  const finished = requests.map(() => false)
  const tokenLogProbs = requests.map((): number[] => [])
  for (let length = promptLength; length < maxLength && finished.includes(false); length++) {
    const logits = await nextLogits(d, sequences, length === promptLength)
    sequences.forEach((sequence, i) => {
      if (length >= contexts[i]!.maxLength) finished[i] = true
      if (finished[i]) {
        sequence.push(pad)
        return
      }
      const scores = logits.subarray(i * vocabSize, (i + 1) * vocabSize)
      processScores(scores, sequence, contexts[i]!)
      let best = 0
      for (let v = 1; v < vocabSize; v++) if (scores[v]! > scores[best]!) best = v
      logSoftmax(scores)
      tokenLogProbs[i]!.push(scores[best]!)
      sequence.push(best)
      if (eosTokenIds.includes(best)) finished[i] = true
    })
  }
  return sequences.map((tokens, i) => {
    const logProb = tokenLogProbs[i]!.reduce((a, b) => a + b, 0)
    // A request with a shorter maxLength than the batch's longest was padded after it.
    return [{ tokens: trimPadding(tokens.slice(0, contexts[i]!.maxLength), promptLength, eosTokenIds), generated: generatedPart(tokens, promptLength, pad, eosTokenIds), score: logProb, logProb, tokenLogProbs: tokenLogProbs[i]! }]
  })
}

function trimPadding(tokens: number[], promptLength: number, eos: readonly number[]): number[] {
  const end = tokens.findIndex((t, j) => j >= promptLength && eos.includes(t))
  return end < 0 ? tokens : tokens.slice(0, end + 1)
}

function generatedPart(tokens: number[], promptLength: number, pad: number, eos: readonly number[]): number[] {
  const out: number[] = []
  for (const t of tokens.slice(promptLength)) {
    if (eos.includes(t)) break
    if (t !== pad) out.push(t)
  }
  return out
}

interface Candidate { score: number; beam: number; token: number }
interface Finished { tokens: number[]; score: number; length: number; tokenLogProbs: number[] }

/** The k best (score, beam, token) of every beam's row, best first. */
function topCandidates(rows: Float32Array, beams: number, vocabSize: number, k: number): Candidate[] {
  const best: Candidate[] = []
  for (let beam = 0; beam < beams; beam++) {
    const base = beam * vocabSize
    for (let v = 0; v < vocabSize; v++) {
      const score = rows[base + v]!
      if (best.length === k && score <= best[k - 1]!.score) continue
      let at = best.length
      while (at > 0 && best[at - 1]!.score < score) at--
      best.splice(at, 0, { score, beam, token: v })
      if (best.length > k) best.pop()
    }
  }
  return best
}

async function beamSearch(model: Seq2SeqModel, requests: readonly GenerateRequest[], options: GenerationOptions, run: GenerateRun): Promise<Hypothesis[][]> {
  const { decoderStartTokenId: start, padTokenId: pad, eosTokenIds, vocabSize } = model.config
  const beams = options.numBeams
  const batch = requests.length
  const prompts = requests.map((r) => [start, ...(r.prefix ?? [])])
  const promptLength = prompts[0]!.length
  const { lengthPenalty, earlyStopping } = options
  const keep = Math.max(2, 1 + eosTokenIds.length) * beams
  const encoder = model.expandEncoder(await model.encode(requests.map((r) => r.input)), beams)
  const d: Decoding = { model, encoder, useCache: run.useCache ?? true, signal: run.signal }
  const contexts = requests.map((r) => contextFor(model, options, promptLength, r))

  // Row b * beams + j is beam j of input b. Only beam 0 starts alive, as in transformers.
  let running = prompts.flatMap((p) => Array.from({ length: beams }, () => [...p]))
  let runningLogProbs: number[][] = running.map(() => [])
  let runningScores: number[] = prompts.flatMap(() => Array.from({ length: beams }, (_, j) => (j === 0 ? 0 : -1e9)))
  const finished: Finished[][] = requests.map(() => [])
  const heuristicOpen = requests.map(() => true)

  for (let length = promptLength; ; length++) {
    const logits = await model.logSoftmax(await nextLogits(d, running, length === promptLength), batch * beams)
    const nextRunning: number[][] = []
    const nextScores: number[] = []
    const nextLogProbs: number[][] = []
    const sourceRows: number[] = []
    let everyCandidateHit = true
    for (let b = 0; b < batch; b++) {
      for (let j = 0; j < beams; j++) {
        const row = b * beams + j
        const scores = logits.subarray(row * vocabSize, (row + 1) * vocabSize)
        processScores(scores, running[row]!, contexts[b]!)
        const base = runningScores[row]!
        for (let v = 0; v < vocabSize; v++) scores[v] = scores[v]! + base
      }
      const candidates = topCandidates(logits.subarray(b * beams * vocabSize, (b + 1) * beams * vocabSize), beams, vocabSize, keep)
      const hits = candidates.map((c) => eosTokenIds.includes(c.token) || length + 1 >= contexts[b]!.maxLength)
      if (hits.includes(false)) everyCandidateHit = false

      // Running beams for the next step: the best candidates that did not finish.
      const alive = candidates.map((c, k) => ({ c, score: hits[k] ? c.score - 1e9 : c.score }))
        .sort((x, y) => y.score - x.score).slice(0, beams)
      for (const { c, score } of alive) {
        nextRunning.push([...running[b * beams + c.beam]!, c.token])
        nextScores.push(score)
        nextLogProbs.push([...runningLogProbs[b * beams + c.beam]!, c.score - runningScores[b * beams + c.beam]!])
        sourceRows.push(b * beams + c.beam)
      }

      // Finished hypotheses: only the top `beams` candidates may finish, and none once the
      // input is full under early stopping or no running beam can beat the worst finished one.
      const full = finished[b]!.length === beams
      if (!(full && earlyStopping === true) && heuristicOpen[b]) {
        const generatedLength = length + 1 - promptLength
        candidates.slice(0, beams).forEach((c, k) => {
          if (!hits[k]) return
          const row = b * beams + c.beam
          finished[b]!.push({
            tokens: [...running[row]!, c.token],
            score: c.score / generatedLength ** lengthPenalty,
            length: generatedLength,
            tokenLogProbs: [...runningLogProbs[row]!, c.score - runningScores[row]!],
          })
        })
        finished[b]!.sort((x, y) => y.score - x.score)
        finished[b]!.length = Math.min(finished[b]!.length, beams)
      }
    }
    if (d.past) d.past = model.reorder(d.past, sourceRows)
    running = nextRunning
    runningScores = nextScores
    runningLogProbs = nextLogProbs

    const nextLength = length + 1
    for (let b = 0; b < batch; b++) {
      if (!heuristicOpen[b] || finished[b]!.length < beams) continue
      const hypotheticalLength = earlyStopping === 'never' && lengthPenalty > 0 ? contexts[b]!.maxLength - promptLength : nextLength - promptLength
      const bestPossible = runningScores[b * beams]! / hypotheticalLength ** lengthPenalty
      heuristicOpen[b] = bestPossible > finished[b]![beams - 1]!.score
    }
    const allFull = finished.every((f) => f.length === beams)
    if (!heuristicOpen.includes(true) || (allFull && earlyStopping === true) || everyCandidateHit) break
  }
  return finished.map((list) => list.slice(0, options.numReturnSequences).map((h) => ({
    tokens: h.tokens,
    generated: generatedPart(h.tokens, promptLength, pad, eosTokenIds),
    score: h.score,
    logProb: h.tokenLogProbs.reduce((a, b) => a + b, 0),
    tokenLogProbs: h.tokenLogProbs,
  })))
}
