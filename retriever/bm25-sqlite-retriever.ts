// BM25 over the store's own inverted index, scored as Lucene 8 scores it (same idf, same
// one-byte length norms, k1 and b chosen at query time): a term's score is summed over the
// title and text fields, as a Lucene BooleanQuery of per-field term queries does.
//
// Two exact scorers, both giving exactly the exhaustive top k, scores and tie order included:
// - 'block-max' (the default where the store has block impacts, schema 3 on): document at a
//   time over windows of row ids with per-block upper bounds (block-max-scorer.ts).
// - 'maxscore' (schema 2 stores, which have no impacts, fall back to it; also kept to measure
//   against): term at a time with MaxScore pruning: posting lists go from the highest weight
//   down, and once the lists left cannot lift an unseen passage into the top k, they only
//   update the passages that still can, decoding just the blocks of the lists that hold them.
import { ERR_USAGE } from '../core/errors.js'
import { BlockMaxScorer, impactList, type ImpactList, type StoredList } from './block-max-scorer.js'
import { analyze } from './english-analyzer.js'
import { LENGTH_TABLE } from './lucene-norms.js'
import { FIELDS, PostingCursor, readSkipTable } from './postings.js'
import type { PassageStore } from './passage-store.js'
import type { RetrievedPassage, Retriever } from '../core/retriever.js'

export interface Bm25Parameters {
  k1: number
  b: number
}

export type Bm25Scorer = 'block-max' | 'maxscore'

/** One (term, field) posting list: a block per segment. */
interface TermList {
  /** Its BM25 weight (repeats × idf): an upper bound on what it adds to any passage. */
  weight: number
  field: FieldStats
  blocks: StoredList[]
}

interface FieldStats {
  docs: number
  avgLength: number
  /** Per row id: the field's length norm byte. */
  norms: Uint8Array
  /** Per norm byte: k1 * (1 - b + b * length / avgLength), Lucene's cache. */
  normCache: Float64Array
}

export class Bm25SqliteRetriever implements Retriever {
  readonly name = 'bm25-sqlite'
  private readonly store: PassageStore
  private readonly fields: FieldStats[]
  private readonly segments: Map<number, { base: number; last: number }>
  private readonly postingsStatement
  private readonly scores: Float64Array
  private readonly touched: Int32Array
  private readonly blockMax = new BlockMaxScorer()
  readonly scorer: Bm25Scorer

  /** `scorer` defaults to 'block-max' where the store has block impacts, else 'maxscore'; asking
   * for 'block-max' on a schema 2 store still ranks exactly, bounding blocks by list weights. */
  constructor(store: PassageStore, parameters: Bm25Parameters, options: { scorer?: Bm25Scorer } = {}) {
    this.store = store
    const impacts = store.hasBlockImpacts()
    this.scorer = options.scorer ?? (impacts ? 'block-max' : 'maxscore')
    const segments = store.db.prepare('SELECT * FROM segments ORDER BY seg').all() as {
      seg: number; first_rowid: number; last_rowid: number; title_norms: Buffer; text_norms: Buffer
      title_docs: number; text_docs: number; title_terms: number; text_terms: number
    }[]
    const maxRowid = segments.reduce((max, s) => Math.max(max, s.last_rowid), 0)
    this.segments = new Map(segments.map((s) => [s.seg, { base: s.first_rowid - 1, last: s.last_rowid }]))
    this.fields = FIELDS.map((field) => {
      const norms = new Uint8Array(maxRowid + 1)
      let docs = 0
      let terms = 0
      for (const s of segments) {
        norms.set(s[`${field}_norms`], s.first_rowid)
        docs += s[`${field}_docs`]
        terms += s[`${field}_terms`]
      }
      const avgLength = docs === 0 ? 1 : terms / docs
      const normCache = LENGTH_TABLE.map((length) => parameters.k1 * (1 - parameters.b + (parameters.b * length) / avgLength))
      return { docs, avgLength, norms, normCache }
    })
    this.postingsStatement = store.db.prepare(`SELECT seg, df, data, skips, ${impacts ? 'maxima' : 'NULL AS maxima'} FROM postings WHERE term = ? AND field = ?`)
    this.scores = new Float64Array(maxRowid + 1)
    this.touched = new Int32Array(maxRowid + 1)
  }

  async search(question: string, k: number): Promise<RetrievedPassage[]> {
    return this.searchSync(question, k)
  }

