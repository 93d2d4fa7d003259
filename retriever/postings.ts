// The BM25 posting format, written by the segment builder and read by the BM25 retriever; this
// header is its one description.
//
// A posting list holds one (term, field)'s passages within one segment, in row id order, as
// (doc delta, term frequency) pairs of LEB128 varints (7 bits a byte, low bits first, the high
// bit set on every byte but the last): small, and fast to decode. The first delta is from the
// segment's base (its first row id - 1), each next one from the previous doc, so no delta is 0.
//
// A list of more than SKIP_BLOCK postings also has a skip table: per block of SKIP_BLOCK
// postings (the last block may be shorter), two varints: the block's last doc minus the
// previous block's last doc (the base, for the first block), and the block's end byte minus the
// previous block's end byte (0, for the first), both relative to the list. A query that needs
// only a few passages of a long list decodes the blocks holding them, not the whole list.
// Shorter lists have no skip table (null in the store): the whole list is one block.
//
// Since store schema 3, a list with a skip table also has block impacts (`maxima` in the store),
// what block-max query evaluation bounds a block's score with: per skip block, a count n, then n
// (norm byte, tf) varint pairs, norms ascending and tfs ascending: the pairs of the block that no
// other posting of the block beats on both counts (a higher tf and a shorter field). BM25 grows
// with tf and falls with length, so the block's best score is one of these pairs' for any k1 and
// b, which are chosen at query time: that is why pairs are stored and not a score (Lucene keeps
// the same "competitive impacts" per block). Lists of one block have none: reading their at most
// SKIP_BLOCK postings costs less than storing the pairs for every short list of a segment.
//
// Decoding is the inner loop of every BM25 query, so the reader is a cursor made once per list
// and stepped without allocating, its doc and tf read as fields.

/** The passage fields indexed, in the order of a posting's field number and of a segment's norms. */
export const FIELDS = ['title', 'text'] as const
export type Field = (typeof FIELDS)[number]

export class VarintWriter {
  private buffer = Buffer.allocUnsafe(1024)
  private size = 0

  write(value: number): void {
    if (this.size + 5 > this.buffer.length) {
      const bigger = Buffer.allocUnsafe(this.buffer.length * 2)
      this.buffer.copy(bigger, 0, 0, this.size)
      this.buffer = bigger
    }
    while (value >= 0x80) {
      this.buffer[this.size++] = (value & 0x7f) | 0x80
      value >>>= 7
    }
    this.buffer[this.size++] = value
  }

  get length(): number {
    return this.size
  }

  take(): Buffer {
    const out = Buffer.from(this.buffer.subarray(0, this.size))
    this.size = 0
    return out
  }
}

/** Postings per block of the skip table. */
export const SKIP_BLOCK = 128

/**
 * Appends one posting list to `data` and, when it is longer than a block, its skip table to
 * `skips`. `postings` interleaves (doc, tf) pairs, docs ascending and above `base`.
 */
export function writePostingList(
  postings: readonly number[],
  base: number,
  data: VarintWriter,
  skips: VarintWriter,
  impacts?: { norms: Uint8Array; out: VarintWriter },
): void {
  const start = data.length
  let previous = base
  const blocks = postings.length / 2 > SKIP_BLOCK
  let blockDoc = base
  let blockEnd = 0
  for (let i = 0; i < postings.length; i += 2) {
    data.write(postings[i]! - previous)
    data.write(postings[i + 1]!)
    previous = postings[i]!
    // norms[doc - base - 1]: the norms of the segment, whose first row is base + 1.
    if (blocks && impacts) noteImpact(postings[i + 1]!, impacts.norms[postings[i]! - base - 1]!)
    if (blocks && ((i / 2 + 1) % SKIP_BLOCK === 0 || i + 2 === postings.length)) {
      skips.write(previous - blockDoc)
      skips.write(data.length - start - blockEnd)
      if (impacts) writeImpacts(impacts.out)
      blockDoc = previous
      blockEnd = data.length - start
    }
  }
}

