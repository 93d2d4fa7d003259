// The reader of the pipeline: the answer set from SpanSeqGen or the extractive reader, and
// question disambiguation for one rewrite per answer, each model loaded once and shared by all
// requests through a batch queue.
import type { Device, ReaderKind } from '../core/kinds.js'
import type { Logger } from '../core/log.js'
import { ambiguousOf, asAsked, type Disambiguated, type Read, type ReadAnswer, type Reranked, type Stage } from '../core/stages.js'
import { BatchQueue } from './batch-queue.js'
import { ExtractiveCommittee, isCommittee } from './extractive-committee.js'
import { extractiveSettings, ExtractiveReader, type ExtractiveSettings } from './extractive-reader.js'
import { QuestionDisambiguator, type DisambiguationItem, type Disambiguator, type Rewrite } from './question-disambiguator.js'
import { LmDisambiguator } from './lm-disambiguator.js'
import { isLmFolder, LlamaLm } from './generation/llama-lm.js'
import { Seq2SeqModel } from './generation/seq2seq-model.js'
import { SpanSeqGen } from './span-seq-gen.js'
import type { PredictedAnswer, ReadingQuestion } from './types.js'

/** What the reader reads of the `reader.*` settings (core/config.ts documents each): its own
 * type, so this library does not depend on the app's configuration. The extractive reader's
 * (ExtractiveSettings) are declared once, beside their options. */
export interface ReaderSettings extends ExtractiveSettings {
  kind: ReaderKind
  spanseqgen: string
  extractive: string
  qd: string
  precision: 'fp32' | 'int8'
  device: Device
  threads: number
  maxBatch: number
  maxInputTokens: number
  qdMaxInputTokens: number
  qdCandidates: number
  qdEvidenceVocabulary: boolean
  numBeams: number
  constrainToPassages: boolean
  readEach: number
  poolKeep: number
}

/** A reader's answers as the pipeline carries them: the probability as read is the confidence until
 * a decider calibrates it; the extractive reader's features go along for the verifier. */
export function readAnswers(answers: readonly PredictedAnswer[]): ReadAnswer[] {
  return answers.map((a) => ({ answer: a.answer, confidence: a.probability, evidence: a.evidence, ...(a.features ? { features: a.features } : {}), ...(a.window ? { window: a.window } : {}) }))
}

export class Reader {
  private readonly answerQueue: BatchQueue<ReadingQuestion, PredictedAnswer[]>
  private readonly questionQueue: BatchQueue<DisambiguationItem, Rewrite[]>

  private constructor(readonly answerReader: SpanSeqGen | ExtractiveReader | ExtractiveCommittee, readonly disambiguator: Disambiguator, private readonly models: { close(): Promise<void> }[], maxBatch: number) {
    this.answerQueue = new BatchQueue((items) => answerReader.read(items), maxBatch)
    this.questionQueue = new BatchQueue((items) => disambiguator.disambiguate(items), maxBatch)
  }

  static async open(settings: ReaderSettings, logger?: Logger): Promise<Reader> {
    const device = { precision: settings.precision, device: settings.device, threads: settings.threads, ...(logger ? { logger } : {}) }
    const generation = settings.numBeams > 0 ? { numBeams: settings.numBeams } : {}
    // A folder with lm.json is the pretrained decoder (Gemma 3 + LoRA, llama.cpp); else a seq2seq export.
    const lm = isLmFolder(settings.qd) ? await LlamaLm.load(settings.qd, { threads: settings.threads, ...(logger ? { logger } : {}) }) : undefined
    const seq2seq = lm ? undefined : await Seq2SeqModel.load(settings.qd, device)
    const questionModel = lm ?? seq2seq!
    try {
      // Small QD models loop ("do do do"); a repeated word pair is refused by the checks, so
      // decoding repeats no token pair (on the held-out rewrites: EDIT-F1 6.2 against 5.3 with 3).
      const disambiguator: Disambiguator = seq2seq
        ? new QuestionDisambiguator(seq2seq, { maxInputTokens: settings.qdMaxInputTokens, candidates: settings.qdCandidates, evidenceVocabulary: settings.qdEvidenceVocabulary, generation: { noRepeatNgramSize: 2, ...generation } })
        : new LmDisambiguator(lm!)
      if (settings.kind === 'extractive') {
        const options = extractiveSettings(settings)
        // A committee folder (committee.json) is the co-trained ensemble: its members vote with their spans.
        const extractive = isCommittee(settings.extractive)
          ? await ExtractiveCommittee.load(settings.extractive, device, options)
          : await ExtractiveReader.load(settings.extractive, device, options)
        return new Reader(extractive, disambiguator, [extractive, questionModel], settings.maxBatch)
      }
      const answerModel = seq2seq && settings.qd === settings.spanseqgen ? seq2seq : await Seq2SeqModel.load(settings.spanseqgen, device)
      const spanSeqGen = new SpanSeqGen(answerModel, { maxInputTokens: settings.maxInputTokens, constrainToPassages: settings.constrainToPassages, generation, readEach: settings.readEach, poolKeep: settings.poolKeep })
      return new Reader(spanSeqGen, disambiguator, [...new Set([answerModel, questionModel])], settings.maxBatch)
    } catch (error) {
      await questionModel.close()
      throw error
    }
  }

  readonly readStage: Stage<Reranked, Read> = {
    name: 'reader',
    run: async (input, signal) => {
      const answers = await this.answerQueue.submit({ question: input.question, passages: input.reranked }, signal)
      return { ...input, answers: readAnswers(answers) }
    },
  }

  readonly disambiguateStage: Stage<Read, Disambiguated> = {
    name: 'qd',
    run: async (input, signal) => {
      // One answer keeps the prompt: it need not wait behind a batch of other questions' rewrites.
      if (input.answers.length < 2) return asAsked(input)
      const rewrites = await this.questionQueue.submit({ question: input.question, answers: input.answers.map((a) => a.answer), passages: input.reranked, evidence: input.answers.map((a) => a.evidence) }, signal)
      return { ...input, answers: input.answers.map((a, i) => ({ ...a, question: rewrites[i]!.question, rewritten: rewrites[i]!.rewritten })), ambiguous: ambiguousOf(input) }
    },
  }

  async close(): Promise<void> {
    await Promise.all(this.models.map((m) => m.close()))
  }
}