  /** The synchronous core: SQLite reads here are synchronous anyway. */
  searchSync(question: string, k: number): RetrievedPassage[] {
    if (!Number.isInteger(k) || k < 1) throw ERR_USAGE(`k must be a positive integer, got ${k}`, 'Ask for at least one passage')
    const top = this.topRowids(question, k)
    const passages = this.store.byRowids(top.map(([rowid]) => rowid))
    return passages.map((p, i) => ({ ...p, score: top[i]![1] }))
  }

  /** [rowid, score] of the k best passages, best first; ties go to the earlier passage. */
  topRowids(question: string, k: number, scorer: Bm25Scorer = this.scorer): [number, number][] {
    const lists = this.termLists(question)
    if (scorer === 'block-max') {
      const impactLists: ImpactList[] = lists.map((list) => impactList(list.weight, list.field.norms, list.field.normCache, list.blocks))
      return this.blockMax.topK(impactLists, k)
    }
    return this.maxScoreTopRowids(lists, k)
  }

  private maxScoreTopRowids(lists: TermList[], k: number): [number, number][] {
    // upperBound[i]: the most that lists i.. can add to one passage.
    const upperBound = new Float64Array(lists.length + 1)
    for (let i = lists.length - 1; i >= 0; i--) upperBound[i] = upperBound[i + 1]! + lists[i]!.weight
    const { scores, touched } = this
    let nTouched = 0
    let candidates: Int32Array | null = null
    for (let i = 0; i < lists.length; i++) {
      const list = lists[i]!
      if (candidates === null && nTouched >= k) {
        const threshold = kthLargest(scores, touched, nTouched, k)
        // Strictly below: an unseen passage scores less than upperBound[i], so cannot even tie.
        if (upperBound[i]! < threshold) candidates = sortedCandidates(scores, touched, nTouched, threshold - upperBound[i]!)
      }
      if (candidates === null) nTouched = accumulate(list, scores, touched, nTouched)
      else {
        for (const block of list.blocks) addToCandidates(list, block, candidates, scores)
        // Scores only grow, so the k-th best so far bounds the final k-th from below.
        const threshold = kthLargest(scores, candidates, candidates.length, k)
        const rest = upperBound[i + 1]!
        candidates = candidates.filter((doc) => scores[doc]! + rest >= threshold)
      }
    }
    const best = candidates === null ? selectTop(scores, touched, nTouched, k) : selectTop(scores, candidates, candidates.length, k)
    for (let i = 0; i < nTouched; i++) scores[touched[i]!] = 0
    return best
  }

  /** The question's posting lists, heaviest first. */
  private termLists(question: string): TermList[] {
    const queryTerms = new Map<string, number>()
    for (const term of analyze(question)) queryTerms.set(term, (queryTerms.get(term) ?? 0) + 1)
    const lists: TermList[] = []
    for (const [term, repeats] of queryTerms) {
      for (let f = 0; f < this.fields.length; f++) {
        const field = this.fields[f]!
        const rows = this.postingsStatement.all(term, f) as { seg: number; df: number; data: Buffer; skips: Buffer | null; maxima: Buffer | null }[]
        if (rows.length === 0) continue
        const df = rows.reduce((sum, row) => sum + row.df, 0)
        // Lucene: idf = ln(1 + (N - df + 0.5) / (df + 0.5)) with N the field's doc count.
        const weight = repeats * Math.log(1 + (field.docs - df + 0.5) / (df + 0.5))
        const blocks = rows.map((row) => ({ ...this.segments.get(row.seg)!, data: row.data, skips: row.skips, maxima: row.maxima }))
        lists.push({ weight, field, blocks })
      }
    }
    // Stable: both scorers add a passage's scores in this order, so they agree to the last bit.
    return lists.sort((a, b) => b.weight - a.weight)
  }

  async close(): Promise<void> {
    this.store.close()
  }
}

/** Adds a whole list to the scores, recording newly touched passages. Returns the new count. */
function accumulate(list: TermList, scores: Float64Array, touched: Int32Array, nTouched: number): number {
  const { weight } = list
  const { norms, normCache } = list.field
  // This loop is most of a query's time: one cursor for the list, no allocation per posting.
  const posting = new PostingCursor()
  for (const block of list.blocks) {
    posting.reset(block.data, 0, block.data.length, block.base)
    while (posting.next()) {
      const doc = posting.doc
      const tf = posting.tf
      const before = scores[doc]!
      if (before === 0) touched[nTouched++] = doc
      scores[doc] = before + (weight * tf) / (tf + normCache[norms[doc]!]!)
    }
  }
  return nTouched
}

