// Block-max evaluation of a BM25 disjunction (Block-Max MaxScore, evaluated a window of row ids
// at a time, as Lucene 9's MaxScoreBulkScorer does): exactly the exhaustive top k, with the same
// scores to the last bit and the same tie-break (the earlier passage wins).
//
// Row ids are cut into windows of WINDOW row ids. In each window, every list's upper bound is the
// best impact of the blocks it has there (postings.ts), tighter than its weight. Lists are kept in the caller's order (heaviest first, the order today's scorer adds
// scores in); the longest tail of lists whose bounds sum below the k-th best score so far is
// "non-essential": a passage found only in those cannot enter the top k. When every list is
// non-essential the window is skipped without decoding a byte. Otherwise the essential lists
// are decoded over the window into a small score buffer, and only the passages that might still
// reach the top k look the others up, skipping whole blocks to get there.
//
// Why a tail, in list order, and not the smallest bounds wherever they are: a passage's score is
// then summed in list order (the essential lists first, then the tail), exactly as the
// exhaustive scorer sums it, so equal passages tie exactly as they do there. Float sums in
// another order could differ in the last bit and reorder exact ties, which a corpus of
// recombined passages is full of.
import { PostingCursor, readBlockMaxima, readSkipTable } from './postings.js'

/** One (term, field) list, its blocks concatenated over the segments, in row id order. */
export interface ImpactList {
  weight: number
  /** Per row id, the field's norm byte; per norm byte, k1 * (1 - b + b * length / avgLength). */
  norms: Uint8Array
  normCache: Float64Array
  /** Block b holds docs in (blockBase[b], blockLast[b]], bytes [blockStart[b], blockEnd[b]) of blockData[b]. */
  blockBase: Int32Array
  blockLast: Int32Array
  blockStart: Int32Array
  blockEnd: Int32Array
  blockData: Buffer[]
  /** Per block: the most one of its postings adds to a score. */
  blockMax: Float64Array
}

/** One segment's part of a list as the store holds it; base: the segment's first row id - 1. */
export interface StoredList {
  base: number
  last: number
  data: Buffer
  skips: Buffer | null
  /** Block impacts; null for lists of one block, and for every list of a schema 2 segment. */
  maxima: Buffer | null
}

export function impactList(weight: number, norms: Uint8Array, normCache: Float64Array, parts: readonly StoredList[]): ImpactList {
  const tables = parts.map((part) => readSkipTable(part.skips, part.base, part.last, part.data.length))
  const n = tables.reduce((sum, t) => sum + t.lasts.length, 0)
  const list: ImpactList = {
    weight, norms, normCache,
    blockBase: new Int32Array(n),
    blockLast: new Int32Array(n),
    blockStart: new Int32Array(n),
    blockEnd: new Int32Array(n),
    blockData: new Array<Buffer>(n),
    blockMax: new Float64Array(n),
  }
  let at = 0
  parts.forEach((part, p) => {
    const { lasts, ends } = tables[p]!
    for (let b = 0; b < lasts.length; b++) {
      list.blockBase[at + b] = b === 0 ? part.base : lasts[b - 1]!
      list.blockLast[at + b] = lasts[b]!
      list.blockStart[at + b] = b === 0 ? 0 : ends[b - 1]!
      list.blockEnd[at + b] = ends[b]!
      list.blockData[at + b] = part.data
    }
    if (part.skips === null) {
      // One block of at most SKIP_BLOCK postings: reading it is cheaper than storing its impacts,
      // and gives its exact best score and last doc (the skip-less table only knows the segment's).
      const cursor = new PostingCursor().reset(part.data, 0, part.data.length, part.base)
      let best = 0
      while (cursor.next()) {
        const score = (weight * cursor.tf) / (cursor.tf + normCache[norms[cursor.doc]!]!)
        if (score > best) best = score
      }
      list.blockMax[at] = best
      list.blockLast[at] = cursor.doc
    } else if (part.maxima !== null) {
      readBlockMaxima(part.maxima, weight, normCache, list.blockMax, at, lasts.length)
    } else {
      // A schema 2 segment (a build resumed across the upgrade): no impacts, so the weight, which
      // bounds every posting (tf / (tf + K) < 1), bounds each block: still exact, only slower.
      list.blockMax.fill(weight, at, at + lasts.length)
    }
    at += lasts.length
  })
  return list
}

const NO_MORE_DOCS = 0x7fffffff

