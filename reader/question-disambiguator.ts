// Question disambiguation (Min et al. 2020): for each answer of an ambiguous question, a minimal
// rewrite of the question that has that answer only. Input as the paper's QD model reads it, and
// as train/ambigqa_train/data.py writes it: prompt question [SEP] target answer [SEP] the other
// answers joined by the separator [SEP] passages (the answer's own evidence first, since a small
// model reads only the first maxInputTokens). Beam search proposes `candidates` rewrites per
// answer; the best one without a fault (rewrite-check.ts) is returned, and when none is left the
// prompt question is returned marked as not rewritten, instead of invented words.
import type { RetrievedPassage } from '../core/retriever.js'
import { generate, type GenerateRequest } from './generation/generate.js'
import type { GenerationOptions } from './generation/generation-options.js'
import { qdInput } from './reader-input.js'
import { FUNCTION_WORDS, rewriteFaults, supportedWords, type RewriteFault } from './rewrite-check.js'
import type { TokenConstraint } from './generation/logits-processors.js'
import type { Seq2SeqModel } from './generation/seq2seq-model.js'

export interface DisambiguatorOptions {
  maxInputTokens: number
  separator: string
  generation: Partial<GenerationOptions>
  /** Rewrites proposed per answer (beam width and returned sequences); 1 is greedy. */
  candidates: number
  /** Tokens a rewrite may have beyond the prompt's (longer ones are not minimal anyway). */
  maxInserted: number
  /** Decoding may only use the word pieces of the prompt, the answers, the evidence and function
   * words, so that a proposal is not lost to the word-from-nowhere check for one invented word. */
  evidenceVocabulary: boolean
}

export const defaultDisambiguatorOptions: DisambiguatorOptions = { maxInputTokens: 384, separator: '<SEP>', generation: {}, candidates: 1, maxInserted: 12, evidenceVocabulary: false }

export interface DisambiguationItem {
  question: string
  answers: readonly string[]
  /** The passages read for the question. */
  passages: readonly RetrievedPassage[]
  /** Each answer's own evidence (same order as answers), put first in its input. */
  evidence?: readonly (readonly RetrievedPassage[])[]
}

export interface Rewrite {
  question: string
  /** false: the prompt question as it was (one answer, or no proposal without a fault). */
  rewritten: boolean
  /** The model's best proposal before the checks ('' when nothing was generated). */
  proposal: string
}

/**
 * What one item's request gives the disambiguator beside the item, when it has one: its own
 * signal, which stops that item's rewriting and no other's (the batch's signal stops them all),
 * and `written`, told the item's rewrites so far each time one more is written, checked as in the
 * whole set (a disambiguator that writes them one at a time, as LmDisambiguator does; a request
 * stopped at its deadline answers with them).
 */
export interface ItemRequest {
  signal?: AbortSignal
  written?: (rewrites: readonly Rewrite[]) => void
}

/** What the reader's disambiguation stage runs: the seq2seq model here, or a decoder-only LM
 * (lm-disambiguator.ts). Both return one checked rewrite per answer. */
export interface Disambiguator {
  disambiguate(items: readonly DisambiguationItem[], signal?: AbortSignal, requests?: readonly (ItemRequest | undefined)[]): Promise<Rewrite[][]>
}

/** The prompt for every answer: what an item gets whose rewriting did not run. */
export const unrewritten = (item: DisambiguationItem): Rewrite[] => item.answers.map(() => ({ question: item.question, rewritten: false, proposal: '' }))

/**
 * The one place a batch's items are rewritten in turn: each with its own request's signal beside
 * the batch's, so that an item whose request has stopped (its deadline, its client gone) is
 * skipped, or stopped at its decoder's next step, and the batch goes on with the next item. Such an
 * item gets the prompt for every answer: its request was already answered, by the batch queue,
 * without waiting for this.
 */
export async function rewriteEach(items: readonly DisambiguationItem[], signal: AbortSignal | undefined, requests: readonly (ItemRequest | undefined)[] | undefined,
  rewrite: (item: DisambiguationItem, signal: AbortSignal | undefined, written: ItemRequest['written']) => Promise<Rewrite[]>): Promise<Rewrite[][]> {
  const out: Rewrite[][] = []
  for (const [i, item] of items.entries()) {
    signal?.throwIfAborted()
    const own = requests?.[i]
    if (own?.signal?.aborted) {
      out.push(unrewritten(item))
      continue
    }
    const either = own?.signal ? (signal ? AbortSignal.any([signal, own.signal]) : own.signal) : signal
    try {
      out.push(await rewrite(item, either, own?.written))
    } catch (error) {
      if (signal?.aborted || !own?.signal?.aborted) throw error
      out.push(unrewritten(item))
    }
  }
  return out
}

