// One interface for every way of finding passages (BM25 on SQLite, Elasticsearch, dense,
// hybrid): the pipeline and the evaluation depend on this and nothing more.
import type { Passage } from './passage.js'

export interface RetrievedPassage extends Passage {
  score: number
}

/** A question as a dense retriever embedded it: the encoder's name and its unit vector. */
export interface QueryVector { encoder: string; vector: Float32Array }

/** What a search found, with the question's vector when the retriever embedded one. */
export interface Retrieval { passages: RetrievedPassage[]; query?: QueryVector }

export interface Retriever {
  readonly name: string
  /** The k best passages for a question, best first. */
  search(question: string, k: number): Promise<RetrievedPassage[]>
  /** The same search with the question's vector beside the passages, from a retriever that embeds
   * the question (dense, or hybrid over a dense one): the pipeline hands it on, so that a later
   * stage reading the question's embedding by the same encoder need not compute it again. */
  retrieve?(question: string, k: number): Promise<Retrieval>
  /** How it searches, for logs and `health` (which index, which path); the name when it has nothing to add. */
  describe?(): string
  close(): Promise<void>
}

/** The k best passages and, when the retriever embeds the question, its vector. */
export async function retrieveWith(retriever: Retriever, question: string, k: number): Promise<Retrieval> {
  return retriever.retrieve ? retriever.retrieve(question, k) : { passages: await retriever.search(question, k) }
}

export function describeRetriever(retriever: Retriever): string {
  return retriever.describe?.() ?? retriever.name
}
