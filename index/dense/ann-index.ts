// `ambigqa index ann` (and `index encode` on a large store): an on-disk ANN index of a store's
// dense vectors, for stores too large to search exactly in memory (bench/ann-scale: exact search
// takes 53 ms a query and 1.5 GB at 1M passages). Two files beside the store: the float32 rows
// in rowid order, which the retriever rescores candidates from exactly, and a usearch HNSW graph
// over quantised copies of them, which the retriever maps instead of loading. Resumable after
// kill -9: the rows file grows by whole rows, and the graph is saved every few minutes with the
// number of rows it holds; a finished build writes its manifest last, with the stamp of the
// vectors it was built from, so an index of older vectors is never searched.
import { closeSync, existsSync, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, writeSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import usearch, { type Index } from 'usearch'
import { ERR_USAGE, ERR_VECTORS_MISSING } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import { Progress } from '../../core/progress.js'
import { writeAtomic } from '../../core/write-atomic.js'
import { annFiles, readAnnManifest, vectorsStamp, type AnnManifest, type AnnQuantization } from '../../retriever/dense-vectors.js'
import { PassageStore } from '../../retriever/passage-store.js'

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

export interface AnnBuildResult { built: boolean; rows: number; seconds: number; resumedAt: number; manifest: AnnManifest }

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
    const shape = store.db.prepare('SELECT max(last_rowid) AS rows, max(dim) AS dim FROM dense_vectors WHERE model = ?').get(model) as { rows: number | null; dim: number | null }
    if (!shape.rows || shape.rows < maxRowid || !shape.dim) throw ERR_VECTORS_MISSING(store.dir, model)
    const dim = shape.dim
    const rows = maxRowid

    const existing = readAnnManifest(store.dir, model)
    const sameSettings = (m: AnnSettings) => m.quantization === settings.quantization && m.connectivity === settings.connectivity && m.expansionAdd === settings.expansionAdd
    if (existing && existing.stamp === stamp && sameSettings(existing)) {
      log.info({ model, rows }, 'the ANN index is up to date')
      return { built: false, rows, seconds: 0, resumedAt: rows, manifest: existing }
    }
    // Whatever is there now describes other vectors or settings: the finished files go first
    // (manifest first of all), so no crash from here on leaves a stale index that looks finished.
    rmSync(files.manifest, { force: true })
    rmSync(files.graph, { force: true })
    rmSync(files.rows, { force: true })
    mkdirSync(files.dir, { recursive: true })
    let partial = readPartial(files.partialManifest)
    if (partial && (partial.stamp !== stamp || !sameSettings(partial))) {
      log.info({ model }, 'the unfinished ANN build was of other vectors or settings: starting over')
      partial = undefined
    }
    if (!partial) {
      rmSync(files.partialGraph, { force: true })
      rmSync(`${files.rows}.part`, { force: true })
      partial = { ...settings, stamp, added: 0 }
      writeAtomic(files.partialManifest, JSON.stringify(partial))
    }

    writeRows(store, model, `${files.rows}.part`, dim, rows, log)

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
    const fd = openSync(`${files.rows}.part`, 'r')
    const progress = new Progress({ label: `ANN index (${settings.quantization}, M ${settings.connectivity})`, unit: 'vectors', log, fraction: () => added / Math.max(1, rows), fields: { resumedAt } })
    let lastSave = Date.now()
    try {
      const buffer = new Float32Array(batchRows * dim)
      while (added < rows) {
        const n = Math.min(batchRows, rows - added)
        const view = buffer.subarray(0, n * dim)
        readFully(fd, view, added * dim * 4)
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
    renameSync(`${files.rows}.part`, files.rows)
    const manifest: AnnManifest = { model, stamp, dim, rows, ...settings, builtAt: new Date().toISOString(), seconds: (Date.now() - started) / 1000 }
    writeAtomic(files.manifest, `${JSON.stringify(manifest, null, 2)}\n`)
    rmSync(files.partialGraph, { force: true })
    rmSync(files.partialManifest, { force: true })
    return { built: true, rows, seconds: manifest.seconds, resumedAt, manifest }
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


/** The float32 rows file, in rowid order (row r is rowid r + 1), appended to from where it stops:
 * a partly written last row (a killed build) is cut off first. Rows no chunk covers stay zero. */
function writeRows(store: PassageStore, model: string, path: string, dim: number, rows: number, log: Logger): void {
  const rowBytes = dim * 4
  const fd = openSync(path, existsSync(path) ? 'r+' : 'w+')
  try {
    let written = Math.floor(fstatSync(fd).size / rowBytes)
    ftruncateSync(fd, written * rowBytes)
    if (written >= rows) return
    if (written > 0) log.info({ written, rows }, 'resuming the ANN rows file')
    const progress = new Progress({ label: 'ANN rows (float32)', unit: 'vectors', log, fraction: () => written / rows })
    const chunks = store.db.prepare('SELECT first_rowid, last_rowid, data FROM dense_vectors WHERE model = ? AND last_rowid > ? ORDER BY first_rowid')
    for (const chunk of chunks.iterate(model, written) as Iterable<{ first_rowid: number; last_rowid: number; data: Buffer }>) {
      const from = Math.max(chunk.first_rowid, written + 1)
      if (from - 1 > written) writeSync(fd, Buffer.alloc((from - 1 - written) * rowBytes), 0, (from - 1 - written) * rowBytes, written * rowBytes)
      const offset = (from - chunk.first_rowid) * rowBytes
      const length = (chunk.last_rowid - from + 1) * rowBytes
      writeSync(fd, chunk.data, offset, length, (from - 1) * rowBytes)
      written = chunk.last_rowid
      progress.update(written)
    }
    progress.done(written)
  } finally {
    closeSync(fd)
  }
}

function readFully(fd: number, into: Float32Array, position: number): void {
  const bytes = new Uint8Array(into.buffer, into.byteOffset, into.byteLength)
  let done = 0
  while (done < bytes.length) {
    const n = readSync(fd, bytes, done, bytes.length - done, position + done)
    if (n === 0) throw new Error(`the ANN rows file ended early at byte ${position + done}`)
    done += n
  }
}

function saveGraph(index: Index, path: string): void {
  index.save(`${path}.tmp`)
  renameSync(`${path}.tmp`, path)
}