/**
 * The one place a proposal becomes a returned rewrite: per answer, the first of its proposals
 * (best first) without a fault (rewrite-check.ts), else the prompt marked as not rewritten.
 */
export function checkedRewrites(item: DisambiguationItem, proposals: readonly (readonly string[])[], ignore: readonly RewriteFault[] = []): Rewrite[] {
  const supported = supportedWords(sourceTexts(item))
  const chosen: string[] = []
  return proposals.map((list) => {
    const texts = list.filter((t) => t.length > 0)
    const pick = texts.find((t) => rewriteFaults(item.question, t, supported, chosen).every((f) => ignore.includes(f)))
    if (pick === undefined) return { question: item.question, rewritten: false, proposal: texts[0] ?? '' }
    chosen.push(pick)
    return { question: pick, rewritten: true, proposal: texts[0]! }
  })
}

export class QuestionDisambiguator implements Disambiguator {
  readonly options: DisambiguatorOptions

  constructor(readonly model: Seq2SeqModel, options: Partial<DisambiguatorOptions> = {}) {
    this.options = { ...defaultDisambiguatorOptions, ...options }
  }

  input(question: string, answer: string, others: readonly string[], passages: readonly RetrievedPassage[]): number[] {
    const text = qdInput(question, answer, others, passages, this.options.separator)
    return this.model.tokenizer.encode(text, this.options.maxInputTokens)
  }

  /** The word pieces of everything a rewrite may draw on, and EOS. */
  vocabulary(item: DisambiguationItem): TokenConstraint {
    const allowed = new Set(this.model.config.eosTokenIds)
    for (const text of [...sourceTexts(item), FUNCTION_WORDS.join(' ')]) for (const id of this.model.tokenizer.encodePlain(text)) allowed.add(id)
    return () => allowed
  }

  /**
   * One rewrite per answer; a single answer keeps the prompt question as it is. Each question is
   * generated on its own (its answers together): the int8 encoder and decoder quantise each
   * batch's activations with one scale, so a question batched with other questions' answers got
   * rewrites that changed with the load (BENCHMARKS.md, "Answer sets, fifth session").
   */
  async disambiguate(items: readonly DisambiguationItem[], signal?: AbortSignal, requests?: readonly (ItemRequest | undefined)[]): Promise<Rewrite[][]> {
    return rewriteEach(items, signal, requests, (item, either) => this.rewrites(item, either))
  }

  private async rewrites(item: DisambiguationItem, signal?: AbortSignal): Promise<Rewrite[]> {
    const base = { ...this.model.generationDefaults, ...this.options.generation }
    const vocabulary = this.options.evidenceVocabulary ? this.vocabulary(item) : undefined
    // Room for the prompt and maxInserted more tokens (the model's default, 20, cut rewrites
    // short; longer rewrites are not minimal anyway).
    const maxLength = Math.max(base.maxLength, this.model.tokenizer.encodePlain(item.question).length + this.options.maxInserted + 2)
    const requests: GenerateRequest[] = item.answers.map((answer, j) => ({
      input: this.input(item.question, answer, item.answers.filter((_, k) => k !== j), passagesFor(item, j)), maxLength, ...(vocabulary ? { constraint: vocabulary } : {}),
    }))
    const n = Math.max(1, this.options.candidates)
    const hypotheses = await generate(this.model, requests, { ...base, numBeams: n, numReturnSequences: n }, signal ? { signal } : {})
    return checkedRewrites(item, hypotheses.map((list) => list.map((h) => tidy(this.model.tokenizer.decode(h.generated)))))
  }
}

/** transformers' clean_up_tokenization: a question, unlike an answer span, need not keep the word
 * pieces' spacing ("it ' s all over ?" → "it's all over?"). */
function tidy(text: string): string {
  return text.replace(/ ([.?!,])/g, '$1').replace(/ ' /g, "'").replace(/ n't\b/g, "n't").replace(/ '(s|m|ve|re)\b/g, "'$1").trim()
}

/** An answer's own evidence first, then the other passages read. */
export function passagesFor(item: DisambiguationItem, answer: number): RetrievedPassage[] {
  const own = item.evidence?.[answer] ?? []
  const ids = new Set(own.map((p) => p.id))
  return [...own, ...item.passages.filter((p) => !ids.has(p.id))]
}

/** What a rewrite may draw on: the prompt, the answers, and every passage read or cited. */
export function sourceTexts(item: DisambiguationItem): string[] {
  const seen = new Map<string, RetrievedPassage>()
  for (const p of [...item.passages, ...(item.evidence ?? []).flat()]) seen.set(p.id, p)
  return [item.question, ...item.answers, ...[...seen.values()].flatMap((p) => [p.title, p.text])]
}
