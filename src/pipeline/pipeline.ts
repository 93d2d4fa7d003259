// The answering pipeline: retrieval → reranking → reading → the answer-set decider → question
// disambiguation, each a Stage with run(): it takes the previous stage's output and adds one thing
// (the question's vector, when the retriever embedded one, travels in the retrieval result). The
// pipeline times each stage on its own.
import type { Retriever } from '../../core/retriever.js'
import { asAsked, type Disambiguated, type Read, type Reranked, type Retrieved, type Stage, type StageTimings } from '../../core/stages.js'
import { Retrieval, RetrievalOrder } from '../../retriever/retrieval-stage.js'
import { defaults, type Config } from '../../core/config.js'
import { AmbigqaError, ERR_READER_UNAVAILABLE, ERR_RETRIEVER_UNAVAILABLE } from '../../core/errors.js'

/** A retriever by its configuration name (bm25-sqlite, bm25-es, dense, dense-es, hybrid). */
export type RetrieverKind = Config['retriever']

/**
 * `retriever`: another kind than the configured one, for this request (see Pipeline.retrieverFor).
 * `disambiguate` (default true): false skips question disambiguation, the costliest stage after
 * reading, for a caller that reads no rewrite; every answer then keeps the prompt as its question
 * with `rewritten: false`.
 */
export interface AskOptions { retrieve: number; read: number; retriever?: RetrieverKind; disambiguate?: boolean }

export interface PipelineStages {
  retriever: Retriever
  /** The configured retriever's kind: a request that names it gets `retriever` itself. */
  retrieverKind?: RetrieverKind
  /** Opens a retriever of another kind, from the same configuration, when a request names one;
   * without it only the configured retriever is served. */
  openRetriever?: (kind: RetrieverKind) => Promise<Retriever>
  /** Reorders the retrieved passages and keeps the `read` best (without one: the retriever's order). */
  reranker?: Stage<Retrieved, Reranked>
  reader?: Stage<Reranked, Read>
  /** Decides which of the reader's candidates make the set (reader/answer-set-decider.ts): given
   * whenever a reader is. */
  decider?: Stage<Read, Read>
  /** Adds what pretrained decoders know of each candidate to its features, between the reader and
   * the decider (reader/candidate-support.ts; config support, off by default). */
  support?: Stage<Read, Read>
  disambiguator?: Stage<Read, Disambiguated>
  /** Passages read when a request does not say (config reader.read; its default when not given). */
  read?: number
  /** Passages retrieved when a request does not say (config reader.retrieve; its default when not given). */
  retrieve?: number
  /** Why the reader is missing, for the error `ask` gives. */
  readerProblem?: string
  /** Releases what the stages hold (model sessions), after the retriever. */
  close?: () => Promise<void>
}

export class Pipeline {
  /** Retrievers opened for requests that named another kind, kept for the next ones. */
  private readonly opened = new Map<RetrieverKind, Promise<Retriever>>()

  constructor(readonly stages: PipelineStages) {}

  /** The retriever a request asks for: the configured one unless it names another kind, which is
   * opened on first use. What cannot be opened (no vectors, no encoder, no store) is an error with
   * its code; Elasticsearch that is down fails at search time, with its own code. */
  async retrieverFor(kind?: RetrieverKind): Promise<Retriever> {
    // Without a kind, the retriever's name (bm25-sqlite and bm25-es are named by their kind).
    const own = this.stages.retrieverKind ?? this.stages.retriever.name
    if (kind === undefined || kind === own) return this.stages.retriever
    const open = this.stages.openRetriever
    if (!open) throw ERR_RETRIEVER_UNAVAILABLE(kind, `this server serves only ${own}`)
    let opening = this.opened.get(kind)
    if (!opening) {
      opening = open(kind).catch((error: unknown) => {
        // Not kept: the vectors may be encoded, or the model fetched, before the next request.
        this.opened.delete(kind)
        throw error instanceof AmbigqaError ? error : ERR_RETRIEVER_UNAVAILABLE.withCause(error, kind, error instanceof Error ? error.message : String(error))
      })
      this.opened.set(kind, opening)
    }
    return opening
  }

  /** Passages the reader reads when a request does not say. */
  get defaultRead(): number {
    return this.stages.read ?? defaults.reader.read
  }

  /** Passages retrieved when a request does not say. */
  get defaultRetrieve(): number {
    return this.stages.retrieve ?? defaults.reader.retrieve
  }

  get readerAvailable(): boolean {
    return this.stages.reader !== undefined && this.stages.decider !== undefined && this.stages.disambiguator !== undefined
  }

  /** The k passages of the retriever a request names (search), timed. */
  async retrieve(question: string, k: number, kind?: RetrieverKind): Promise<Retrieved> {
    const start = performance.now()
    const retrieved = await new Retrieval(await this.retrieverFor(kind)).run({ question, retrieve: k, read: 0 })
    retrieved.timings.retrievalMs = retrieved.timings.totalMs = performance.now() - start
    return retrieved
  }

  async ask(question: string, options: AskOptions, signal?: AbortSignal): Promise<Disambiguated> {
    const { reader, decider, disambiguator } = this.stages
    if (!reader || !decider || !disambiguator) throw ERR_READER_UNAVAILABLE('ask', this.stages.readerProblem ?? 'no reader was configured')
    const start = performance.now()
    let t = start
    // Each stage's time is its own; every stage's output carries the retrieval's timings object.
    const timed = <O extends { timings: StageTimings }>(key: keyof StageTimings, out: O): O => {
      const now = performance.now()
      out.timings[key] = now - t
      t = now
      return out
    }
    // Opening a retriever a request names counts as retrieval.
    const retrieval = new Retrieval(await this.retrieverFor(options.retriever))
    const retrieved = timed('retrievalMs', await retrieval.run({ question, retrieve: options.retrieve, read: options.read }))
    const reranked = timed('rerankMs', await (this.stages.reranker ?? new RetrievalOrder()).run(retrieved, signal))
    const candidates = timed('readMs', await reader.run(reranked, signal))
    const supported = this.stages.support ? timed('supportMs', await this.stages.support.run(candidates, signal)) : candidates
    const read = timed('decideMs', await decider.run(supported, signal))
    const result = timed('disambiguateMs', options.disambiguate === false ? asAsked(read) : await disambiguator.run(read, signal))
    result.timings.totalMs = performance.now() - start
    return result
  }

  /** Question disambiguation alone over an answer set decided before (`eval ambignq
   * --answers-from`), timed: `totalMs` adds its time to the set's own. */
  async disambiguate(read: Read, signal?: AbortSignal): Promise<Disambiguated> {
    const { disambiguator } = this.stages
    if (!disambiguator) throw ERR_READER_UNAVAILABLE('question disambiguation', this.stages.readerProblem ?? 'no reader was configured')
    const start = performance.now()
    const result = await disambiguator.run(read, signal)
    const ms = performance.now() - start
    result.timings = { ...read.timings, disambiguateMs: ms, totalMs: read.timings.totalMs + ms }
    return result
  }

  async close(): Promise<void> {
    const opened = await Promise.allSettled(this.opened.values())
    this.opened.clear()
    for (const r of opened) if (r.status === 'fulfilled') await r.value.close()
    await this.stages.retriever.close()
    await this.stages.close?.()
  }
}
