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
  /** How it searches, for logs and `health` (which index, which path); the name when it has nothing to add. */
  describe?(): string
  close(): Promise<void>
}

export function describeRetriever(retriever: Retriever): string {
  return retriever.describe?.() ?? retriever.name
}
