// Worker entry (dist/index/segment-worker.js): reads a range of passages from the store and
// builds its segment; the main thread writes segments in order.
import Database from 'better-sqlite3'
import { serveJobs } from '../../core/worker-pool.js'
import { buildSegment, type SegmentData, type SegmentRow } from './segment-builder.js'

export interface SegmentJob {
  dbPath: string
  first: number
  last: number
}

const databases = new Map<string, Database.Database>()

export function runSegmentJob(job: SegmentJob, db?: Database.Database): SegmentData {
  let source = db ?? databases.get(job.dbPath)
  if (!source) databases.set(job.dbPath, (source = new Database(job.dbPath, { readonly: true, fileMustExist: true })))
  const rows = source.prepare('SELECT rowid, title, text FROM passages WHERE rowid BETWEEN ? AND ? ORDER BY rowid').iterate(job.first, job.last) as Iterable<SegmentRow>
  return buildSegment(job.first, job.last, rows)
}

if (!(await import('node:worker_threads')).isMainThread) {
  serveJobs<SegmentJob, SegmentData>(runSegmentJob, (s) => [s.norms[0].buffer, s.norms[1].buffer, s.postingFields.buffer, s.postingDfs.buffer, s.postingOffsets.buffer, s.postingData.buffer, s.skipOffsets.buffer, s.skipData.buffer, s.impactOffsets.buffer, s.impactData.buffer])
}
