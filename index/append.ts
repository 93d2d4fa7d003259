// New sources for a store that is ready, without it ever being unready: the passages and their
// BM25 segments are built in a staging store beside it (STORE/append/, the same schema; its rows
// numbered after the store's last, so segments and postings keep their meaning), resumable as a
// first build is, and published in one SQLite transaction only once every source is read and
// indexed. Until then the store serves what it had: searches, `index encode`, its vectors and its
// ANN index are untouched (no vector is written, so the index's stamp still matches). An append
// that failed or was killed is finished by running it again, or dropped by `index rollback`;
// deleting the store is never the way out.
//
// `rollbackStore` also repairs a store an older version left in state 'building' after a failed
// append (it wrote appends into the store itself), when it can tell what was published before.
import { randomUUID } from 'node:crypto'
import { existsSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { AmbigqaError, ERR_APPEND_UNFINISHED, ERR_SOURCE_CHANGED, ERR_STORE_NOT_FOUND, ERR_USAGE } from '../core/errors.js'
import type { Logger } from '../core/log.js'
import { PassageStore, STORE_FILE } from '../retriever/passage-store.js'
import { indexPending, ingestSource, type BuildOptions, type BuildReport } from './ingest-source.js'
import { buildSource, resumePoint, type KeptPosition } from './sources/resume.js'

const STAGING = 'append'
/** A staging folder being removed: renamed first, so a kill mid-removal leaves no half of one. */
const DROPPED = 'append.dropped-'
/** Staging meta: the store's last rowid when the append began, and the append's own name. */
const BASE_KEY = 'append_base'
const TOKEN_KEY = 'append_token'
/** Store meta: the name of the last append published, so its staging, if a kill left it, is known done. */
const PUBLISHED_KEY = 'append_published'

export interface StagedSource { key: string; path: string; format: string; passages: number; skipped: number; done: boolean }

/** An append staged beside a store and not yet published (or published, its staging not yet removed). */
export interface StagedAppend {
  passages: number
  sources: StagedSource[]
  /** The store's last rowid when the append began; undefined when the staging never got that far. */
  base: number | undefined
  published: boolean
}

export function stagingDir(storeDir: string): string {
  return join(storeDir, STAGING)
}

/** The append staged beside the store at `storeDir`, read without writing; undefined when none. */
export function readStagedAppend(storeDir: string, publishedToken: string | undefined): StagedAppend | undefined {
  const file = join(stagingDir(storeDir), STORE_FILE)
  if (!existsSync(file)) return undefined
  let db: Database.Database | undefined
  try {
    db = new Database(file, { readonly: true, fileMustExist: true })
    const meta = (key: string) => (db!.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value
    const base = meta(BASE_KEY)
    const token = meta(TOKEN_KEY)
    const sources = (db.prepare('SELECT key, path, format, passages, skipped, done FROM sources ORDER BY rowid').all() as (Omit<StagedSource, 'done'> & { done: number })[])
      .map((s) => ({ ...s, done: s.done === 1 }))
    const passages = (db.prepare('SELECT count(*) AS n FROM passages').get() as { n: number }).n
    return { passages, sources, base: base === undefined ? undefined : Number(base), published: token !== undefined && token === publishedToken }
  } catch {
    // Killed before its tables were made: nothing staged.
    return { passages: 0, sources: [], base: undefined, published: false }
  } finally {
    db?.close()
  }
}

/** The sources of `options` not yet in `store` (ready, under the build lock), staged and published. */
export async function appendToStore(store: PassageStore, options: BuildOptions, report: BuildReport): Promise<void> {
  const { log } = options
  removeDropped(store.dir)
  let staged = readStagedAppend(store.dir, store.meta(PUBLISHED_KEY))
  if (staged && (staged.published || staged.base === undefined)) {
    drop(store.dir)
    staged = undefined
  }
  // What the store holds already is skipped, as a build run twice skips it.
  const keptBy = store.db.prepare('SELECT fingerprint, records, byte_offset AS byteOffset, line, done FROM sources WHERE key = ?')
  const fresh = options.sources.filter((spec) => {
    const source = buildSource(spec)
    const kept = keptBy.get(source.key) as KeptPosition | undefined
    if (!kept?.done) return true
    resumePoint(source, kept, store.dir, log)
    return false
  })
  if (staged) {
    const asked = new Set(fresh.map((spec) => buildSource(spec).key))
    const left = staged.sources.filter((s) => !s.done && !asked.has(s.key))
    if (left.length > 0) {
      throw ERR_APPEND_UNFINISHED(store.dir, `an unfinished append to the passage store at ${store.dir} is staged (${staged.passages} passages, not yet served), ` +
        `and this build does not name its source ${left.map((s) => s.path).join(', ')}`)
    }
  }
  if (fresh.length === 0 && !staged) return

  const last = lastRowid(store.db)
  const staging = PassageStore.openForBuild(stagingDir(store.dir))
  try {
    if (staging.meta(BASE_KEY) === undefined) {
      staging.setMeta(BASE_KEY, String(last))
      staging.setMeta(TOKEN_KEY, randomUUID())
    }
    const base = Number(staging.meta(BASE_KEY))
    if (base !== last) throw ERR_APPEND_UNFINISHED(store.dir, `the unfinished append to the passage store at ${store.dir} follows passage ${base}, but the store now ends at passage ${last}, so it cannot be published`)
    const changedFix = `Drop the unfinished append with \`ambigqa index rollback --store ${store.dir}\` (the store serves what it had meanwhile), then build again`
    const target = { store: staging, dir: store.dir, published: { store, lastRowid: base }, changedFix }
    try {
      for (const spec of fresh) await ingestSource(target, spec, options, report)
      await indexPending(staging, options, base)
    } catch (err) {
      throw unpublished(err, store)
    }
  } finally {
    staging.close()
  }
  const published = publish(store)
  drop(store.dir)
  log.info({ store: store.dir, passages: published }, 'append published')
  const models = store.db.prepare('SELECT DISTINCT model FROM dense_vectors').pluck().all() as string[]
  if (published > 0) {
    for (const model of models) log.warn({ store: store.dir, model, passages: published }, `the new passages have no ${model} vectors yet: run ambigqa index encode --store ${store.dir} --model ${model}`)
  }
}

/** A failure of an append, said with what it means for the store and the ways on. */
function unpublished(err: unknown, store: PassageStore): unknown {
  // A changed source's own message says the way on: it cannot resume.
  if (!(err instanceof AmbigqaError) || err.code === ERR_SOURCE_CHANGED.code) return err
  const note = `The append is unfinished and unpublished: the store at ${store.dir} serves its ${store.count()} passages as before. ` +
    'Run the same build again to resume it (with --on-error skip to skip bad records), ' +
    `or drop it with \`ambigqa index rollback --store ${store.dir}\``
  return new AmbigqaError(err.code, `${err.message}. ${note}`, err.statusCode, { cause: err })
}

/** Moves the staged passages, segments, postings and source rows into the store, in one
 * transaction: a kill before its commit leaves the store as it was and the staging whole. */
function publish(store: PassageStore): number {
  const db = store.db
  db.prepare('ATTACH DATABASE ? AS staged').run(join(stagingDir(store.dir), STORE_FILE))
  try {
    return db.transaction(() => {
      const one = (sql: string) => (db.prepare(sql).get() as { n: number | null } | undefined)?.n ?? null
      const base = Number(one(`SELECT value AS n FROM staged.meta WHERE key = '${BASE_KEY}'`))
      const last = one('SELECT max(rowid) AS n FROM main.passages') ?? 0
      const stagedLast = one('SELECT max(rowid) AS n FROM staged.passages') ?? base
      const indexed = one('SELECT max(last_rowid) AS n FROM staged.segments') ?? base
      const unread = one('SELECT count(*) AS n FROM staged.sources WHERE done = 0') ?? 0
      if (base !== last || indexed !== stagedLast || unread > 0) {
        throw ERR_APPEND_UNFINISHED(store.dir, `the append staged for the passage store at ${store.dir} is not whole (it follows passage ${base}, the store ends at ${last}; ` +
          `${unread} sources unread, passages indexed to ${indexed} of ${stagedLast})`)
      }
      const offset = (one('SELECT max(seg) AS n FROM main.segments') ?? -1) + 1
      const added = db.prepare('INSERT INTO main.passages (rowid, id, title, text) SELECT rowid, id, title, text FROM staged.passages ORDER BY rowid').run().changes
      db.prepare(`INSERT INTO main.segments (seg, first_rowid, last_rowid, title_norms, text_norms, title_docs, text_docs, title_terms, text_terms)
        SELECT seg + ?, first_rowid, last_rowid, title_norms, text_norms, title_docs, text_docs, title_terms, text_terms FROM staged.segments`).run(offset)
      db.prepare('INSERT INTO main.postings (term, field, seg, df, data, skips, maxima) SELECT term, field, seg + ?, df, data, skips, maxima FROM staged.postings').run(offset)
      // WHERE true: without it SQLite would read ON CONFLICT as a join's ON.
      db.prepare(`INSERT INTO main.sources (key, path, format, fingerprint, records, byte_offset, line, passages, duplicates, skipped, done)
        SELECT key, path, format, fingerprint, records, byte_offset, line, passages, duplicates, skipped, done FROM staged.sources WHERE true
        ON CONFLICT (key) DO UPDATE SET path = excluded.path, format = excluded.format, fingerprint = excluded.fingerprint, records = excluded.records,
          byte_offset = excluded.byte_offset, line = excluded.line, passages = excluded.passages, duplicates = excluded.duplicates,
          skipped = excluded.skipped, done = excluded.done`).run()
      const token = one(`SELECT value AS n FROM staged.meta WHERE key = '${TOKEN_KEY}'`)
      store.setMeta(PUBLISHED_KEY, String(token))
      return added
    })()
  } finally {
    db.prepare('DETACH DATABASE staged').run()
  }
}

export interface RollbackReport {
  /** append: a staged append dropped; build: an older version's unfinished append undone in the store; nothing. */
  undone: 'append' | 'build' | 'nothing'
  /** Passages dropped. */
  dropped: number
  /** Sources of what was dropped that were not finished. */
  sources: string[]
  /** Passages the store serves now. */
  passages: number
}

/** `ambigqa index rollback`: the store back to what it served before an unfinished append. */
export function rollbackStore(dir: string, log: Logger): RollbackReport {
  const abs = resolve(dir)
  if (!existsSync(join(abs, STORE_FILE))) throw ERR_STORE_NOT_FOUND(abs)
  const store = PassageStore.openForWrite(abs)
  try {
    removeDropped(abs)
    const staged = readStagedAppend(abs, store.meta(PUBLISHED_KEY))
    if (staged) {
      drop(abs)
      const report: RollbackReport = staged.published
        ? { undone: 'nothing', dropped: 0, sources: [], passages: store.count() }
        : { undone: 'append', dropped: staged.passages, sources: staged.sources.map((s) => s.path), passages: store.count() }
      log.info({ store: abs, ...report }, 'append rolled back')
      return report
    }
    if (store.meta('state') === 'ready') return { undone: 'nothing', dropped: 0, sources: [], passages: store.count() }
    return rollbackUnfinishedBuild(store, log)
  } finally {
    store.close()
  }
}

/** A store left 'building' by an older version's failed append: its finished sources fill rows
 * 1..P, and their segments end exactly at P only if a build once finished there; then what lies
 * past P is the unfinished append's, and goes. Anything else is a first build, resumed, not undone. */
function rollbackUnfinishedBuild(store: PassageStore, log: Logger): RollbackReport {
  const db = store.db
  const one = (sql: string) => (db.prepare(sql).get() as { n: number | null }).n ?? 0
  const end = one('SELECT max(last_rowid) AS n FROM segments')
  const finished = one('SELECT sum(passages) AS n FROM sources WHERE done = 1')
  if (end === 0 || end !== finished) {
    throw ERR_USAGE(`nothing to roll back to: the passage store at ${store.dir} was never ready before its unfinished build (${finished} passages of finished sources, ${end} indexed)`,
      `Run the same \`ambigqa index build\` again to resume it, or delete ${store.dir} to start over`)
  }
  const report = db.transaction((): RollbackReport => {
    const sources = db.prepare('SELECT path FROM sources WHERE done = 0 ORDER BY rowid').pluck().all() as string[]
    db.prepare('DELETE FROM postings WHERE seg IN (SELECT seg FROM segments WHERE first_rowid > ?)').run(end)
    db.prepare('DELETE FROM segments WHERE first_rowid > ?').run(end)
    db.prepare('DELETE FROM dense_vectors WHERE last_rowid > ?').run(end)
    const dropped = db.prepare('DELETE FROM passages WHERE rowid > ?').run(end).changes
    db.prepare('DELETE FROM sources WHERE done = 0').run()
    store.setState('ready')
    return { undone: 'build', dropped, sources, passages: store.count() }
  })()
  log.info({ store: store.dir, ...report }, 'unfinished build rolled back')
  return report
}

function lastRowid(db: Database.Database): number {
  return (db.prepare('SELECT max(rowid) AS n FROM passages').get() as { n: number | null }).n ?? 0
}

function drop(storeDir: string): void {
  const dir = stagingDir(storeDir)
  if (!existsSync(dir)) return
  const aside = join(storeDir, `${DROPPED}${process.pid}-${Date.now()}`)
  renameSync(dir, aside)
  rmSync(aside, { recursive: true, force: true })
}

function removeDropped(storeDir: string): void {
  for (const name of readdirSync(storeDir)) if (name.startsWith(DROPPED)) rmSync(join(storeDir, name), { recursive: true, force: true })
}