/** Adds one segment's part of a list to the candidates it holds, decoding only the skip
 * blocks that contain a candidate. `candidates` is sorted. */
function addToCandidates(list: TermList, block: TermList['blocks'][number], candidates: Int32Array, scores: Float64Array): void {
  const { weight } = list
  const { norms, normCache } = list.field
  let c = lowerBound(candidates, block.base + 1)
  if (c >= candidates.length || candidates[c]! > block.last) return
  const data = block.data
  const { lasts, ends } = readSkipTable(block.skips, block.base, block.last, data.length)
  const posting = new PostingCursor()
  for (let b = 0; b < lasts.length && c < candidates.length && candidates[c]! <= block.last; b++) {
    if (candidates[c]! > lasts[b]!) continue
    posting.reset(data, b === 0 ? 0 : ends[b - 1]!, ends[b]!, b === 0 ? block.base : lasts[b - 1]!)
    while (c < candidates.length && candidates[c]! <= lasts[b]! && posting.next()) {
      const doc = posting.doc
      const tf = posting.tf
      while (c < candidates.length && candidates[c]! < doc) c++
      if (candidates[c] === doc) {
        scores[doc] = scores[doc]! + (weight * tf) / (tf + normCache[norms[doc]!]!)
        c++
      }
    }
    while (c < candidates.length && candidates[c]! <= lasts[b]!) c++
  }
}

function lowerBound(sorted: Int32Array, value: number): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (sorted[mid]! < value) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The passages scoring at least `min`, in doc order. */
function sortedCandidates(scores: Float64Array, docs: Int32Array, n: number, min: number): Int32Array {
  const out: number[] = []
  for (let i = 0; i < n; i++) if (scores[docs[i]!]! >= min) out.push(docs[i]!)
  return Int32Array.from(out).sort()
}

/** The k-th largest score among docs[0..n) (k <= n), by quickselect on a copy. */
function kthLargest(scores: Float64Array, docs: Int32Array, n: number, k: number): number {
  if (n < k) return -Infinity
  const values = new Float64Array(n)
  for (let i = 0; i < n; i++) values[i] = scores[docs[i]!]!
  let lo = 0
  let hi = n - 1
  const target = k - 1
  while (lo < hi) {
    const pivot = values[(lo + hi) >> 1]!
    let i = lo
    let j = hi
    while (i <= j) {
      while (values[i]! > pivot) i++
      while (values[j]! < pivot) j--
      if (i <= j) {
        const t = values[i]!
        values[i++] = values[j]!
        values[j--] = t
      }
    }
    if (target <= j) hi = j
    else if (target >= i) lo = i
    else break
  }
  return values[target]!
}

/** The k highest-scoring of the touched docs, by a bounded min-heap whose root (the worst
 * kept) rejects most candidates with one comparison. Lower doc wins ties, as in Lucene. */
function selectTop(scores: Float64Array, docs: Int32Array, n: number, k: number): [number, number][] {
  const heap = new Int32Array(Math.min(k, n))
  let size = 0
  const worse = (a: number, b: number) => scores[a]! < scores[b]! || (scores[a] === scores[b] && a > b)
  const siftDown = () => {
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = i
      if (l < size && worse(heap[l]!, heap[m]!)) m = l
      if (r < size && worse(heap[r]!, heap[m]!)) m = r
      if (m === i) return
      const t = heap[i]!
      heap[i] = heap[m]!
      heap[m] = t
      i = m
    }
  }
  for (let i = 0; i < n; i++) {
    const doc = docs[i]!
    if (size < heap.length) {
      let j = size++
      heap[j] = doc
      while (j > 0) {
        const parent = (j - 1) >> 1
        if (!worse(heap[j]!, heap[parent]!)) break
        const t = heap[j]!
        heap[j] = heap[parent]!
        heap[parent] = t
        j = parent
      }
      continue
    }
    const score = scores[doc]!
    const rootScore = scores[heap[0]!]!
    if (score < rootScore || (score === rootScore && doc > heap[0]!)) continue
    heap[0] = doc
    siftDown()
  }
  return [...heap.subarray(0, size)].sort((a, b) => (worse(a, b) ? 1 : worse(b, a) ? -1 : 0)).map((doc) => [doc, scores[doc]!])
}
