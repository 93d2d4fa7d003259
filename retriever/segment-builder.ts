// One index segment from a range of passages: length norms, field statistics and varint
// postings per (term, field). Pure, so it runs the same on the main thread or a worker.
import { termFrequencies } from './english-analyzer.js'
import { lengthToNorm } from './lucene-norms.js'
import { VarintWriter } from './varint.js'

export const FIELDS = ['title', 'text'] as const
export type Field = (typeof FIELDS)[number]

export interface SegmentRow {
  rowid: number
  title: string
  text: string
}

/** Flat and transferable: one array per column, postings data concatenated. */
export interface SegmentData {
  first: number
  last: number
  norms: [Uint8Array, Uint8Array]
  docs: [number, number]
  terms: [number, number]
  postingTerms: string[]
  postingFields: Uint8Array
  postingDfs: Uint32Array
  /** postingData[offsets[i] .. offsets[i + 1]) is the i-th posting list. */
  postingOffsets: Uint32Array
  postingData: Uint8Array
  /** skipData[skipOffsets[i] .. skipOffsets[i + 1]) is the i-th list's skip table (see below). */
  skipOffsets: Uint32Array
  skipData: Uint8Array
}

/** Postings per block of the skip table: a query that only needs a few documents of a long
 * list decodes the blocks holding them, not the whole list. */
export const SKIP_BLOCK = 128

export function buildSegment(first: number, last: number, rows: Iterable<SegmentRow>): SegmentData {
  const span = last - first + 1
  const lists = FIELDS.map(() => new Map<string, number[]>())
  const norms: [Uint8Array, Uint8Array] = [new Uint8Array(span), new Uint8Array(span)]
  const docs: [number, number] = [0, 0]
  const terms: [number, number] = [0, 0]
  for (const row of rows) {
    for (let f = 0; f < FIELDS.length; f++) {
      const { tf, length } = termFrequencies(row[FIELDS[f]!])
      if (length === 0) continue
      docs[f]! += 1
      terms[f]! += length
      norms[f]![row.rowid - first] = lengthToNorm(length)
      const map = lists[f]!
      for (const [term, count] of tf) {
        // Interleaved (rowid, tf) pairs: one array per term keeps the maps small.
        let list = map.get(term)
        if (!list) map.set(term, (list = []))
        list.push(row.rowid, count)
      }
    }
  }
  const postingTerms: string[] = []
  const fields: number[] = []
  const dfs: number[] = []
  const offsets: number[] = [0]
  const skipOffsets: number[] = [0]
  const writer = new VarintWriter()
  const skips = new VarintWriter()
  lists.forEach((map, f) => {
    // Sorted, so a segment's bytes do not depend on the order terms were first seen.
    for (const term of [...map.keys()].sort()) {
      const list = map.get(term)!
      const start = writer.length
      let previous = first - 1
      // Skip table of lists longer than a block: per block, (its last doc - the previous
      // block's last doc, its end byte - the previous block's end byte), relative to the list.
      const blocks = list.length / 2 > SKIP_BLOCK
      let blockDoc = first - 1
      let blockEnd = 0
      for (let i = 0; i < list.length; i += 2) {
        writer.write(list[i]! - previous)
        writer.write(list[i + 1]!)
        previous = list[i]!
        if (blocks && ((i / 2 + 1) % SKIP_BLOCK === 0 || i + 2 === list.length)) {
          skips.write(previous - blockDoc)
          skips.write(writer.length - start - blockEnd)
          blockDoc = previous
          blockEnd = writer.length - start
        }
      }
      postingTerms.push(term)
      fields.push(f)
      dfs.push(list.length / 2)
      offsets.push(writer.length)
      skipOffsets.push(skips.length)
    }
  })
  return {
    first, last, norms, docs, terms, postingTerms,
    postingFields: Uint8Array.from(fields),
    postingDfs: Uint32Array.from(dfs),
    postingOffsets: Uint32Array.from(offsets),
    postingData: writer.take(),
    skipOffsets: Uint32Array.from(skipOffsets),
    skipData: skips.take(),
  }
}
