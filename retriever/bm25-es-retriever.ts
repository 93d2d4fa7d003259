// BM25 on Elasticsearch: a multi_match of type most_fields over title and text, so a passage's
// score is the sum of its per-field BM25 scores, as in our SQLite BM25 and the Lucene peer.
import type { Client } from '@elastic/elasticsearch'
import { createEsClient, esError, type EsOptions } from './elasticsearch-client.js'
import type { RetrievedPassage, Retriever } from '../core/retriever.js'

export class Bm25EsRetriever implements Retriever {
  readonly name = 'bm25-es'
  private readonly client: Client

  constructor(private readonly options: EsOptions) {
    this.client = createEsClient({ requestTimeoutMs: 5_000, maxRetries: 0, ...options })
  }

  async search(question: string, k: number): Promise<RetrievedPassage[]> {
    try {
      const res = await this.client.search<{ id: string; title: string; text: string }>({
        index: this.options.index,
        size: k,
        track_total_hits: false,
        query: { multi_match: { query: question, fields: ['title', 'text'], type: 'most_fields' } },
      })
      return res.hits.hits.map((h) => ({ id: h._source?.id ?? String(h._id), title: h._source?.title ?? '', text: h._source?.text ?? '', score: h._score ?? 0 }))
    } catch (err) {
      throw esError(err, this.options)
    }
  }

  async close(): Promise<void> {
    await this.client.close()
  }
}
