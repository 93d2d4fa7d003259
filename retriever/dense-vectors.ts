// Dense vectors of a store's passages, kept ONCE. Encoders write them into the store (table
// dense_vectors: chunks of consecutive passages, float32 blobs; index/dense/store-vectors.ts, and the
// PyTorch encoder, which only appends chunks). An ANN build (index/dense/ann-index.ts) copies them
// into the model's float32 rows file (STORE/ann/<model>.f32, row r is rowid r + 1), which its search
// rescores candidates from row by row; once that file is written, flushed and published, the build
// releases the chunks' blobs (index/dense/release-vectors.ts): each becomes a marker holding the
// SHA-256 of the bytes it held, and the rows file is the one copy of them (1M × 384: 3.0 GB on disk
// against 4.5 GB with both). Keeping the blobs and rescoring from them instead was measured and lost
// (bench/ann-scale --vectors-once, BENCHMARKS.md: every candidate costs its whole chunk's blob,
// p50 45 ms or more against 2). Every reader of a model's vectors (exact search, later ANN builds,
// the copy into Elasticsearch) goes through `readVectorChunks`, which takes each chunk from its
// blob or, released, from the rows file checked against its marker:
// a rows file missing, short or other than what was released is AMBIGQA_ERR_VECTORS_FILE, never
// zero or stale vectors. `vectorsStamp` tells an ANN index built from today's vectors from a stale
// one; a release leaves it as it was (the vectors are the same, only their home moved).
import { createHash } from 'node:crypto'
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs'
import { join } from 'node:path'
import { ERR_STORE_CORRUPT, ERR_VECTORS_FILE } from '../core/errors.js'
import type { PassageStore } from './passage-store.js'

/** A released chunk's data: these bytes, then the SHA-256 of the float32 rows it held. */
export const RELEASED_MAGIC = Buffer.from('ambigqa:vectors-in-rows-file:v1\n', 'ascii')
export const RELEASED_BYTES = RELEASED_MAGIC.length + 32

/** A chunk of a model's vectors as the store lists it; `bytes` is the length of its data. */
export interface ChunkInfo { first: number; last: number; dim: number; bytes: number }
/** A chunk's float32 rows (little-endian bytes, row by row) and where they were read from. */
export interface VectorChunk { first: number; last: number; dim: number; data: Buffer; released: boolean }

export function chunkVectorBytes(chunk: { first: number; last: number; dim: number }): number {
  return (chunk.last - chunk.first + 1) * chunk.dim * 4
}

/** Whether a chunk's blob holds its vectors or a release marker (a chunk whose vectors would be
 * exactly a marker's length is never released, so the two cannot be confused). */
export function chunkReleased(chunk: ChunkInfo, storeDir: string, model: string): boolean {
  const expected = chunkVectorBytes(chunk)
  if (chunk.bytes === expected) return false
  if (chunk.bytes === RELEASED_BYTES) return true
  throw ERR_STORE_CORRUPT(storeDir, `the ${model} vectors of passages ${chunk.first}-${chunk.last} are ${chunk.bytes} bytes, neither their ${expected} nor a release marker`)
}

export function vectorsDigest(data: Uint8Array): Buffer {
  return createHash('sha256').update(data).digest()
}

export function releasedMarker(data: Uint8Array): Buffer {
  return Buffer.concat([RELEASED_MAGIC, vectorsDigest(data)])
}

/** A model's chunks in rowid order, their data's length only (SQLite reads a blob's length from its header). */
export function listChunks(store: PassageStore, model: string): ChunkInfo[] {
  const hasTable = store.db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'dense_vectors'").get()
  if (!hasTable) return []
  return store.db.prepare('SELECT first_rowid AS first, last_rowid AS last, dim, length(data) AS bytes FROM dense_vectors WHERE model = ? ORDER BY first_rowid').all(model) as ChunkInfo[]
}

/** Every chunk of `model` (or those given), in rowid order, from its blob or, released, from the
 * rows file, checked against the SHA-256 its marker keeps. The one way a model's vectors are read. */
