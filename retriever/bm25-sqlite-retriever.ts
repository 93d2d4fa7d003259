// BM25 over the store's own inverted index, scored as Lucene 8 scores it (same idf, same
// one-byte length norms, k1 and b chosen at query time): a term's score is summed over the
// title and text fields, as a Lucene BooleanQuery of per-field term queries does.
import { ERR_USAGE } from '../src/errors.js'
import { analyze } from './english-analyzer.js'
import { FIELDS } from './segment-builder.js'
import { LENGTH_TABLE } from './lucene-norms.js'
import type { PassageStore } from './passage-store.js'
import type { RetrievedPassage, Retriever } from './retriever.js'

export interface Bm25Parameters {
  k1: number
  b: number
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
  private readonly segmentBase: Map<number, number>
  private readonly postingsStatement
  private readonly scores: Float64Array
  private readonly touched: Int32Array

  constructor(store: PassageStore, parameters: Bm25Parameters) {
    this.store = store
    const segments = store.db.prepare('SELECT * FROM segments ORDER BY seg').all() as {
      seg: number; first_rowid: number; last_rowid: number; title_norms: Buffer; text_norms: Buffer
      title_docs: number; text_docs: number; title_terms: number; text_terms: number
    }[]
    const maxRowid = segments.reduce((max, s) => Math.max(max, s.last_rowid), 0)
    this.segmentBase = new Map(segments.map((s) => [s.seg, s.first_rowid - 1]))
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
    this.postingsStatement = store.db.prepare('SELECT seg, df, data FROM postings WHERE term = ? AND field = ?')
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
  topRowids(question: string, k: number): [number, number][] {
    const queryTerms = new Map<string, number>()
    for (const term of analyze(question)) queryTerms.set(term, (queryTerms.get(term) ?? 0) + 1)
    const { scores, touched } = this
    let nTouched = 0
    for (const [term, repeats] of queryTerms) {
      for (let f = 0; f < this.fields.length; f++) {
        const field = this.fields[f]!
        const blocks = this.postingsStatement.all(term, f) as { seg: number; df: number; data: Buffer }[]
        if (blocks.length === 0) continue
        const df = blocks.reduce((sum, block) => sum + block.df, 0)
        // Lucene: idf = ln(1 + (N - df + 0.5) / (df + 0.5)) with N the field's doc count.
        const weight = repeats * Math.log(1 + (field.docs - df + 0.5) / (df + 0.5))
        const { norms, normCache } = field
        for (const block of blocks) {
          // The varint decoding of varint.ts, inlined: this loop is most of a query's time.
          const data = block.data
          const n = data.length
          let doc = this.segmentBase.get(block.seg)!
          let i = 0
          while (i < n) {
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
            doc += delta
            const before = scores[doc]!
            if (before === 0) touched[nTouched++] = doc
            scores[doc] = before + (weight * tf) / (tf + normCache[norms[doc]!]!)
          }
        }
      }
    }
    const best = selectTop(scores, touched, nTouched, k)
    for (let i = 0; i < nTouched; i++) scores[touched[i]!] = 0
    return best
  }

  async close(): Promise<void> {
    this.store.close()
  }
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
