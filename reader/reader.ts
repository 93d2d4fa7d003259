// The reading stage of the pipeline: the answer set from the extractive reader (or its
// co-trained committee) or SpanSeqGen, its model loaded once and shared by all requests through a
// batch queue. Rewriting the questions is the next stage's job (question-disambiguation.ts).
import type { Device, ReaderKind } from '../core/kinds.js'
import type { Logger } from '../core/log.js'
import type { Read, ReadAnswer, Reranked, Stage } from '../core/stages.js'
import { BatchQueue } from './batch-queue.js'
import { ExtractiveCommittee, isCommittee } from './extractive-committee.js'
import { extractiveSettings, ExtractiveReader, type ExtractiveSettings } from './extractive-reader.js'
import { isLmFolder, LlamaLm } from './generation/llama-lm.js'
import { Seq2SeqModel } from './generation/seq2seq-model.js'
import { LmSpanReader } from './lm-span-reader.js'
import { SpanSeqGen } from './span-seq-gen.js'
import type { PredictedAnswer, ReadingQuestion } from './types.js'

/** What the reader reads of the `reader.*` settings (core/config.ts documents each): its own
 * type, so this library does not depend on the app's configuration. The extractive reader's
 * (ExtractiveSettings) are declared once, beside their options. */
export interface ReaderSettings extends ExtractiveSettings {
  kind: ReaderKind
  spanseqgen: string
  extractive: string
  precision: 'fp32' | 'int8'
  device: Device
  threads: number
  /** llama.cpp's threads for a Gemma decoder (core/config.ts says why 1). */
  lmThreads: number
  maxBatch: number
  maxInputTokens: number
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

export class Reader implements Stage<Reranked, Read> {
  readonly name = 'reader'
  private readonly queue: BatchQueue<ReadingQuestion, PredictedAnswer[]>

  private constructor(readonly answerReader: SpanSeqGen | LmSpanReader | ExtractiveReader | ExtractiveCommittee, private readonly owned: { close(): Promise<void> } | undefined, maxBatch: number) {
    this.queue = new BatchQueue((items, signal) => answerReader.read(items, signal), maxBatch)
  }

  /** `shared`: a seq2seq model already loaded (question disambiguation's) that SpanSeqGen reads
   * with when it is its folder; it stays its owner's to close. */
  static async open(settings: ReaderSettings, logger?: Logger, shared?: { folder: string; model: Seq2SeqModel }): Promise<Reader> {
    const device = { precision: settings.precision, device: settings.device, threads: settings.threads, ...(logger ? { logger } : {}) }
    if (settings.kind === 'extractive') {
      const options = extractiveSettings(settings)
      // A committee folder (committee.json) is the co-trained ensemble: its members vote with their spans.
      const extractive = isCommittee(settings.extractive)
        ? await ExtractiveCommittee.load(settings.extractive, device, options)
        : await ExtractiveReader.load(settings.extractive, device, options)
      return new Reader(extractive, extractive, settings.maxBatch)
    }
    if (isLmFolder(settings.spanseqgen)) {
      // SpanSeqGen on the pretrained decoder (an lm.json folder trained for `span`; its lm.json
      // says how it is served).
      const lm = new LmSpanReader(await LlamaLm.load(settings.spanseqgen, { threads: settings.lmThreads, device: settings.device, ...(logger ? { logger } : {}) }), { constrainToPassages: settings.constrainToPassages })
      return new Reader(lm, lm, settings.maxBatch)
    }
    const own = shared?.folder === settings.spanseqgen ? undefined : await Seq2SeqModel.load(settings.spanseqgen, device)
    const generation = settings.numBeams > 0 ? { numBeams: settings.numBeams } : {}
    const spanSeqGen = new SpanSeqGen(own ?? shared!.model, { maxInputTokens: settings.maxInputTokens, constrainToPassages: settings.constrainToPassages, generation, readEach: settings.readEach, poolKeep: settings.poolKeep })
    return new Reader(spanSeqGen, own, settings.maxBatch)
  }

  async run(input: Reranked, signal?: AbortSignal): Promise<Read> {
    const answers = await this.queue.submit({ question: input.question, passages: input.reranked }, signal)
    return { ...input, answers: readAnswers(answers) }
  }

  async close(): Promise<void> {
    await this.owned?.close()
  }
}