export function* readVectorChunks(store: PassageStore, model: string, chunks: readonly ChunkInfo[] = listChunks(store, model)): Generator<VectorChunk> {
  const blob = store.db.prepare('SELECT data FROM dense_vectors WHERE model = ? AND first_rowid = ?').pluck()
  const rowsPath = annFiles(store.dir, model).rows
  let fd: number | undefined
  let size = 0
  try {
    for (const chunk of chunks) {
      const released = chunkReleased(chunk, store.dir, model)
      const stored = blob.get(model, chunk.first) as Buffer
      if (!released) {
        yield { first: chunk.first, last: chunk.last, dim: chunk.dim, data: stored, released }
        continue
      }
      const problem = (what: string) => ERR_VECTORS_FILE(store.dir, model, rowsPath, `${what} (passages ${chunk.first}-${chunk.last})`)
      if (fd === undefined) {
        if (!existsSync(rowsPath)) throw problem('is missing')
        fd = openSync(rowsPath, 'r')
        size = fstatSync(fd).size
      }
      const length = chunkVectorBytes(chunk)
      const position = (chunk.first - 1) * chunk.dim * 4
      if (position + length > size) throw problem(`is ${size} bytes, shorter than the rows released into it`)
      const data = Buffer.alloc(length)
      readFully(fd, data, position)
      if (!stored.subarray(0, RELEASED_MAGIC.length).equals(RELEASED_MAGIC) || !vectorsDigest(data).equals(stored.subarray(RELEASED_MAGIC.length))) {
        throw problem('holds other vectors than were released into it')
      }
      yield { first: chunk.first, last: chunk.last, dim: chunk.dim, data, released }
    }
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** The rows file checked for a model's released chunks, cheaply: there, long enough for all of
 * them, and the last one's rows the ones released (readVectorChunks checks every chunk it reads).
 * Throws AMBIGQA_ERR_VECTORS_FILE; gives the released chunks. */
export function checkReleasedRows(store: PassageStore, model: string): ChunkInfo[] {
  const released = listChunks(store, model).filter((c) => chunkReleased(c, store.dir, model))
  if (released.length > 0) void [...readVectorChunks(store, model, released.slice(-1))]
  return released
}

/** All vectors of a model, row by store rowid (row 0 unused); null when the store is not fully encoded. */
export function loadVectors(store: PassageStore, model: string): { dim: number; vectors: Float32Array; rows: number } | null {
  const maxRowid = (store.db.prepare('SELECT max(rowid) AS n FROM passages').get() as { n: number | null }).n ?? 0
  const chunks = listChunks(store, model)
  if (chunks.length === 0 || chunks.at(-1)!.last < maxRowid) return null
  const dim = chunks[0]!.dim
  const other = chunks.find((c) => c.dim !== dim)
  if (other) throw ERR_STORE_CORRUPT(store.dir, `the ${model} vectors of passages ${other.first}-${other.last} have ${other.dim} dimensions, the first chunk ${dim}`)
  const vectors = new Float32Array((maxRowid + 1) * dim)
  for (const chunk of readVectorChunks(store, model, chunks)) {
    // Through a byte view: SQLite's buffer need not be 4-byte aligned.
    new Uint8Array(vectors.buffer, chunk.first * dim * 4, chunk.data.length).set(chunk.data)
  }
  return { dim, vectors, rows: maxRowid + 1 }
}

/** Reads `into.length` bytes at `position`; a file that ends first is an error of the caller's words. */
export function readFully(fd: number, into: Uint8Array, position: number): void {
  let done = 0
  while (done < into.length) {
    const n = readSync(fd, into, done, into.length - done, position + done)
    if (n === 0) throw new Error(`file ended early at byte ${position + done}`)
    done += n
  }
}

/** What identifies a model's vectors in a store: the generation the store's triggers count up on
 * every write to them (passage-store.ts), and their shape. An ANN index records the stamp it was
 * built from; any later write to the vectors changes it, except a release (release-vectors.ts),
 * which moves them and puts the generation back in the same transaction. Reads no vector. */
export function vectorsStamp(store: PassageStore, model: string): string {
  const shape = store.db.prepare('SELECT count(*) AS chunks, max(last_rowid) AS rows, max(dim) AS dim FROM dense_vectors WHERE model = ?').get(model) as { chunks: number; rows: number | null; dim: number | null }
  return `${store.meta(`vectors_generation:${model}`) ?? '0'}:${shape.chunks}:${shape.rows ?? 0}:${shape.dim ?? 0}`
}

/** An ANN index's files in a store folder: the HNSW graph (usearch), the float32 rows it is
 * rescored from (also the one copy of released vectors: never deleted by a rebuild), and the
 * manifest written last, so its presence means a finished build. */
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
