// Builds the BM25 inverted index of a store in segments of consecutive passages. Segments are
// built on worker threads and written strictly in order, each in one transaction, so an
// interrupted indexing run resumes at the first missing segment.
import { join } from 'node:path'
import { createJobRunner, orderedMap } from '../../core/worker-pool.js'
import { STORE_FILE, type PassageStore } from '../../retriever/passage-store.js'
import type { SegmentData } from './segment-builder.js'
import { runSegmentJob, type SegmentJob } from './segment-worker.js'


export interface IndexProgress {
  indexed: number
  total: number
}

/** Indexes every passage not yet in a segment. Returns how many it indexed. `after`: rows up to
 * it belong to another store (an append's staging continues the rowids of the store it joins). */
export async function indexPendingPassages(
  store: PassageStore,
  options: { segmentSize: number; workers: number; after?: number },
  onProgress: (progress: IndexProgress) => void = () => {},
): Promise<number> {
  const db = store.db
  const one = (sql: string) => (db.prepare(sql).get() as { n: number | null }).n
  const last = one('SELECT max(last_rowid) AS n FROM segments') ?? options.after ?? 0
  const maxRowid = one('SELECT max(rowid) AS n FROM passages') ?? 0
  const total = maxRowid - last
  if (total <= 0) return 0
  const jobs: SegmentJob[] = []
  const dbPath = join(store.dir, STORE_FILE)
  for (let first = last + 1; first <= maxRowid; first += options.segmentSize) {
    jobs.push({ dbPath, first, last: Math.min(first + options.segmentSize - 1, maxRowid) })
  }
  // One worker per core is enough; with a single segment the calling thread does it.
  const workers = jobs.length > 1 ? Math.min(options.workers, jobs.length) : 0
  const runner = createJobRunner<SegmentJob, SegmentData>(new URL('./segment-worker.js', import.meta.url), workers, (job) => runSegmentJob(job, db), 'indexing')
  const insertSegment = db.prepare(
    `INSERT INTO segments (seg, first_rowid, last_rowid, title_norms, text_norms, title_docs, text_docs, title_terms, text_terms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const insertPostings = db.prepare('INSERT INTO postings (term, field, seg, df, data, skips, maxima) VALUES (?, ?, ?, ?, ?, ?, ?)')
  const write = db.transaction((s: SegmentData) => {
    const seg = (one('SELECT max(seg) AS n FROM segments') ?? -1) + 1
    insertSegment.run(seg, s.first, s.last, Buffer.from(s.norms[0]), Buffer.from(s.norms[1]), s.docs[0], s.docs[1], s.terms[0], s.terms[1])
    const data = Buffer.from(s.postingData.buffer, s.postingData.byteOffset, s.postingData.byteLength)
    const skips = Buffer.from(s.skipData.buffer, s.skipData.byteOffset, s.skipData.byteLength)
    const impacts = Buffer.from(s.impactData.buffer, s.impactData.byteOffset, s.impactData.byteLength)
    for (let i = 0; i < s.postingTerms.length; i++) {
      const skip = s.skipOffsets[i] === s.skipOffsets[i + 1] ? null : skips.subarray(s.skipOffsets[i], s.skipOffsets[i + 1])
      const maxima = s.impactOffsets[i] === s.impactOffsets[i + 1] ? null : impacts.subarray(s.impactOffsets[i], s.impactOffsets[i + 1])
      insertPostings.run(s.postingTerms[i], s.postingFields[i], seg, s.postingDfs[i], data.subarray(s.postingOffsets[i], s.postingOffsets[i + 1]), skip, maxima)
    }
  })
  let indexed = 0
  try {
    for await (const segment of orderedMap(jobs, (job) => runner.run(job), Math.max(1, workers) + 1)) {
      write(segment)
      indexed += segment.last - segment.first + 1
      onProgress({ indexed, total })
    }
  } finally {
    await runner.close()
  }
  return indexed
}
