// Dense retrieval over a store's vectors (`ambigqa index encode`): the question is encoded with
// the same model and compared with the passage vectors. Two paths, logged and shown in `health`:
// the store's ANN index when it has one (index/dense/ann-index.ts; built from 100k passages on: mapped,
// candidates rescored in float32), else every vector in memory, searched exactly by usearch's SIMD
// inner product (about 2.7 ms for 33k vectors against 26 ms for a plain JS loop: bench/vector-index).
import usearch from 'usearch'
import { ERR_VECTORS_MISSING } from '../core/errors.js'
import type { Logger } from '../core/log.js'
import { AnnSearch, type AnnSearchSettings } from './ann-search.js'
import type { DenseEncoder } from './dense-encoder.js'
import { loadVectors } from './dense-vectors.js'
import type { PassageStore } from './passage-store.js'
import type { Retrieval, RetrievedPassage, Retriever } from '../core/retriever.js'

/** Above this many vectors without an ANN index, opening the exact path says what it costs. */
const EXACT_WARN_ROWS = 100_000

export class DenseRetriever implements Retriever {
  readonly name: string
  /** Which search runs: the store's ANN index, or exact over vectors in memory. */
  readonly path: 'ann' | 'exact'
  private readonly ann: AnnSearch | undefined
  private readonly exact: { dim: number; vectors: Float32Array; rows: number } | undefined

  constructor(private readonly store: PassageStore, private readonly encoder: DenseEncoder, options: { logger?: Logger; ann?: Partial<AnnSearchSettings> } = {}) {
    this.name = `dense(${encoder.name})`
    this.ann = AnnSearch.open(store, encoder.name, options.ann)
    if (this.ann) {
      this.path = 'ann'
    } else {
      const loaded = loadVectors(store, encoder.name)
      if (!loaded) throw ERR_VECTORS_MISSING(store.dir, encoder.name)
      this.path = 'exact'
      // Row 0 of the store layout is unused; usearch keys then start at 0 for rowid 1. A copy, not
      // a subarray: usearch's exactSearch reads a typed array from the start of its buffer.
      this.exact = { dim: loaded.dim, rows: loaded.rows, vectors: loaded.vectors.slice(loaded.dim) }
      if (loaded.rows - 1 >= EXACT_WARN_ROWS) {
        options.logger?.warn({ store: store.dir, vectors: loaded.rows - 1 }, `dense retrieval holds ${loaded.rows - 1} vectors in memory and searches them all: build the ANN index with ambigqa index ann --store ${store.dir} --model ${encoder.name}`)
      }
    }
    options.logger?.info({ store: store.dir, retriever: this.name }, `dense retrieval: ${this.describe()}`)
  }

  /** The search path in words, for logs and `health`. */
  describe(): string {
    return this.ann ? this.ann.describe() : `exact search over ${(this.exact!.rows - 1).toLocaleString('en-US')} vectors in memory`
  }

  async search(question: string, k: number): Promise<RetrievedPassage[]> {
    return (await this.retrieve(question, k)).passages
  }

  async retrieve(question: string, k: number): Promise<Retrieval> {
    const [query] = await this.encoder.encode([question], 'query')
    const top = this.ann ? this.ann.search(query!, k) : this.searchExact(query!, k)
    return { passages: this.store.byRowids(top.map(([rowid]) => rowid)).map((p, i) => ({ ...p, score: top[i]![1] })), query: { encoder: this.encoder.name, vector: query! } }
  }

  private searchExact(query: Float32Array, k: number): [number, number][] {
    const { vectors, dim, rows } = this.exact!
    const found = usearch.exactSearch(vectors, query, dim, Math.min(k, rows - 1), usearch.MetricKind.IP, 1) as { keys: BigUint64Array; distances: Float32Array }
    return [...found.keys].map((key, i) => [Number(key) + 1, 1 - found.distances[i]!])
  }

  async close(): Promise<void> {
    this.ann?.close()
    this.store.close()
    await this.encoder.close()
  }
}

/** [row, score] of the k rows (1..rows-1) with the largest inner product with `query`, best
 * first, in plain JS: the reference that bench/vector-index measures the others against. */
export function topByInnerProduct(vectors: Float32Array, dim: number, rows: number, query: Float32Array, k: number): [number, number][] {
  const best: [number, number][] = []
  let floor = -Infinity
  for (let row = 1; row < rows; row++) {
    let dot = 0
    const base = row * dim
    for (let d = 0; d < dim; d++) dot += vectors[base + d]! * query[d]!
    if (best.length < k || dot > floor) {
      best.push([row, dot])
      if (best.length > k) {
        best.sort((a, b) => b[1] - a[1] || a[0] - b[0])
        best.length = k
      }
      if (best.length === k) floor = Math.min(...best.map(([, s]) => s))
    }
  }
  return best.sort((a, b) => b[1] - a[1] || a[0] - b[0])
}
