// Dense retrieval on Elasticsearch: the question encoded here, then approximate kNN (HNSW) over
// the index's vector field for that encoder (`ambigqa index encode --backend elasticsearch`).
import type { Client } from '@elastic/elasticsearch'
import { ERR_MODEL_MISSING } from '../core/errors.js'
import type { DenseEncoder } from './dense-encoder.js'
import { createEsClient, esRead, type EsOptions } from './elasticsearch-client.js'
import type { Retrieval, RetrievedPassage, Retriever } from '../core/retriever.js'

/** The index field holding one encoder's vectors. */
export function vectorField(model: string): string {
  return `vector_${model.replace(/[^a-z0-9]+/gi, '_').toLowerCase()}`
}

export function vectorMapping(dims: number) {
  return { type: 'dense_vector' as const, dims, index: true, similarity: 'dot_product' as const, index_options: { type: 'hnsw' as const, m: 16, ef_construction: 100 } }
}

export class DenseEsRetriever implements Retriever {
  readonly name: string
  private readonly client: Client
  private readonly field: string
  private checked: Promise<void> | undefined
  private readonly options: EsOptions

  /** numCandidates: HNSW candidates per shard (Elasticsearch's recall/speed knob); at least 2k, at most Elasticsearch's 10,000. */
  constructor(options: EsOptions, private readonly encoder: DenseEncoder, private readonly numCandidates = 100) {
    this.name = `dense-es(${encoder.name})`
    this.field = vectorField(encoder.name)
    this.options = { requestTimeoutMs: 5_000, maxRetries: 0, ...options }
    this.client = createEsClient(this.options)
  }

  async search(question: string, k: number): Promise<RetrievedPassage[]> {
    return (await this.retrieve(question, k)).passages
  }

  async retrieve(question: string, k: number): Promise<Retrieval> {
    // kNN over a field the index lacks returns no hits, silently: check once that every passage has its vector.
    this.checked ??= this.checkVectors().catch((err) => {
      this.checked = undefined
      throw err
    })
    await this.checked
    const [query] = await this.encoder.encode([question], 'query')
    // As BM25 on Elasticsearch: retried within the timeout, never a partial ranking.
    const res = await esRead(this.options, (attempt) => this.client.search<{ id: string; title: string; text: string }>({
      index: this.options.index,
      size: k,
      allow_partial_search_results: false,
      knn: { field: this.field, query_vector: Array.from(query!), k, num_candidates: Math.min(10_000, Math.max(2 * k, this.numCandidates)) },
      _source: ['id', 'title', 'text'],
    }, attempt))
    // Elasticsearch reports (1 + dot) / 2 for dot_product; give the dot product, as the SQLite one does.
    const passages = res.hits.hits.map((h) => ({ id: h._source?.id ?? String(h._id), title: h._source?.title ?? '', text: h._source?.text ?? '', score: 2 * (h._score ?? 0.5) - 1 }))
    return { passages, query: { encoder: this.encoder.name, vector: query! } }
  }

  private async checkVectors(): Promise<void> {
    const { index } = this.options
    const missing = (await esRead(this.options, (attempt) => this.client.count({ index, query: { bool: { must_not: { exists: { field: this.field } } } } }, attempt))).count
    if (missing > 0) {
      throw ERR_MODEL_MISSING(`the ${this.encoder.name} vectors of ${missing} passages of Elasticsearch index '${index}'`, `ambigqa index encode --backend elasticsearch --es-index ${index} --model ${this.encoder.name}`)
    }
  }

  async close(): Promise<void> {
    await this.client.close()
    await this.encoder.close()
  }
}