/** A list's postings one at a time, skipping whole blocks on advance(). */
class ListCursor {
  /** The current posting; -1 before the first, NO_MORE_DOCS past the last. */
  doc = -1
  tf = 0
  /** The first block whose last doc is at or past the current window's start: where the
   * window's upper bound starts, found without decoding anything. */
  shallow = 0
  private block = -1
  private readonly postings = new PostingCursor()

  constructor(readonly list: ImpactList) {}

  /** Moves to the first posting at or past `target`. */
  advance(target: number): void {
    if (this.doc >= target) return
    const last = this.list.blockLast
    if (this.block < 0 || last[this.block]! < target) {
      // Blocks before `shallow` end before the window, which starts at or before `target`.
      let b = Math.max(this.block + 1, this.shallow)
      while (b < last.length && last[b]! < target) b++
      if (b === last.length) {
        this.doc = NO_MORE_DOCS
        return
      }
      this.load(b)
    }
    do {
      const postings = this.postings
      while (postings.next()) {
        if (postings.doc >= target) {
          this.doc = postings.doc
          this.tf = postings.tf
          return
        }
      }
    } while (this.loadNext())
    this.doc = NO_MORE_DOCS
  }

  nextDoc(): void {
    do {
      if (this.postings.next()) {
        this.doc = this.postings.doc
        this.tf = this.postings.tf
        return
      }
    } while (this.loadNext())
    this.doc = NO_MORE_DOCS
  }

  private loadNext(): boolean {
    if (this.block + 1 >= this.list.blockLast.length) return false
    this.load(this.block + 1)
    return true
  }

  private load(b: number): void {
    const list = this.list
    this.block = b
    this.postings.reset(list.blockData[b]!, list.blockStart[b]!, list.blockEnd[b]!, list.blockBase[b]!)
  }
}

/** Row ids per window. Measured on the 1M synthetic store (eval-300 questions, k = 100): ending
 * windows at the first block boundary of any list (about 2,700 windows a query, 1% of them
 * skipped whole) ranked at p50 4.2 ms, windows of at least 1,024 row ids at 3.7-4.0 ms, fixed
 * windows of 4,096 at 3.5-3.7 ms: fewer windows cost less than the bounds they loosen. */
const WINDOW = 4096

/** The k-th best score so far bounds what a newcomer must beat; summing the same terms in
 * another order (the bounds, the remaining-bound subtraction) may round differently in the last
 * bits, so pruning keeps this relative margin and never drops a passage that could tie. */
const ROUNDING_MARGIN = 1e-9

export class BlockMaxScorer {
  // Per window offset: the essential lists' sum, and the window that wrote it (no clearing).
  private readonly partial = new Float64Array(WINDOW)
  private readonly stamp = new Int32Array(WINDOW)
  private readonly touched = new Int32Array(WINDOW)
  private readonly candidates = new Int32Array(WINDOW)
  private window = 0

