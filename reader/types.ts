// What every answer reader (SpanSeqGen, the extractive reader and its committee) takes and gives,
// so that the readers and the pipeline's reader stage share one contract and none imports another.
import type { RetrievedPassage } from '../core/retriever.js'
import type { AnswerWindow } from '../core/stages.js'

export interface ReadingQuestion {
  question: string
  passages: readonly RetrievedPassage[]
  /** Answers already known, forced as the start of the output (co-training's prefix). */
  knownAnswers?: readonly string[]
}

export interface PredictedAnswer {
  /** The answer as the evidence writes it (the model's own lower-cased text when no passage has it). */
  answer: string
  /** The model's probability of this answer's tokens and the separator or end that closes it. */
  probability: number
  /** Passages that contain the answer, in reading order. */
  evidence: RetrievedPassage[]
  /** What the extractive reader scored of it besides the probability (its candidateFeatures), for the verifier. */
  features?: Record<string, number>
  /** Where the extractive reader found it: the words around its best span in that passage, what the answer verifier reads. */
  window?: AnswerWindow
}
