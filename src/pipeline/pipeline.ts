// The answering pipeline: retriever → reranker → reader → question disambiguation. Each stage
// takes the previous stage's output and adds one thing, and records its own time.
import type { Retriever, RetrievedPassage } from '../../retriever/retriever.js'
import { ERR_READER_UNAVAILABLE } from '../errors.js'

export interface StageTimings {
  retrievalMs: number
  rerankMs?: number
  readMs?: number
  disambiguateMs?: number
  totalMs: number
}

export interface Retrieved { question: string; passages: RetrievedPassage[]; timings: StageTimings }
export interface Reranked extends Retrieved { reranked: RetrievedPassage[] }
export interface ReadAnswer { answer: string; confidence: number; evidence: RetrievedPassage[] }
export interface Read extends Reranked { answers: ReadAnswer[] }
export interface Disambiguated extends Read { answers: (ReadAnswer & { question: string })[]; ambiguous: boolean }

/** A stage: the previous stage's output in, the same plus one thing out. */
export interface Stage<In, Out> { readonly name: string; run(input: In, signal?: AbortSignal): Promise<Out> }

export interface AskOptions { retrieve: number; read: number }

/** Reorders the retrieved passages and keeps the `read` best for the reader. */
export interface Reranker {
  readonly name: string
  rerank(input: Retrieved, read: number, signal?: AbortSignal): Promise<Reranked>
}

export interface PipelineStages {
  retriever: Retriever
  reranker?: Reranker
  reader?: Stage<Reranked, Read>
  disambiguator?: Stage<Read, Disambiguated>
  /** Why the reader is missing, for the error `ask` gives. */
  readerProblem?: string
  /** Releases what the stages hold (model sessions), after the retriever. */
  close?: () => Promise<void>
}

/** Identity reranker: keeps the retriever's order, cut to `read` passages. */
export const passThroughReranker: Reranker = { name: 'none', rerank: async (input, read) => ({ ...input, reranked: input.passages.slice(0, read) }) }

export class Pipeline {
  constructor(readonly stages: PipelineStages) {}

  get readerAvailable(): boolean {
    return this.stages.reader !== undefined && this.stages.disambiguator !== undefined
  }

  async retrieve(question: string, k: number): Promise<Retrieved> {
    const start = performance.now()
    const passages = await this.stages.retriever.search(question, k)
    const retrievalMs = performance.now() - start
    return { question, passages, timings: { retrievalMs, totalMs: retrievalMs } }
  }

  async ask(question: string, options: AskOptions, signal?: AbortSignal): Promise<Disambiguated> {
    const { reader, disambiguator } = this.stages
    if (!reader || !disambiguator) throw ERR_READER_UNAVAILABLE('ask', this.stages.readerProblem ?? 'no reader was configured')
    const start = performance.now()
    const retrieved = await this.retrieve(question, options.retrieve)
    const reranker = this.stages.reranker ?? passThroughReranker
    let t = performance.now()
    const reranked = await reranker.rerank(retrieved, options.read, signal)
    reranked.timings.rerankMs = performance.now() - t
    t = performance.now()
    const read = await reader.run(reranked, signal)
    read.timings.readMs = performance.now() - t
    t = performance.now()
    const result = await disambiguator.run(read, signal)
    result.timings.disambiguateMs = performance.now() - t
    result.timings.totalMs = performance.now() - start
    return result
  }

  async close(): Promise<void> {
    await this.stages.retriever.close()
    await this.stages.close?.()
  }
}
