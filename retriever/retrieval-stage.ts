// The pipeline's first two stages over any Retriever: the retrieval (the question's passages, and
// its vector when the retriever embedded one, handed on to the stages after) and, without a
// reranker, the retriever's own order cut to the passages the reader reads.
import { retrieveWith, type Retriever } from '../core/retriever.js'
import type { Asked, Reranked, Retrieved, Stage } from '../core/stages.js'

export class Retrieval implements Stage<Asked, Retrieved> {
  readonly name = 'retrieve'

  constructor(readonly retriever: Retriever) {}

  async run(input: Asked): Promise<Retrieved> {
    const { passages, query } = await retrieveWith(this.retriever, input.question, input.retrieve)
    return { ...input, passages, ...(query ? { query } : {}), timings: { retrievalMs: 0, totalMs: 0 } }
  }
}

/** The reranking stage when none is configured: the retriever's order, cut to `read` passages. */
export class RetrievalOrder implements Stage<Retrieved, Reranked> {
  readonly name = 'retrieval order'

  async run(input: Retrieved): Promise<Reranked> {
    return { ...input, reranked: input.passages.slice(0, input.read) }
  }
}
