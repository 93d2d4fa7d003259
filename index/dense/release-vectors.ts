// A store's dense vectors kept once: after an ANN build has written, flushed and published the
// model's float32 rows file (ann-index.ts), the chunks it copied are released from the store, each
// blob replaced by a marker holding the SHA-256 of its bytes (retriever/dense-vectors.ts reads them
// back from the rows file, checked). At 1M passages × 384 that frees the store's 1,465 MB of vectors
// in 6.6 s (bench/ann-scale --vectors-once, BENCHMARKS.md; pages SQLite reuses, or VACUUM returns).
// Nothing can be lost on the way:
// - only a chunk whose rows the file holds byte for byte is released, and only once the file is
//   flushed to disk and the ANN manifest says it was built from the vectors the store holds now;
// - chunks are released a batch to a transaction, so a kill leaves each chunk either in its blob
//   or released, never neither, and the next `index ann` / `index encode` releases the rest;
// - a release puts the vectors' generation back in the same transaction: the vectors did not
//   change, only their home, so the ANN index stays current (vectorsStamp).
// The rows file is the store's from then on: a rebuild (other settings, new vectors appended and
// encoded) never deletes it, only writes the rows of chunks still in blobs (ann-index.ts syncRows).
import { closeSync, fstatSync, fsyncSync, openSync } from 'node:fs'
import type { Logger } from '../../core/log.js'
import { annFiles, chunkReleased, chunkVectorBytes, listChunks, readAnnManifest, readFully, RELEASED_BYTES, releasedMarker, vectorsStamp } from '../../retriever/dense-vectors.js'
import type { PassageStore } from '../../retriever/passage-store.js'

/** Chunks released per transaction (about 48 MB of vectors read back and compared at 384 dimensions). */
const BATCH_CHUNKS = 32

export interface ReleaseResult {
  /** Chunks released now, and the vectors they held. */
  chunks: number
  rows: number
  /** Chunks whose rows the file does not hold as the blob does: kept, and said (a rebuild writes them). */
  kept: number
}

/** Releases every chunk of `model` whose rows the published rows file holds; a store under the
 * build lock (openForUpdate). Does nothing unless the ANN manifest matches the store's vectors. */
export function releaseVectors(store: PassageStore, model: string, log: Logger): ReleaseResult {
  const result: ReleaseResult = { chunks: 0, rows: 0, kept: 0 }
  const files = annFiles(store.dir, model)
  const manifest = readAnnManifest(store.dir, model)
  if (!manifest || manifest.stamp !== vectorsStamp(store, model)) return result
  const pending = listChunks(store, model).filter((c) => !chunkReleased(c, store.dir, model) && chunkVectorBytes(c) !== RELEASED_BYTES)
  if (pending.length === 0) return result
  const fd = openSync(files.rows, 'r')
  try {
    // The file's rows reach the disk before any blob goes (a kill -9 alone would not need it; a power loss would).
    fsyncSync(fd)
    const size = fstatSync(fd).size
    const db = store.db
    const blob = db.prepare('SELECT data FROM dense_vectors WHERE model = ? AND first_rowid = ?').pluck()
    const release = db.prepare('UPDATE dense_vectors SET data = ? WHERE model = ? AND first_rowid = ? AND length(data) = ?')
    const generationKey = `vectors_generation:${model}`
    const forget = db.prepare('DELETE FROM meta WHERE key = ?')
    const releaseBatch = db.transaction((batch: typeof pending) => {
      const generation = store.meta(generationKey)
      for (const chunk of batch) {
        const length = chunkVectorBytes(chunk)
        const position = (chunk.first - 1) * chunk.dim * 4
        if (chunk.dim !== manifest.dim || position + length > size) {
          result.kept++
          continue
        }
        const data = blob.get(model, chunk.first) as Buffer
        const copy = Buffer.alloc(length)
        readFully(fd, copy, position)
        if (!copy.equals(data)) {
          result.kept++
          continue
        }
        if (release.run(releasedMarker(data), model, chunk.first, length).changes === 1) {
          result.chunks++
          result.rows += chunk.last - chunk.first + 1
        }
      }
      // The update trigger counted the release as a write; it moved the vectors, changed none.
      if (generation === undefined) forget.run(generationKey)
      else store.setMeta(generationKey, generation)
    })
    // IMMEDIATE: the write lock from the start, so no other writer's commit can slip in between.
    for (let i = 0; i < pending.length; i += BATCH_CHUNKS) releaseBatch.immediate(pending.slice(i, i + BATCH_CHUNKS))
  } finally {
    closeSync(fd)
  }
  if (result.kept > 0) log.warn({ model, kept: result.kept }, 'chunks whose rows the ANN rows file does not hold as the store does were kept in the store: run ambigqa index ann again')
  if (result.chunks > 0) log.info({ model, chunks: result.chunks, rows: result.rows, file: files.rows }, 'vectors released from the store: the ANN rows file holds them')
  return result
}