// The block being written: its highest tf per norm byte (0: none). Module state, reset by
// writeImpacts, so that writing allocates nothing per block.
const blockTfByNorm = new Int32Array(256)

function noteImpact(tf: number, norm: number): void {
  if (tf > blockTfByNorm[norm]!) blockTfByNorm[norm] = tf
}

/** Writes the block's competitive (norm, tf) pairs and forgets the block. */
function writeImpacts(out: VarintWriter): void {
  const pairs: number[] = []
  let bestTf = 0
  // Norms ascending: a pair counts only if its tf beats every shorter field's.
  for (let norm = 0; norm < 256; norm++) {
    const tf = blockTfByNorm[norm]!
    if (tf > bestTf) {
      pairs.push(norm, tf)
      bestTf = tf
    }
  }
  blockTfByNorm.fill(0)
  out.write(pairs.length / 2)
  for (const value of pairs) out.write(value)
}

/**
 * Per block of a list's impacts (as written above), the most one posting of the block adds to a
 * passage's score: max over the pairs of weight * tf / (tf + normCache[norm]), the very
 * expression the scorer uses. Writes `blocks` values into `out` from `offset`.
 */
export function readBlockMaxima(impacts: Uint8Array, weight: number, normCache: Float64Array, out: Float64Array, offset: number, blocks: number): void {
  let i = 0
  const varint = () => {
    let byte = impacts[i++]!
    let value = byte & 0x7f
    for (let shift = 7; byte & 0x80; shift += 7) {
      byte = impacts[i++]!
      value |= (byte & 0x7f) << shift
    }
    return value
  }
  for (let b = 0; b < blocks; b++) {
    let best = 0
    for (let n = varint(); n > 0; n--) {
      const norm = varint()
      const tf = varint()
      const score = (weight * tf) / (tf + normCache[norm]!)
      if (score > best) best = score
    }
    out[offset + b] = best
  }
}

/** Steps through the (doc, tf) pairs of a byte range of a posting list. */
export class PostingCursor {
  /** The current posting, after next() returned true. */
  doc = 0
  tf = 0
  // A Buffer, as the store's blobs are, so that this field only ever holds one kind of array.
  private data: Uint8Array = Buffer.alloc(0)
  private i = 0
  private end = 0

  /** Bytes [start, end) of `data`, whose first delta counts from `doc` (the segment's base, or
   * the last doc of the skip block before). */
  reset(data: Uint8Array, start: number, end: number, doc: number): this {
    this.data = data
    this.i = start
    this.end = end
    this.doc = doc
    return this
  }

  next(): boolean {
    if (this.i >= this.end) return false
    const data = this.data
    let i = this.i
    let byte = data[i++]!
    let delta = byte & 0x7f
    for (let shift = 7; byte & 0x80; shift += 7) {
      byte = data[i++]!
      delta |= (byte & 0x7f) << shift
    }
    byte = data[i++]!
    let tf = byte & 0x7f
    for (let shift = 7; byte & 0x80; shift += 7) {
      byte = data[i++]!
      tf |= (byte & 0x7f) << shift
    }
    this.i = i
    this.doc += delta
    this.tf = tf
    return true
  }
}

/** The blocks of one list: block b spans bytes [ends[b-1], ends[b]) and docs (lasts[b-1],
 * lasts[b]] (the base and byte 0 before the first). Without a skip table, one block. */
export function readSkipTable(skips: Uint8Array | null, base: number, last: number, dataLength: number): { lasts: number[]; ends: number[] } {
  const lasts: number[] = []
  const ends: number[] = []
  if (skips === null) {
    lasts.push(last)
    ends.push(dataLength)
    return { lasts, ends }
  }
  let doc = base
  let end = 0
  for (let i = 0; i < skips.length; ) {
    let byte = skips[i++]!
    let value = byte & 0x7f
    for (let shift = 7; byte & 0x80; shift += 7) {
      byte = skips[i++]!
      value |= (byte & 0x7f) << shift
    }
    if (lasts.length === ends.length) lasts.push((doc += value))
    else ends.push((end += value))
  }
  return { lasts, ends }
}
