// Question disambiguation as a stage of its own, after the answer set is decided: one rewrite per
// answer of a set of two or more, from the QD model the settings name (a folder with lm.json is the
// pretrained decoder run by llama.cpp; any other a seq2seq export), shared by all requests through
// a batch queue. A set of one answer keeps the prompt as its question. At the request's deadline
// it answers at once with the rewrites written by then, the other answers keeping the prompt,
// marked `rewriteStopped`, and the decoder stops at its next step.
import type { Device } from '../core/kinds.js'
import type { Logger } from '../core/log.js'
import { ambiguousOf, asAsked, stoppedAtDeadline, type Disambiguated, type Read, type Stage } from '../core/stages.js'
import { BatchQueue } from './batch-queue.js'
import { isLmFolder, LlamaLm } from './generation/llama-lm.js'
import { Seq2SeqModel } from './generation/seq2seq-model.js'
import { LmDisambiguator } from './lm-disambiguator.js'
import { QuestionDisambiguator, type DisambiguationItem, type Disambiguator, type ItemRequest, type Rewrite } from './question-disambiguator.js'

/** What opening the stage reads of the `reader.*` settings (core/config.ts documents each). */
export interface DisambiguationSettings {
  qd: string
  precision: 'fp32' | 'int8'
  device: Device
  threads: number
  /** llama.cpp's threads for a Gemma decoder (core/config.ts says why 1). */
  lmThreads: number
  maxBatch: number
  qdMaxInputTokens: number
  qdCandidates: number
  qdLookahead: number
  qdEvidenceVocabulary: boolean
  numBeams: number
}

export class QuestionDisambiguation implements Stage<Read, Disambiguated> {
  readonly name = 'qd'
  private readonly queue: BatchQueue<{ item: DisambiguationItem; request: ItemRequest }, Rewrite[]>

  private constructor(readonly disambiguator: Disambiguator, private readonly model: { close(): Promise<void> },
    /** The seq2seq model it runs on, when it is one: SpanSeqGen reads with it when its folder is the same. */
    readonly seq2seq: Seq2SeqModel | undefined, maxBatch: number) {
    this.queue = new BatchQueue((items, signal) => disambiguator.disambiguate(items.map((i) => i.item), signal, items.map((i) => i.request)), maxBatch)
  }

  static async open(settings: DisambiguationSettings, logger?: Logger): Promise<QuestionDisambiguation> {
    if (isLmFolder(settings.qd)) {
      const lm = await LlamaLm.load(settings.qd, { threads: settings.lmThreads, lookahead: settings.qdLookahead, device: settings.device, ...(logger ? { logger } : {}) })
      return new QuestionDisambiguation(new LmDisambiguator(lm), lm, undefined, settings.maxBatch)
    }
    const seq2seq = await Seq2SeqModel.load(settings.qd, { precision: settings.precision, device: settings.device, threads: settings.threads, ...(logger ? { logger } : {}) })
    // Small QD models loop ("do do do"); a repeated word pair is refused by the checks, so
    // decoding repeats no token pair (on the held-out rewrites: EDIT-F1 6.2 against 5.3 with 3).
    const generation = { noRepeatNgramSize: 2, ...(settings.numBeams > 0 ? { numBeams: settings.numBeams } : {}) }
    const disambiguator = new QuestionDisambiguator(seq2seq, { maxInputTokens: settings.qdMaxInputTokens, candidates: settings.qdCandidates, evidenceVocabulary: settings.qdEvidenceVocabulary, generation })
    return new QuestionDisambiguation(disambiguator, seq2seq, seq2seq, settings.maxBatch)
  }

  async run(input: Read, signal?: AbortSignal): Promise<Disambiguated> {
    // The one place that decides it: fewer than two answers keep the prompt (nothing to tell apart),
    // and need not wait behind a batch of other questions' rewrites.
    if (input.answers.length < 2) return asAsked(input)
    const item = { question: input.question, answers: input.answers.map((a) => a.answer), passages: input.reranked, evidence: input.answers.map((a) => a.evidence) }
    let written: readonly Rewrite[] = []
    try {
      // The request's signal both takes the item out of the queue (or answers it at once while its
      // batch runs) and stops the decoder's work on it at its next step.
      const rewrites = await this.queue.submit({ item, request: { ...(signal ? { signal } : {}), written: (so) => { written = so } } }, signal)
      return withRewrites(input, rewrites)
    } catch (error) {
      // At the request's deadline, the answers are ready and only rewrites are missing: answered at
      // once with those written by then, the others with the prompt and marked stopped, rather than
      // no answer at all (a client that has gone gets the error; nobody reads it).
      if (!stoppedAtDeadline(signal)) throw error
      return withRewrites(input, written)
    }
  }

  async close(): Promise<void> {
    await this.model.close()
  }
}

/** The set with each answer's rewrite; an answer past the rewrites given (question disambiguation
 * stopped at the deadline before it) keeps the prompt, marked `rewriteStopped`. */
function withRewrites(input: Read, rewrites: readonly Rewrite[]): Disambiguated {
  return {
    ...input,
    answers: input.answers.map((a, i) => {
      const r = rewrites[i]
      return r ? { ...a, question: r.question, rewritten: r.rewritten } : { ...a, question: input.question, rewritten: false, rewriteStopped: true as const }
    }),
    ambiguous: ambiguousOf(input),
  }
}
