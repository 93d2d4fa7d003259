// `ambigqa index ann` (and `index encode` on a large store): an on-disk ANN index of a store's
// dense vectors, for stores too large to search exactly in memory (bench/ann-scale: exact search
// takes 53 ms a query and 1.5 GB at 1M passages). Two files beside the store: the float32 rows
// in rowid order, which the retriever rescores candidates from exactly, and a usearch HNSW graph
// over quantised copies of them, which the retriever maps instead of loading. The vectors are kept
// once: after the build is published, the store's blobs of the rows it copied are released
// (release-vectors.ts) and the rows file is their one copy, so a rebuild never deletes it: it
// brings it up to the store in place (syncRows: the rows of chunks still in blobs written where
// they differ, released rows read back and checked, never written). Resumable after kill -9: the
// sync compares before it writes, the graph is saved every few minutes with the number of rows it
// holds, and a finished build writes its manifest last, with the stamp of the vectors it was built
// from, so an index of older vectors is never searched; a release cut short is finished by the
// next `index ann` or `index encode`, even when the index is up to date.
import { closeSync, existsSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import { availableParallelism } from 'node:os'
import usearch, { type Index } from 'usearch'
import { ERR_STORE_CORRUPT, ERR_USAGE, ERR_VECTORS_MISSING } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import { Progress } from '../../core/progress.js'
import { writeAtomic } from '../../core/write-atomic.js'
import { annFiles, checkReleasedRows, listChunks, readAnnManifest, readFully, readVectorChunks, vectorsStamp, type AnnManifest, type AnnQuantization } from '../../retriever/dense-vectors.js'
import { PassageStore } from '../../retriever/passage-store.js'
import { releaseVectors, type ReleaseResult } from './release-vectors.js'

/** From this many passages on `index encode` builds the ANN index (chosen in bench/ann-scale:
 * exact search stays under 5 ms a query up to about 100k vectors and grows linearly beyond). */
export const ANN_MIN_PASSAGES = 100_000
export const ANN_QUANTIZATIONS: readonly AnnQuantization[] = ['i8', 'f16', 'f32']

export interface AnnSettings {
  /** How the graph keeps its copy of each vector; search is rescored from float32 either way. */
  quantization: AnnQuantization
  /** HNSW M: neighbours per node. */
  connectivity: number
  /** HNSW ef_construction. */
  expansionAdd: number
}
export const ANN_DEFAULTS: AnnSettings = { quantization: 'i8', connectivity: 16, expansionAdd: 128 }

export interface AnnBuildOptions extends Partial<AnnSettings> {
  store: string
  model: string
  threads?: number
  /** Rows added to the graph between progress reports (and possible checkpoints). */
  batchRows?: number
  /** Seconds between saves of the unfinished graph: what a killed build loses at most. */
  checkpointSeconds?: number
  /** Release the store's copy of the vectors the published rows file holds (default true): false
   * keeps both copies (bench/ann-scale measures the store before and after). */
  release?: boolean
  log: Logger
}

/** When `index encode` builds the ANN index: auto from ANN_MIN_PASSAGES on, or whenever the
 * store has one (finished or not) that new vectors would leave stale; always; never. */
export const ANN_WHEN = ['auto', 'always', 'never'] as const
export type AnnWhen = (typeof ANN_WHEN)[number]

export function annWanted(storeDir: string, model: string, when: AnnWhen): boolean {
  if (when !== 'auto') return when === 'always'
  const files = annFiles(storeDir, model)
  if (existsSync(files.manifest) || existsSync(files.partialManifest)) return true
  const store = PassageStore.openReadOnly(storeDir)
  try {
    return store.count() >= ANN_MIN_PASSAGES
  } finally {
    store.close()
  }
}

export interface AnnBuildResult { built: boolean; rows: number; seconds: number; resumedAt: number; manifest: AnnManifest; released: ReleaseResult }

interface PartialManifest extends AnnSettings { stamp: string; added: number }

export function usearchIndex(dim: number, settings: AnnSettings, expansionSearch = 128): Index {
  const quantization = { f32: usearch.ScalarKind.F32, f16: usearch.ScalarKind.F16, i8: usearch.ScalarKind.I8 }[settings.quantization]
  return new usearch.Index({
    dimensions: dim, metric: usearch.MetricKind.IP, quantization, connectivity: settings.connectivity,
    expansion_add: settings.expansionAdd, expansion_search: expansionSearch, multi: false,
  })
}

export async function buildAnnIndex(options: AnnBuildOptions): Promise<AnnBuildResult> {
  const started = Date.now()
  const settings: AnnSettings = {
    quantization: options.quantization ?? ANN_DEFAULTS.quantization,
    connectivity: options.connectivity ?? ANN_DEFAULTS.connectivity,
    expansionAdd: options.expansionAdd ?? ANN_DEFAULTS.expansionAdd,
  }
  if (!ANN_QUANTIZATIONS.includes(settings.quantization)) throw ERR_USAGE(`--quantization ${settings.quantization} is not one of ${ANN_QUANTIZATIONS.join(', ')}`, 'Leave it out for i8, rescored from float32')
  const store = PassageStore.openForUpdate(options.store)
  try {
    const { model, log } = options
    const files = annFiles(store.dir, model)
    const stamp = vectorsStamp(store, model)
    const maxRowid = (store.db.prepare('SELECT max(rowid) AS n FROM passages').get() as { n: number | null }).n ?? 0
    const shape = store.db.prepare('SELECT max(last_rowid) AS rows, max(dim) AS dim, min(dim) AS minDim FROM dense_vectors WHERE model = ?').get(model) as { rows: number | null; dim: number | null; minDim: number | null }
    if (!shape.rows || shape.rows < maxRowid || !shape.dim) throw ERR_VECTORS_MISSING(store.dir, model)
    if (shape.minDim !== shape.dim) throw ERR_STORE_CORRUPT(store.dir, `the ${model} vectors have ${shape.minDim} dimensions in some chunks and ${shape.dim} in others`)
    const dim = shape.dim
    // A rows file that lost released vectors stops the build before it removes anything.
    checkReleasedRows(store, model)
    const release = () => (options.release ?? true) ? releaseVectors(store, model, log) : { chunks: 0, rows: 0, kept: 0 }
    const rows = maxRowid

    const existing = readAnnManifest(store.dir, model)
    const sameSettings = (m: AnnSettings) => m.quantization === settings.quantization && m.connectivity === settings.connectivity && m.expansionAdd === settings.expansionAdd
    if (existing && existing.stamp === stamp && sameSettings(existing)) {
      log.info({ model, rows }, 'the ANN index is up to date')
      // A build killed between its manifest and the end of its release is finished here.
      return { built: false, rows, seconds: 0, resumedAt: rows, manifest: existing, released: release() }
    }
    // Whatever is there now describes other vectors or settings: the finished files go first
    // (manifest first of all), so no crash from here on leaves a stale index that looks finished.
    // Not the rows file: it is the one copy of the vectors released into it.
    rmSync(files.manifest, { force: true })
    rmSync(files.graph, { force: true })
    // An older version's unfinished rows file, written beside the finished one.
    rmSync(`${files.rows}.part`, { force: true })
    mkdirSync(files.dir, { recursive: true })
    let partial = readPartial(files.partialManifest)
    if (partial && (partial.stamp !== stamp || !sameSettings(partial))) {
      log.info({ model }, 'the unfinished ANN build was of other vectors or settings: starting over')
      partial = undefined
    }
    if (!partial) {
      rmSync(files.partialGraph, { force: true })
      partial = { ...settings, stamp, added: 0 }
      writeAtomic(files.partialManifest, JSON.stringify(partial))
    }

    syncRows(store, model, files.rows, dim, rows, log)

    const index = usearchIndex(dim, settings)
    let added = 0
    if (partial.added > 0 && existsSync(files.partialGraph)) {
      index.load(files.partialGraph)
      added = index.size()
      if (added !== partial.added) {
        // A graph saved but its count not yet recorded (killed between the two): the graph's own size holds.
        log.info({ saved: added, recorded: partial.added }, 'the saved graph holds another count than recorded: using its own')
      }
      log.info({ model, added, rows }, 'resuming the ANN build')
    }
    const resumedAt = added
    const threads = options.threads ?? Math.max(1, availableParallelism())
    const batchRows = options.batchRows ?? 20_000
    const checkpointMs = (options.checkpointSeconds ?? 180) * 1000
    const fd = openSync(files.rows, 'r')
    const progress = new Progress({ label: `ANN index (${settings.quantization}, M ${settings.connectivity})`, unit: 'vectors', log, fraction: () => added / Math.max(1, rows), fields: { resumedAt } })
    let lastSave = Date.now()
    try {
      const buffer = new Float32Array(batchRows * dim)
      while (added < rows) {
        const n = Math.min(batchRows, rows - added)
        const view = buffer.subarray(0, n * dim)
        readFully(fd, new Uint8Array(view.buffer, view.byteOffset, view.byteLength), added * dim * 4)
        index.add(BigUint64Array.from({ length: n }, (_, i) => BigInt(added + i)), view, threads)
        added += n
        progress.update(added)
        if (added < rows && Date.now() - lastSave >= checkpointMs) {
          saveGraph(index, files.partialGraph)
          writeAtomic(files.partialManifest, JSON.stringify({ ...partial, added }))
          log.info({ added, rows }, 'ANN build checkpoint saved')
          lastSave = Date.now()
        }
        // Lets a signal (Ctrl-C, a job's cancel) through between batches.
        await new Promise((resolve) => setImmediate(resolve))
      }
    } finally {
      closeSync(fd)
    }
    progress.done(added)
    saveGraph(index, files.graph)
    const manifest: AnnManifest = { model, stamp, dim, rows, ...settings, builtAt: new Date().toISOString(), seconds: (Date.now() - started) / 1000 }
    writeAtomic(files.manifest, `${JSON.stringify(manifest, null, 2)}\n`)
    rmSync(files.partialGraph, { force: true })
    rmSync(files.partialManifest, { force: true })
    log.info({ model, rows }, 'ANN index published')
    return { built: true, rows, seconds: manifest.seconds, resumedAt, manifest, released: release() }
  } finally {
    store.close()
  }
}

function readPartial(path: string): PartialManifest | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as PartialManifest
  } catch {
    // Missing, or cut short by a crash before the rename: start over.
    return undefined
  }
}


