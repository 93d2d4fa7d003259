// The reader of the pipeline: SpanSeqGen for the answer set and question disambiguation for
// one rewrite per answer, each model loaded once and shared by all requests through a batch queue.
import type { Config } from '../src/config.js'
import type { Logger } from '../src/log.js'
import type { Disambiguated, Read, Reranked, Stage } from '../src/pipeline/pipeline.js'
import { BatchQueue } from './batch-queue.js'
import { QuestionDisambiguator, type DisambiguationItem } from './question-disambiguator.js'
import { Seq2SeqModel } from './seq2seq-model.js'
import { SpanSeqGen, type PredictedAnswer, type ReadingQuestion } from './span-seq-gen.js'

/** The `reader.*` settings (src/config.ts documents each). */
export type ReaderSettings = Config['reader']

export class Reader {
  private readonly answerQueue: BatchQueue<ReadingQuestion, PredictedAnswer[]>
  private readonly questionQueue: BatchQueue<DisambiguationItem, string[]>

  private constructor(readonly spanSeqGen: SpanSeqGen, readonly disambiguator: QuestionDisambiguator, private readonly models: Seq2SeqModel[], maxBatch: number) {
    this.answerQueue = new BatchQueue((items) => spanSeqGen.read(items), maxBatch)
    this.questionQueue = new BatchQueue((items) => disambiguator.disambiguate(items), maxBatch)
  }

  static async open(settings: ReaderSettings, logger?: Logger): Promise<Reader> {
    const load = (dir: string) => Seq2SeqModel.load(dir, { precision: settings.precision, device: settings.device, threads: settings.threads, ...(logger ? { logger } : {}) })
    const answerModel = await load(settings.spanseqgen)
    const questionModel = settings.qd === settings.spanseqgen ? answerModel : await load(settings.qd)
    const generation = settings.numBeams > 0 ? { numBeams: settings.numBeams } : {}
    const spanSeqGen = new SpanSeqGen(answerModel, { maxInputTokens: settings.maxInputTokens, constrainToPassages: settings.constrainToPassages, generation, readEach: settings.readEach, poolKeep: settings.poolKeep })
    // Small QD models loop ("do do do"); a repeated trigram is never a minimal rewrite.
    const disambiguator = new QuestionDisambiguator(questionModel, { maxInputTokens: settings.maxInputTokens, generation: { noRepeatNgramSize: 3, ...generation } })
    return new Reader(spanSeqGen, disambiguator, [...new Set([answerModel, questionModel])], settings.maxBatch)
  }

  readonly readStage: Stage<Reranked, Read> = {
    name: 'spanseqgen',
    run: async (input, signal) => {
      const answers = await this.answerQueue.submit({ question: input.question, passages: input.reranked }, signal)
      return { ...input, answers: answers.map((a) => ({ answer: a.answer, confidence: a.probability, evidence: a.evidence })) }
    },
  }

  readonly disambiguateStage: Stage<Read, Disambiguated> = {
    name: 'qd',
    run: async (input, signal) => {
      const questions = await this.questionQueue.submit({ question: input.question, answers: input.answers.map((a) => a.answer), passages: input.reranked }, signal)
      return { ...input, answers: input.answers.map((a, i) => ({ ...a, question: questions[i]! })), ambiguous: input.answers.length > 1 }
    },
  }

  async close(): Promise<void> {
    await Promise.all(this.models.map((m) => m.close()))
  }
}
