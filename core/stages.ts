// The contracts between the pipeline's stages (retriever → reranker → reader → question
// disambiguation), here so that the libraries implement them without importing the app.
import { ERR_TIMEOUT } from './errors.js'
import type { QueryVector, RetrievedPassage } from './retriever.js'

export interface StageTimings {
  retrievalMs: number
  rerankMs?: number
  readMs?: number
  /** The candidate-support stage's (reader/candidate-support.ts), when it runs. */
  supportMs?: number
  decideMs?: number
  disambiguateMs?: number
  totalMs: number
}

/** What a request asks of the pipeline: its question, passages to retrieve and to read. */
export interface Asked { question: string; retrieve: number; read: number }
/** query: the question's vector, when the retriever embedded one (a later stage reads it instead of embedding again). */
export interface Retrieved extends Asked { passages: RetrievedPassage[]; query?: QueryVector; timings: StageTimings }
/** reranked: the `read` passages the reader reads, in their reading order. */
export interface Reranked extends Retrieved { reranked: RetrievedPassage[] }
/** readerProbability: the reader's own probability, kept when a calibrator replaced it as confidence. */
/** features: the reader's scores of the answer beside its probability, when it gives them (the extractive reader's candidateFeatures). */
/** A candidate's words in context: its passage's title and the words around its best span (what the answer verifier reads). */
export interface AnswerWindow { title: string; text: string }
export interface ReadAnswer { answer: string; confidence: number; readerProbability?: number; evidence: RetrievedPassage[]; features?: Record<string, number>; window?: AnswerWindow }
/** ambiguity: P(more than one answer), when a calibrated detector decided the set (reader/answer-set-decider). */
export interface Read extends Reranked { answers: ReadAnswer[]; ambiguity?: number }
/**
 * `rewritten: false`: the question is the prompt as asked (one answer, or no rewrite survived the
 * checks, or `rewriteStopped`). `rewriteStopped`: question disambiguation stopped at the request's
 * deadline before this answer's rewrite was written (absent otherwise).
 */
export interface Disambiguated extends Read { answers: (ReadAnswer & { question: string; rewritten: boolean; rewriteStopped?: true })[]; ambiguous: boolean }

/** Whether a detector's P(more than one answer) makes the question ambiguous. */
export function isAmbiguous(ambiguity: number): boolean {
  return ambiguity > 0.5
}

/** Whether the set is ambiguous: by the detector's ambiguity when a decider gave one; without a
 * detector it can only mean that the reader returned two answers. */
export function ambiguousOf(read: Read): boolean {
  return read.ambiguity !== undefined ? isAmbiguous(read.ambiguity) : read.answers.length > 1
}

/** The set without question disambiguation: every answer keeps the prompt as its question. */
export function asAsked(read: Read): Disambiguated {
  return { ...read, answers: read.answers.map((a) => ({ ...a, question: read.question, rewritten: false })), ambiguous: ambiguousOf(read) }
}

/**
 * A stage: the previous stage's output in, the same plus one thing out. `signal` aborts when the
 * request's client has gone, or at its deadline (stoppedAtDeadline): a stage stops then, by
 * throwing, or, one whose work can be cut (question disambiguation), by answering at once with
 * what it has.
 */
export interface Stage<In, Out> { readonly name: string; run(input: In, signal?: AbortSignal): Promise<Out> }

/** Whether `signal` aborted at the request's deadline (the server aborts it with
 * AMBIGQA_ERR_TIMEOUT), rather than because its client went away. */
export function stoppedAtDeadline(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && (signal.reason as { code?: unknown } | undefined)?.code === ERR_TIMEOUT.code
}
