// The bookkeeping a build does per source to resume where it stopped, whatever keeps it (the
// store's `sources` table, an Elasticsearch index's _meta): which source a spec names, whether
// it is done or changed under a paused build, where its reading picks up again, and what its end
// must check. Shared by build-index.ts and build-elasticsearch.ts so the two resume alike.
import { resolve } from 'node:path'
import { ERR_SOURCE_CHANGED, ERR_SOURCE_EMPTY } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import { detectFormat, type SourceFormat } from './formats.js'
import type { ResumePoint } from './passage.js'
import { fingerprintOf } from './read-in-batches.js'

export interface SourceSpec {
  path: string
  format?: SourceFormat
  /** Prepended to every id of the source, to keep ids of different sources apart. */
  idPrefix?: string
}

/** One source of a build: its absolute path and format, its key among the build's sources (the
 * same file read with another format or id prefix is another source), and its fingerprint. */
export interface BuildSource {
  path: string
  format: SourceFormat
  key: string
  fingerprint: string
}

/** What a build kept of a source after its last committed batch (null: a line-less format). */
export interface KeptPosition {
  fingerprint: string
  records: number
  byteOffset?: number | null
  line?: number | null
  done: boolean | number
}

export function buildSource(spec: SourceSpec): BuildSource {
  const path = resolve(spec.path)
  const format = spec.format ?? detectFormat(path)
  return { path, format, key: `${path}|${format}|${spec.idPrefix ?? ''}`, fingerprint: fingerprintOf(path) }
}

/**
 * Where to read the source from, given what the build kept of it (`target` names the store or
 * index, for the error): undefined when it is already done (a file changed since is said, not
 * read again: the finished store stays as built), AMBIGQA_ERR_SOURCE_CHANGED when the file changed
 * under an unfinished build (the rest of it cannot follow what was read; `changedFix` says what
 * undoes that build), else the point after its last committed batch (the start for a new one).
 */
export function resumePoint(source: BuildSource, kept: KeptPosition | undefined, target: string, log: Logger, changedFix?: string): ResumePoint | undefined {
  const changed = kept !== undefined && kept.fingerprint !== source.fingerprint
  if (kept?.done) {
    // A copy of the same data (a re-provisioned folder) has a new mtime: a finished store stays usable.
    if (changed) log.warn({ source: source.path, target }, 'source changed since it was indexed; the store keeps what it read then (delete the store and build again to read it anew)')
    else log.info({ source: source.path }, 'source already indexed, skipping')
    return undefined
  }
  if (changed) throw ERR_SOURCE_CHANGED(source.path, target, changedFix)
  if (!kept) return { records: 0 }
  const from: ResumePoint = { records: kept.records, ...(kept.byteOffset != null ? { byteOffset: kept.byteOffset } : {}), ...(kept.line != null ? { line: kept.line } : {}) }
  if (from.records > 0) log.info({ source: source.path, records: from.records }, 'resuming an interrupted build')
  return from
}

/** The checks at a source's end, over all its runs: it must have given something, and the
 * records skipped (--on-error skip) are said. */
export function finishSource(source: BuildSource, kept: number, skipped: number, log: Logger): void {
  if (kept === 0 && skipped === 0) throw ERR_SOURCE_EMPTY(source.path)
  if (skipped > 0) log.warn({ source: source.path, skipped }, `skipped ${skipped} bad records (--on-error skip)`)
}
