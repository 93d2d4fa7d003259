// `ambigqa index build`: sources → passages in the store → BM25 segments → state 'ready'.
// Each batch of passages is committed together with the source position after it, so a build
// killed at any moment resumes where its last commit ended and adds nothing twice.
import { resolve } from 'node:path'
import { ERR_SOURCE_EMPTY } from '../core/errors.js'
import type { Logger } from '../core/log.js'
import { Progress } from '../core/progress.js'
import { indexPendingPassages } from './bm25-index-writer.js'
import { PassageStore } from '../retriever/passage-store.js'
import { createReader } from './formats.js'
import type { Passage } from '../core/passage.js'
import type { ResumePoint } from './passage.js'
import { readInBatches } from './read-in-batches.js'
import { buildSource, finishSource, resumePoint, type SourceSpec } from './resume.js'

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

interface SourceRow {
  fingerprint: string
  records: number
  byte_offset: number | null
  line: number | null
  passages: number
  skipped: number
  done: number
}

export async function buildIndex(options: BuildOptions): Promise<BuildReport> {
  const started = Date.now()
  const { log } = options
  const store = PassageStore.openForBuild(options.store)
  const report: BuildReport = { passages: 0, added: 0, skipped: 0, duplicates: 0, conflicts: 0, seconds: 0 }
  try {
    for (const spec of options.sources) await ingestSource(store, spec, options, report)
    const pending = (store.db.prepare('SELECT max(rowid) AS n FROM passages').get() as { n: number | null }).n ?? 0
    const progress = new Progress({ label: 'indexing', unit: 'passages', log, fraction: () => (total > 0 ? done / total : undefined) })
    let done = 0
    let total = 0
    const indexed = await indexPendingPassages(store, { segmentSize: options.segmentSize, workers: options.workers }, (p) => {
      done = p.indexed
      total = p.total
      progress.update(done)
      options.onProgress?.({ indexed: done, total })
    })
    if (indexed > 0) progress.done(indexed)
    if (pending === 0) throw ERR_SOURCE_EMPTY(options.sources.map((s) => s.path).join(', '))
    store.setState('ready')
    report.passages = store.count()
  } finally {
    store.close()
  }
  report.seconds = (Date.now() - started) / 1000
  log.info({ ...report, store: resolve(options.store) }, 'index build finished')
  return report
}

async function ingestSource(store: PassageStore, spec: SourceSpec, options: BuildOptions, report: BuildReport): Promise<void> {
  const { log } = options
  const source = buildSource(spec)
  const { path, format, key, fingerprint } = source
  const db = store.db
  let row = db.prepare('SELECT * FROM sources WHERE key = ?').get(key) as SourceRow | undefined
  const from = resumePoint(source, row && { ...row, byteOffset: row.byte_offset }, store.dir, log)
  if (!from) return
  if (!row) {
    db.prepare('INSERT INTO sources (key, path, format, fingerprint) VALUES (?, ?, ?, ?)').run(key, path, format, fingerprint)
    row = db.prepare('SELECT * FROM sources WHERE key = ?').get(key) as SourceRow
  }
  const reader = await createReader(path, format, { workers: options.workers })

  const insert = db.prepare('INSERT OR IGNORE INTO passages (id, title, text) VALUES (?, ?, ?)')
  const existing = db.prepare('SELECT title, text FROM passages WHERE id = ?')
  const advance = db.prepare(
    `UPDATE sources SET records = ?, byte_offset = ?, line = ?, passages = passages + ?, duplicates = duplicates + ?, skipped = skipped + ?
     WHERE key = ?`,
  )
  let total = row.passages
  let skipped = row.skipped
  const commit = db.transaction((batch: Passage[], skippedInBatch: number, position: ResumePoint) => {
    let added = 0
    let duplicates = 0
    for (const p of batch) {
      if (insert.run(p.id, p.title, p.text).changes === 1) {
        added += 1
        continue
      }
      duplicates += 1
      const old = existing.get(p.id) as { title: string; text: string }
      if (old.title !== p.title || old.text !== p.text) {
        report.conflicts += 1
        if (report.conflicts <= 5) log.warn({ id: p.id, source: path }, 'a passage with this id and different content is already stored: kept the first; use --id-prefix to keep both')
      }
    }
    advance.run(position.records, position.byteOffset ?? null, position.line ?? null, added, duplicates, skippedInBatch, key)
    report.added += added
    report.duplicates += duplicates
    total += added
    skipped += skippedInBatch
  })
  const read = await readInBatches(reader, from, { label: `reading ${spec.path}`, onError: options.onError, batchSize: options.batchSize, log, ...(spec.idPrefix ? { idPrefix: spec.idPrefix } : {}) }, commit)
  report.skipped += read.skipped
  finishSource(source, total, skipped, log)
  db.prepare('UPDATE sources SET done = 1 WHERE key = ?').run(key)
}
