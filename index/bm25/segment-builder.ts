// One index segment from a range of passages: length norms, field statistics and postings per
// (term, field), in the format of postings.ts. Pure, so it runs the same on the main thread or a worker.
import { termFrequencies } from '../../retriever/english-analyzer.js'
import { lengthToNorm } from '../../retriever/lucene-norms.js'
import { FIELDS, VarintWriter, writePostingList } from '../../retriever/postings.js'


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
  /** skipData[skipOffsets[i] .. skipOffsets[i + 1]) is the i-th list's skip table (postings.ts). */
  skipOffsets: Uint32Array
  skipData: Uint8Array
  /** impactData[impactOffsets[i] .. impactOffsets[i + 1]) is the i-th list's block impacts
   * (postings.ts); empty where it has no skip table. */
  impactOffsets: Uint32Array
  impactData: Uint8Array
}

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
  const impactOffsets: number[] = [0]
  const impacts = new VarintWriter()
  lists.forEach((map, f) => {
    // Sorted, so a segment's bytes do not depend on the order terms were first seen.
    for (const term of [...map.keys()].sort()) {
      const list = map.get(term)!
      writePostingList(list, first - 1, writer, skips, { norms: norms[f]!, out: impacts })
      postingTerms.push(term)
      fields.push(f)
      dfs.push(list.length / 2)
      offsets.push(writer.length)
      skipOffsets.push(skips.length)
      impactOffsets.push(impacts.length)
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
    impactOffsets: Uint32Array.from(impactOffsets),
    impactData: impacts.take(),
  }
}
