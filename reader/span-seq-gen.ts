// SpanSeqGen (Min et al. 2020): the question and the reranked passages in, every distinct answer
// out, generated as one sequence with a separator token between answers.
import type { RetrievedPassage } from '../core/retriever.js'
import { containsTokens, hasAnswer } from '../core/has-answer.js'
import { normalizeAnswer } from '../core/normalize-answer.js'
import { ERR_MODEL_INVALID } from '../core/errors.js'
import { generate, type Hypothesis } from './generation/generate.js'
import type { GenerationOptions } from './generation/generation-options.js'
import type { TokenConstraint } from './generation/logits-processors.js'
import { INPUT_SEPARATOR, readerInput, surfaceForm } from './reader-input.js'
import type { Seq2SeqModel } from './generation/seq2seq-model.js'
import type { PredictedAnswer, ReadingQuestion } from './types.js'

export interface SpanSeqGenOptions {
  /** Input budget in tokens (the length the model was trained at). */
  maxInputTokens: number
  /** The token that separates answers in the output. */
  separator: string
  /** Decoding may only copy spans of the input passages. */
  constrainToPassages: boolean
  generation: Partial<GenerationOptions>
  /**
   * 0: read the passages together, as SpanSeqGen does. n > 0: read each of the top n alone and
   * pool: an answer's score is its probability summed over the passages, its confidence the mean.
   */
  readEach: number
  /** With readEach: an answer is kept when its pooled score reaches this share of the best one's. */
  poolKeep: number
}

export const defaultSpanSeqGenOptions: SpanSeqGenOptions = { maxInputTokens: 384, separator: '<SEP>', constrainToPassages: false, generation: {}, readEach: 0, poolKeep: 0.5 }

interface AnswerText { text: string; probability: number }

/** Token pieces between separators (empty pieces kept, as a split on the separator gives them). */
export function splitOnSeparator(tokens: readonly number[], separator: number): number[][] {
  const pieces: number[][] = [[]]
  for (const t of tokens) {
    if (t === separator) pieces.push([])
    else pieces.at(-1)!.push(t)
  }
  return pieces
}

export class SpanSeqGen {
  readonly options: SpanSeqGenOptions
  private readonly separatorId: number
  /** The question/passage separator's tokens (INPUT_SEPARATOR). */
  private readonly inputSeparator: number[]

  constructor(readonly model: Seq2SeqModel, options: Partial<SpanSeqGenOptions> = {}) {
    this.options = { ...defaultSpanSeqGenOptions, ...options }
    const id = model.tokenizer.tokenId(this.options.separator)
    if (id === undefined) throw ERR_MODEL_INVALID(`${model.dir}/tokenizer.json`, `has no answer separator token '${this.options.separator}'`, 'Set reader.separator to the token the model was trained with')
    this.separatorId = id
    this.inputSeparator = model.tokenizer.encodePlain(INPUT_SEPARATOR.trim())
  }

  input(item: ReadingQuestion): number[] {
    return this.model.tokenizer.encode(readerInput(item.question, item.passages), this.options.maxInputTokens)
  }

  /** Where the passages begin in an encoded input: after the first question/passage separator. */
  private passagesStart(input: readonly number[]): number {
    const separator = this.inputSeparator
    for (let i = 1; i + separator.length <= input.length; i++) {
      if (separator.every((t, j) => input[i + j] === t)) return i + separator.length
    }
    return 0
  }

  async read(items: readonly ReadingQuestion[], signal?: AbortSignal): Promise<PredictedAnswer[][]> {
    // Known answers are forced as one output's prefix, so those questions are read jointly.
    const alone = items.map((item) => this.options.readEach > 0 && !item.knownAnswers?.length)
    const tokenizer = this.model.tokenizer
    const requests: { input: number[]; prefix: number[]; constraint?: TokenConstraint }[] = []
    const owner: number[] = []
    items.forEach((item, i) => {
      const prefix = (item.knownAnswers ?? []).flatMap((a) => [...tokenizer.encodePlain(a), this.separatorId])
      for (const passages of alone[i] ? item.passages.slice(0, this.options.readEach).map((p) => [p]) : [item.passages]) {
        const input = this.input({ question: item.question, passages })
        requests.push({ input, prefix, ...(this.options.constrainToPassages ? { constraint: this.spanConstraint(input) } : {}) })
        owner.push(i)
      }
    })
    const options = { ...this.model.generationDefaults, ...this.options.generation }
    const hypotheses = await generate(this.model, requests, options, signal ? { signal } : {})
    const readings = items.map((): AnswerText[][] => [])
    hypotheses.forEach((list, r) => readings[owner[r]!]!.push(this.pieces(list[0]!)))
    return items.map((item, i) => this.answers(alone[i] ? this.pool(readings[i]!) : readings[i]![0] ?? [], item))
  }

