// Reading one source into a store's passages, batch by batch, each batch committed with the
// source's position after it (its `sources` row), so a killed build resumes after its last commit
// and adds nothing twice; then the BM25 segments of what is not yet indexed. A first build does
// both in the store itself, an append in its staging store (append.ts).
import type { Logger } from '../core/log.js'
import type { Passage } from '../core/passage.js'
import { Progress } from '../core/progress.js'
import type { PassageStore } from '../retriever/passage-store.js'
import { indexPendingPassages } from './bm25/bm25-index-writer.js'
import { createReader } from './sources/formats.js'
import type { ResumePoint } from './sources/passage.js'
import { readInBatches } from './sources/read-in-batches.js'
import { buildSource, finishSource, resumePoint, type SourceSpec } from './sources/resume.js'

export interface BuildOptions {
  store: string
  sources: SourceSpec[]
  onError: 'fail' | 'skip'
  batchSize: number
  segmentSize: number
  workers: number
  log: Logger
  /** Called as passages are indexed (after ingestion), with the fraction done. */
  onProgress?: (progress: { indexed: number; total: number }) => void
}

export interface BuildReport {
  passages: number
  added: number
  skipped: number
  duplicates: number
  conflicts: number
  seconds: number
}

/** Where a source's passages go. */
export interface IngestTarget {
  /** The store written: the passages, and the source's row in `sources`. */
  store: PassageStore
  /** The store named in messages (an append's is the store it joins, not its staging). */
  dir: string
  /** An append's: the published store, whose passages count as present already and whose last
   * row the staged rows follow, so they keep their rowids when published. */
  published?: { store: PassageStore; lastRowid: number }
  /** What undoes this build when a source changed under it (AMBIGQA_ERR_SOURCE_CHANGED). */
  changedFix?: string
}

interface SourceRow {
  fingerprint: string
  records: number
  byte_offset: number | null
  line: number | null
  passages: number
  duplicates: number
  skipped: number
  done: number
}

export async function ingestSource(target: IngestTarget, spec: SourceSpec, options: BuildOptions, report: BuildReport): Promise<void> {
  const { log } = options
  const source = buildSource(spec)
  const { path, format, key, fingerprint } = source
  const db = target.store.db
  let row = db.prepare('SELECT * FROM sources WHERE key = ?').get(key) as SourceRow | undefined
  const from = resumePoint(source, row && { ...row, byteOffset: row.byte_offset }, target.dir, log, target.changedFix)
  if (!from) return
  if (!row) {
    db.prepare('INSERT INTO sources (key, path, format, fingerprint) VALUES (?, ?, ?, ?)').run(key, path, format, fingerprint)
    row = db.prepare('SELECT * FROM sources WHERE key = ?').get(key) as SourceRow
  }
  const reader = await createReader(path, format, { workers: options.workers })

  // A null rowid takes the next one; an append names each, after the published store's last.
  const insert = db.prepare('INSERT OR IGNORE INTO passages (rowid, id, title, text) VALUES (?, ?, ?, ?)')
  const existing = db.prepare('SELECT title, text FROM passages WHERE id = ?')
  const lastRowid = db.prepare('SELECT max(rowid) AS n FROM passages')
  const published = target.published && { lastRowid: target.published.lastRowid, byId: target.published.store.db.prepare('SELECT title, text FROM passages WHERE id = ?') }
  const advance = db.prepare(
    `UPDATE sources SET records = ?, byte_offset = ?, line = ?, passages = passages + ?, duplicates = duplicates + ?, skipped = skipped + ?
     WHERE key = ?`,
  )
  let kept = row.passages + row.duplicates
  let skipped = row.skipped
  const commit = db.transaction((batch: Passage[], skippedInBatch: number, position: ResumePoint) => {
    let next = published ? Math.max((lastRowid.get() as { n: number | null }).n ?? 0, published.lastRowid) + 1 : null
    let added = 0
    let duplicates = 0
    for (const p of batch) {
      const before = published?.byId.get(p.id) as { title: string; text: string } | undefined
      if (!before && insert.run(next, p.id, p.title, p.text).changes === 1) {
        added += 1
        if (next !== null) next += 1
        continue
      }
      duplicates += 1
      const old = before ?? (existing.get(p.id) as { title: string; text: string })
      if (old.title !== p.title || old.text !== p.text) {
        report.conflicts += 1
        if (report.conflicts <= 5) log.warn({ id: p.id, source: path }, 'a passage with this id and different content is already stored: kept the first; use --id-prefix to keep both')
      }
    }
    advance.run(position.records, position.byteOffset ?? null, position.line ?? null, added, duplicates, skippedInBatch, key)
    report.added += added
    report.duplicates += duplicates
    kept += added + duplicates
    skipped += skippedInBatch
  })
  const read = await readInBatches(reader, from, { label: `reading ${spec.path}`, onError: options.onError, batchSize: options.batchSize, log, ...(spec.idPrefix ? { idPrefix: spec.idPrefix } : {}) }, commit)
  report.skipped += read.skipped
  finishSource(source, kept, skipped, log)
  db.prepare('UPDATE sources SET done = 1 WHERE key = ?').run(key)
}

/** BM25 segments for every passage of `store` not yet in one (rows up to `after` are another store's). */
export async function indexPending(store: PassageStore, options: BuildOptions, after?: number): Promise<number> {
  let done = 0
  let total = 0
  const progress = new Progress({ label: 'indexing', unit: 'passages', log: options.log, fraction: () => (total > 0 ? done / total : undefined) })
  const indexed = await indexPendingPassages(store, { segmentSize: options.segmentSize, workers: options.workers, ...(after !== undefined ? { after } : {}) }, (p) => {
    done = p.indexed
    total = p.total
    progress.update(done)
    options.onProgress?.({ indexed: done, total })
  })
  if (indexed > 0) progress.done(indexed)
  return indexed
}