/** The float32 rows file (row r is rowid r + 1) brought up to the store's vectors, in place: a
 * chunk still in its blob is written at its rows where the file differs; a released chunk is read
 * back through the one reader (checked against its marker) and never written, the file being its
 * one copy; rows no chunk covers are zero. Flushed to disk at the end. A killed sync is redone
 * whole, and writes only what still differs. */
function syncRows(store: PassageStore, model: string, path: string, dim: number, rows: number, log: Logger): void {
  const rowBytes = dim * 4
  const chunks = listChunks(store, model)
  const end = Math.max(rows, chunks.at(-1)?.last ?? 0)
  const created = !existsSync(path)
  const fd = openSync(path, created ? 'w+' : 'r+')
  try {
    let size = fstatSync(fd).size
    let written = 0
    let done = 0
    /** `data` at `position`, written unless the file holds it already. */
    const ensure = (data: Uint8Array, position: number) => {
      if (position + data.length <= size) {
        const current = Buffer.alloc(data.length)
        readFully(fd, current, position)
        if (current.equals(data)) return
      }
      for (let n = 0; n < data.length;) n += writeSync(fd, data, n, data.length - n, position + n)
      written += data.length
      size = Math.max(size, position + data.length)
    }
    /** Rows first..last zero: only where the file reaches (past its end it reads as zero). */
    const zero = (first: number, last: number) => {
      const block = Buffer.alloc(Math.min(4096, last - first + 1) * rowBytes)
      for (let at = (first - 1) * rowBytes; at < Math.min(last * rowBytes, size); at += block.length) {
        ensure(block.subarray(0, Math.min(block.length, last * rowBytes - at)), at)
      }
    }
    if (size > 0) log.info({ model, bytes: size }, 'bringing the ANN rows file up to the store')
    const progress = new Progress({ label: 'ANN rows (float32)', unit: 'vectors', log, fraction: () => done / Math.max(1, end) })
    let next = 1
    for (const chunk of readVectorChunks(store, model, chunks)) {
      if (chunk.first < next) throw ERR_STORE_CORRUPT(store.dir, `the ${model} vectors of passages ${chunk.first}-${chunk.last} overlap the chunk before them`)
      if (chunk.first > next) zero(next, chunk.first - 1)
      if (!chunk.released) ensure(chunk.data, (chunk.first - 1) * rowBytes)
      next = chunk.last + 1
      progress.update((done = chunk.last))
    }
    if (next <= end) zero(next, end)
    ftruncateSync(fd, end * rowBytes)
    fsyncSync(fd)
    progress.done(end)
    log.info({ model, rows: end, writtenBytes: written }, 'ANN rows file up to date')
  } finally {
    closeSync(fd)
  }
  if (created) {
    // The new file's name reaches the disk too, before any blob is released into it.
    const dir = openSync(dirname(path), 'r')
    try {
      fsyncSync(dir)
    } finally {
      closeSync(dir)
    }
  }
}

function saveGraph(index: Index, path: string): void {
  index.save(`${path}.tmp`)
  renameSync(`${path}.tmp`, path)
}