  /** Each answer's probability covers its tokens and the separator (or end) that closes it. */
  private pieces(hypothesis: Hypothesis): AnswerText[] {
    let at = 0
    return splitOnSeparator(hypothesis.generated, this.separatorId).map((piece) => {
      const closing = hypothesis.tokenLogProbs.slice(at, at + piece.length + 1)
      at += piece.length + 1
      return { text: this.model.tokenizer.decode(piece).trim(), probability: Math.exp(closing.reduce((a, b) => a + b, 0)) }
    })
  }

  /** Answers of passages read alone, best pooled score first, those below poolKeep of the best dropped. */
  private pool(readings: readonly AnswerText[][]): AnswerText[] {
    const scores = new Map<string, AnswerText>()
    for (const reading of readings) {
      const seen = new Set<string>()
      for (const { text, probability } of reading) {
        const key = normalizeAnswer(text)
        if (key.length === 0 || seen.has(key)) continue
        seen.add(key)
        const entry = scores.get(key)
        if (entry) entry.probability += probability
        else scores.set(key, { text, probability })
      }
    }
    const ranked = [...scores.values()].sort((a, b) => b.probability - a.probability)
    const best = ranked[0]?.probability ?? 0
    return ranked.filter((a) => a.probability >= this.options.poolKeep * best).map((a) => ({ text: a.text, probability: a.probability / readings.length }))
  }

  /** Distinct answers by normalised form, order kept, with their evidence among the passages. */
  private answers(generated: readonly AnswerText[], item: ReadingQuestion): PredictedAnswer[] {
    const known = (item.knownAnswers ?? []).map((text) => ({ text, probability: 1 }))
    const out: PredictedAnswer[] = []
    const seen = new Set<string>()
    for (const { text, probability } of [...known, ...generated]) {
      const key = normalizeAnswer(text)
      if (key.length === 0 || seen.has(key)) continue
      seen.add(key)
      const evidence = item.passages.filter((p) => hasAnswer(`${p.title} ${p.text}`, [text]))
      const surface = evidence.map((p) => surfaceForm(text, p.text) ?? surfaceForm(text, p.title)).find((f) => f !== undefined)
      out.push({ answer: surface ?? text, probability, evidence })
    }
    // A small reader often stops early and then goes on: "23 December <SEP> 23 December 2008".
    // An answer whose words lie inside another predicted answer is the same answer, cut short.
    const words = out.map((a) => normalizeAnswer(a.answer).split(' '))
    return out.filter((_, i) => i < known.length || !words.some((other, j) => j !== i && other.length > words[i]!.length && containsTokens(other, words[i]!)))
  }

  /**
   * Copying only: after the separator (or at the start) any token of the passages that begins a
   * word may begin an answer (not the question's: copying the question is no answer); inside an
   * answer, only a token that continues it somewhere in the passages, or the separator or end
   * once the answer is non-empty and ends a word there (so no "clima" for "climate").
   */
  private spanConstraint(input: readonly number[]): TokenConstraint {
    const tokenizer = this.model.tokenizer
    const closers = [this.separatorId, ...this.model.config.eosTokenIds]
    const passages = input.slice(this.passagesStart(input))
    const starts = [...new Set(passages)].filter((t) => !tokenizer.isSpecial(t) && !tokenizer.continuesWord(t))
    return (sequence) => {
      let begin = sequence.length
      while (begin > 1 && sequence[begin - 1] !== this.separatorId) begin--
      const partial = sequence.slice(begin)
      if (partial.length === 0) return starts
      const next = new Set<number>()
      outer: for (let i = 0; i + partial.length < passages.length; i++) {
        for (let j = 0; j < partial.length; j++) if (passages[i + j] !== partial[j]) continue outer
        const follower = passages[i + partial.length]!
        if (!tokenizer.continuesWord(follower)) for (const c of closers) next.add(c)
        if (!tokenizer.isSpecial(follower)) next.add(follower)
      }
      if (next.size === 0) for (const c of closers) next.add(c)
      return next
    }
  }
}
