// BM25 on Elasticsearch: a multi_match of type most_fields over title and text, so a passage's
// score is the sum of its per-field BM25 scores, as in our SQLite BM25 and the Lucene peer.
import type { Client } from '@elastic/elasticsearch'
import { createEsClient, esRead, type EsOptions } from './elasticsearch-client.js'
import type { RetrievedPassage, Retriever } from '../core/retriever.js'

export class Bm25EsRetriever implements Retriever {
  readonly name = 'bm25-es'
  private readonly client: Client
  private readonly options: EsOptions

  constructor(options: EsOptions) {
    this.options = { requestTimeoutMs: 5_000, maxRetries: 0, ...options }
    this.client = createEsClient(this.options)
  }

  async search(question: string, k: number): Promise<RetrievedPassage[]> {
    // Retried on another node within the timeout (esRead); a shard with no copy left fails the
    // search rather than answering from the others, so a partial ranking is never returned.
    const res = await esRead(this.options, (attempt) => this.client.search<{ id: string; title: string; text: string }>({
      index: this.options.index,
      size: k,
      track_total_hits: false,
      allow_partial_search_results: false,
      query: { multi_match: { query: question, fields: ['title', 'text'], type: 'most_fields' } },
    }, attempt))
    return res.hits.hits.map((h) => ({ id: h._source?.id ?? String(h._id), title: h._source?.title ?? '', text: h._source?.text ?? '', score: h._score ?? 0 }))
  }

  async close(): Promise<void> {
    await this.client.close()
  }
}
