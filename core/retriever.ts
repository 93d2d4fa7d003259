// One interface for every way of finding passages (BM25 on SQLite, Elasticsearch, dense,
// hybrid): the pipeline and the evaluation depend on this and nothing more.
import type { Passage } from './passage.js'

export interface RetrievedPassage extends Passage {
  score: number
}

export interface Retriever {
  readonly name: string
  /** The k best passages for a question, best first. */
  search(question: string, k: number): Promise<RetrievedPassage[]>
  close(): Promise<void>
}
