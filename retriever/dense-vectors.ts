// Dense vectors of a store's passages, kept in the store itself (table dense_vectors, written by
// index/dense/store-vectors.ts), and the on-disk ANN index built from them (index/dense/ann-index.ts): what
// the dense retriever reads, and how it tells an index built from today's vectors from a stale one.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { PassageStore } from './passage-store.js'

/** All vectors of a model, row by store rowid (row 0 unused); null when the store is not fully encoded. */
export function loadVectors(store: PassageStore, model: string): { dim: number; vectors: Float32Array; rows: number } | null {
  const hasTable = store.db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'dense_vectors'").get()
  if (!hasTable) return null
  const maxRowid = (store.db.prepare('SELECT max(rowid) AS n FROM passages').get() as { n: number | null }).n ?? 0
  const chunks = store.db.prepare('SELECT first_rowid, last_rowid, dim, data FROM dense_vectors WHERE model = ? ORDER BY first_rowid').all(model) as {
    first_rowid: number; last_rowid: number; dim: number; data: Buffer
  }[]
  if (chunks.length === 0 || chunks.at(-1)!.last_rowid < maxRowid) return null
  const dim = chunks[0]!.dim
  const vectors = new Float32Array((maxRowid + 1) * dim)
  for (const chunk of chunks) {
    // A copy: SQLite's buffer need not be 4-byte aligned.
    vectors.set(new Float32Array(new Uint8Array(chunk.data).buffer), chunk.first_rowid * dim)
  }
  return { dim, vectors, rows: maxRowid + 1 }
}

/** What identifies a model's vectors in a store: the generation the store's triggers count up on
 * every write to them (passage-store.ts), and their shape. An ANN index records the stamp it was
 * built from; any later write to the vectors changes it. */
export function vectorsStamp(store: PassageStore, model: string): string {
  const shape = store.db.prepare('SELECT count(*) AS chunks, max(last_rowid) AS rows, max(dim) AS dim FROM dense_vectors WHERE model = ?').get(model) as { chunks: number; rows: number | null; dim: number | null }
  return `${store.meta(`vectors_generation:${model}`) ?? '0'}:${shape.chunks}:${shape.rows ?? 0}:${shape.dim ?? 0}`
}

/** An ANN index's files in a store folder: the HNSW graph (usearch), the float32 rows it is
 * rescored from, and the manifest written last, so its presence means a finished build. */
export function annFiles(storeDir: string, model: string): { dir: string; graph: string; rows: string; manifest: string; partialGraph: string; partialManifest: string } {
  const dir = join(storeDir, 'ann')
  return {
    dir,
    graph: join(dir, `${model}.usearch`),
    rows: join(dir, `${model}.f32`),
    manifest: join(dir, `${model}.json`),
    partialGraph: join(dir, `${model}.partial.usearch`),
    partialManifest: join(dir, `${model}.partial.json`),
  }
}

export type AnnQuantization = 'f32' | 'f16' | 'i8'

export interface AnnManifest {
  model: string
  stamp: string
  dim: number
  /** Rows of the float32 file: row r is store rowid r + 1 (usearch key r). */
  rows: number
  quantization: AnnQuantization
  connectivity: number
  expansionAdd: number
  builtAt: string
  seconds: number
}

export function readAnnManifest(storeDir: string, model: string): AnnManifest | undefined {
  const { manifest } = annFiles(storeDir, model)
  if (!existsSync(manifest)) return undefined
  return JSON.parse(readFileSync(manifest, 'utf8')) as AnnManifest
}
