// Builds the BM25 inverted index of a store in segments of consecutive passages, each written
// in one transaction: an interrupted indexing run resumes at the first missing segment.
import { termFrequencies } from './english-analyzer.js'
import { lengthToNorm } from './lucene-norms.js'
import type { PassageStore } from './passage-store.js'
import { VarintWriter } from './varint.js'

export const FIELDS = ['title', 'text'] as const
export type Field = (typeof FIELDS)[number]

interface TermPostings {
  docs: number[]
  tfs: number[]
}

export interface IndexProgress {
  indexed: number
  total: number
}

/** Indexes every passage not yet in a segment. Returns how many it indexed. */
export function indexPendingPassages(
  store: PassageStore,
  segmentSize: number,
  onProgress: (progress: IndexProgress) => void = () => {},
): number {
  const db = store.db
  const last = (db.prepare('SELECT max(last_rowid) AS n FROM segments').get() as { n: number | null }).n ?? 0
  const maxRowid = (db.prepare('SELECT max(rowid) AS n FROM passages').get() as { n: number | null }).n ?? 0
  const total = maxRowid - last
  const select = db.prepare('SELECT rowid, title, text FROM passages WHERE rowid BETWEEN ? AND ? ORDER BY rowid')
  const insertSegment = db.prepare(
    `INSERT INTO segments (seg, first_rowid, last_rowid, title_norms, text_norms, title_docs, text_docs, title_terms, text_terms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const insertPostings = db.prepare('INSERT INTO postings (term, field, seg, df, data) VALUES (?, ?, ?, ?, ?)')
  const nextSeg = () => ((db.prepare('SELECT max(seg) AS n FROM segments').get() as { n: number | null }).n ?? -1) + 1

  let indexed = 0
  for (let first = last + 1; first <= maxRowid; first += segmentSize) {
    const end = Math.min(first + segmentSize - 1, maxRowid)
    const span = end - first + 1
    const postings = FIELDS.map(() => new Map<string, TermPostings>())
    const norms = FIELDS.map(() => new Uint8Array(span))
    const docs = [0, 0]
    const terms = [0, 0]
    for (const row of select.iterate(first, end) as Iterable<{ rowid: number; title: string; text: string }>) {
      FIELDS.forEach((field, f) => {
        const { tf, length } = termFrequencies(row[field])
        if (length === 0) return
        docs[f]! += 1
        terms[f]! += length
        norms[f]![row.rowid - first] = lengthToNorm(length)
        const map = postings[f]!
        for (const [term, count] of tf) {
          let list = map.get(term)
          if (!list) map.set(term, (list = { docs: [], tfs: [] }))
          list.docs.push(row.rowid)
          list.tfs.push(count)
        }
      })
      indexed += 1
      if (indexed % 10_000 === 0) onProgress({ indexed, total })
    }
    const writer = new VarintWriter()
    db.transaction(() => {
      const seg = nextSeg()
      insertSegment.run(seg, first, end, Buffer.from(norms[0]!), Buffer.from(norms[1]!), docs[0], docs[1], terms[0], terms[1])
      postings.forEach((map, f) => {
        for (const [term, list] of map) {
          let previous = first - 1
          for (let i = 0; i < list.docs.length; i++) {
            writer.write(list.docs[i]! - previous)
            writer.write(list.tfs[i]!)
            previous = list.docs[i]!
          }
          insertPostings.run(term, f, seg, list.docs.length, writer.take())
        }
      })
    })()
    onProgress({ indexed, total })
  }
  return indexed
}
