// Search over a store's ANN index (index/dense/ann-index.ts): the HNSW graph is memory-mapped
// (usearch's view), so the server's own memory does not grow with the corpus, and its best
// `candidates` are rescored exactly from the float32 rows file, read row by row: the quantised
// copies in the graph only choose candidates, never the final order (int8 alone plateaus at
// recall@10 0.77 on 1M near-duplicate vectors, bench/vector-index). The rows file is also the
// store's one copy of the vectors released into it (dense-vectors.ts): reading the candidates'
// rows from the store's chunk blobs instead costs a whole 1.5 MB chunk per candidate, even through
// `substr` (1M, bench/ann-scale --vectors-once: p50 45-211 ms a query against 2.0 from this file). Opening checks the file against the store: its length, and the last released
// chunk against the SHA-256 its marker keeps (one chunk, not all: the manifest's stamp already
// says the vectors are the ones the index was built from).
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs'
import usearch, { type Index } from 'usearch'
import { ERR_ANN_INDEX } from '../core/errors.js'
import { annFiles, checkReleasedRows, readAnnManifest, vectorsStamp, type AnnManifest } from './dense-vectors.js'
import type { PassageStore } from './passage-store.js'

export interface AnnSearchSettings {
  /** HNSW search expansion (ef). */
  expansion: number
  /** Candidates taken from the graph and rescored exactly (at least k). */
  candidates: number
}
// Chosen on SYNTHETIC near-duplicate vectors (bench/ann-scale, BENCHMARKS.md): at 5M, ef 512 with
// 100 candidates is the cheapest setting with recall@10 ≥ 0.98 (0.988 at 2.2 ms p50; ef 256 stops
// at 0.971, more candidates do not help it: the graph search is what misses).
export const ANN_SEARCH_DEFAULTS: AnnSearchSettings = { expansion: 512, candidates: 100 }

export class AnnSearch {
  private readonly row: Float32Array
  private readonly rowBytes: Uint8Array

  private constructor(
    readonly manifest: AnnManifest,
    private readonly index: Index,
    private readonly fd: number,
    private readonly settings: AnnSearchSettings,
  ) {
    this.row = new Float32Array(manifest.dim)
    this.rowBytes = new Uint8Array(this.row.buffer)
  }

  /** The store's ANN index for `model`, if it has one; one built from other vectors than the
   * store's now is refused (ERR_ANN_INDEX), never searched. */
  static open(store: PassageStore, model: string, settings: Partial<AnnSearchSettings> = {}): AnnSearch | undefined {
    let manifest: AnnManifest | undefined
    try {
      manifest = readAnnManifest(store.dir, model)
    } catch (err) {
      throw ERR_ANN_INDEX.withCause(err, store.dir, model, `has a manifest that cannot be read (${(err as Error).message})`)
    }
    if (!manifest) return undefined
    if (manifest.stamp !== vectorsStamp(store, model)) throw ERR_ANN_INDEX(store.dir, model, 'was built from older vectors than the store holds now')
    const files = annFiles(store.dir, model)
    // Released vectors first: for them rebuilding the index would not help, the file is their one copy.
    checkReleasedRows(store, model)
    if (!existsSync(files.graph) || !existsSync(files.rows) || statSync(files.rows).size < manifest.rows * manifest.dim * 4) {
      throw ERR_ANN_INDEX(store.dir, model, 'lacks a file, or a file\'s size differs from its manifest')
    }
    const index = new usearch.Index({
      dimensions: manifest.dim, metric: usearch.MetricKind.IP,
      quantization: { f32: usearch.ScalarKind.F32, f16: usearch.ScalarKind.F16, i8: usearch.ScalarKind.I8 }[manifest.quantization],
      connectivity: manifest.connectivity, expansion_add: manifest.expansionAdd,
      expansion_search: settings.expansion ?? ANN_SEARCH_DEFAULTS.expansion, multi: false,
    })
    try {
      index.view(files.graph)
    } catch (err) {
      throw ERR_ANN_INDEX.withCause(err, store.dir, model, `has a graph that cannot be mapped (${(err as Error).message})`)
    }
    return new AnnSearch(manifest, index, openSync(files.rows, 'r'), { ...ANN_SEARCH_DEFAULTS, ...settings })
  }

  /** [rowid, inner product] of the k best rows, best first. */
  search(query: Float32Array, k: number): [number, number][] {
    const wanted = Math.min(Math.max(k, this.settings.candidates), this.manifest.rows)
    const found = this.index.search(query, wanted, 1) as { keys: BigUint64Array }
    const { dim } = this.manifest
    const scored: [number, number][] = []
    for (const key of found.keys) {
      const r = Number(key)
      readSync(this.fd, this.rowBytes, 0, this.rowBytes.length, r * dim * 4)
      let dot = 0
      for (let d = 0; d < dim; d++) dot += this.row[d]! * query[d]!
      scored.push([r + 1, dot])
    }
    return scored.sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, k)
  }

  describe(): string {
    const m = this.manifest
    return `ANN index (HNSW ${m.quantization}, M ${m.connectivity}, ef ${this.settings.expansion}, ${this.settings.candidates} candidates rescored in float32; ${m.rows.toLocaleString('en-US')} vectors, built ${m.builtAt})`
  }

  close(): void {
    closeSync(this.fd)
  }
}