  /** [rowid, score] of the k best passages, best first; ties go to the earlier passage. */
  topK(lists: readonly ImpactList[], k: number): [number, number][] {
    const n = lists.length
    if (n === 0) return []
    const cursors = lists.map((list) => new ListCursor(list))
    const bound = new Float64Array(n)
    const top = new TopK(k)
    const { partial, stamp, touched, candidates } = this
    let start = 1
    for (;;) {
      // The window: WINDOW row ids from the first any list may hold at or past `start`.
      let first = NO_MORE_DOCS
      for (const cursor of cursors) {
        const { blockLast, blockBase } = cursor.list
        let s = cursor.shallow
        while (s < blockLast.length && blockLast[s]! < start) s++
        cursor.shallow = s
        if (s < blockLast.length && blockBase[s]! + 1 < first) first = blockBase[s]! + 1
      }
      if (first === NO_MORE_DOCS) break
      if (first > start) start = first
      const end = start + WINDOW - 1
      for (let i = 0; i < n; i++) {
        const { blockBase, blockMax } = cursors[i]!.list
        let best = 0
        for (let s = cursors[i]!.shallow; s < blockBase.length && blockBase[s]! < end; s++) if (blockMax[s]! > best) best = blockMax[s]!
        bound[i] = best
      }
      let floor = top.floor()
      // Lists essential..n-1: the tail that cannot lift a passage into the top k alone.
      let essential = n
      let tail = 0
      while (essential > 0 && tail + bound[essential - 1]! < floor) tail += bound[--essential]!
      if (essential > 0) {
        if (++this.window === NO_MORE_DOCS) {
          stamp.fill(0)
          this.window = 1
        }
        const window = this.window
        let nTouched = 0
        for (let i = 0; i < essential; i++) {
          const cursor = cursors[i]!
          const { weight, norms, normCache } = cursor.list
          cursor.advance(start)
          while (cursor.doc <= end) {
            const doc = cursor.doc
            const tf = cursor.tf
            const off = doc - start
            const score = (weight * tf) / (tf + normCache[norms[doc]!]!)
            if (stamp[off] !== window) {
              stamp[off] = window
              partial[off] = score
              touched[nTouched++] = off
            } else partial[off] = partial[off]! + score
            cursor.nextDoc()
          }
        }
        if (essential === n) {
          for (let t = 0; t < nTouched; t++) top.offer(start + touched[t]!, partial[touched[t]!]!)
        } else {
          let nCandidates = 0
          for (let t = 0; t < nTouched; t++) if (partial[touched[t]!]! + tail >= floor) candidates[nCandidates++] = touched[t]!
          // In row id order: the tail's cursors only move forward.
          const sorted = candidates.subarray(0, nCandidates).sort()
          for (let c = 0; c < nCandidates; c++) {
            const doc = start + sorted[c]!
            let score = partial[sorted[c]!]!
            let rest = tail
            let i = essential
            for (; i < n && score + rest >= floor; i++) {
              const cursor = cursors[i]!
              cursor.advance(doc)
              if (cursor.doc === doc) {
                const { weight, norms, normCache } = cursor.list
                score += (weight * cursor.tf) / (cursor.tf + normCache[norms[doc]!]!)
              }
              rest -= bound[i]!
            }
            if (i === n && score >= floor) {
              top.offer(doc, score)
              floor = top.floor()
            }
          }
        }
      }
      start = end + 1
    }
    return top.sorted()
  }
}

/** The k best (doc, score) pairs seen: a min-heap whose root is the worst kept. */
class TopK {
  private docs: Int32Array
  private scores: Float64Array
  private size = 0

  constructor(private readonly k: number) {
    // k may be far beyond the passages that match: grow as needed instead.
    this.docs = new Int32Array(Math.min(k, 1024))
    this.scores = new Float64Array(this.docs.length)
  }

  /** Scores below this cannot enter (with the rounding margin); -Infinity until k are kept. */
  floor(): number {
    if (this.size < this.k) return -Infinity
    const worst = this.scores[0]!
    return worst - Math.abs(worst) * ROUNDING_MARGIN
  }

  offer(doc: number, score: number): void {
    if (this.size < this.k) {
      this.grow()
      let j = this.size++
      while (j > 0) {
        const parent = (j - 1) >> 1
        if (!worse(score, doc, this.scores[parent]!, this.docs[parent]!)) break
        this.docs[j] = this.docs[parent]!
        this.scores[j] = this.scores[parent]!
        j = parent
      }
      this.docs[j] = doc
      this.scores[j] = score
      return
    }
    if (!worse(this.scores[0]!, this.docs[0]!, score, doc)) return
    // Replace the root and sift the newcomer down.
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = -1
      let mScore = score
      let mDoc = doc
      if (l < this.size && worse(this.scores[l]!, this.docs[l]!, mScore, mDoc)) {
        m = l
        mScore = this.scores[l]!
        mDoc = this.docs[l]!
      }
      if (r < this.size && worse(this.scores[r]!, this.docs[r]!, mScore, mDoc)) m = r
      if (m < 0) break
      this.docs[i] = this.docs[m]!
      this.scores[i] = this.scores[m]!
      i = m
    }
    this.docs[i] = doc
    this.scores[i] = score
  }

  sorted(): [number, number][] {
    const out: [number, number][] = []
    for (let i = 0; i < this.size; i++) out.push([this.docs[i]!, this.scores[i]!])
    return out.sort((a, b) => b[1] - a[1] || a[0] - b[0])
  }

  private grow(): void {
    if (this.size < this.docs.length) return
    const docs = new Int32Array(Math.min(this.k, this.docs.length * 2))
    const scores = new Float64Array(docs.length)
    docs.set(this.docs)
    scores.set(this.scores)
    this.docs = docs
    this.scores = scores
  }
}

/** a ranks below b: a lower score, or the same score and a later passage. */
function worse(aScore: number, aDoc: number, bScore: number, bDoc: number): boolean {
  return aScore < bScore || (aScore === bScore && aDoc > bDoc)
}
