// The side-by-side core of the retrieval benchmarks: our BM25 on a store and Lucene 8 on the
// same passages (exported from the store, in store order) answer the same questions at depth k.
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { Bm25SqliteRetriever, type Bm25Scorer } from '../retriever/bm25-sqlite-retriever.js'
import { PassageStore, STORE_FILE } from '../retriever/passage-store.js'
import type { Passage } from '../core/passage.js'
import { percentile } from '../src/eval/evaluate-retriever.js'
import { runLucenePeer } from './lucene-peer.js'

export interface SystemRun {
  system: string
  /** Top-k passage ids per question. */
  hits: string[][]
  /** Scores aligned with hits. */
  scores: number[][]
  latenciesMs: number[]
  p50: number
  p99: number
  /** The inverted index alone (for us: postings and norms, without the passage text). */
  indexBytes: number
  /** Everything on disk, passage text included, where that differs. */
  storeBytes?: number
  indexSeconds?: number
  /** Ours only: the ranking alone (top k row ids and scores, no passage text), a second pass. */
  rankingMs?: { p50: number; p99: number }
}

/** Our BM25, end to end (ranked passages with their text, as served), then the ranking alone in
 * a second pass. `scorer` picks the query evaluation (the store's default when left out). */
export function runOurBm25(storeDir: string, questions: readonly string[], k: number, warmup = 50, scorer?: Bm25Scorer): SystemRun {
  const retriever = new Bm25SqliteRetriever(PassageStore.openReadOnly(storeDir), { k1: 0.9, b: 0.4 }, { scorer })
  for (const q of questions.slice(0, warmup)) retriever.searchSync(q, k)
  const hits: string[][] = []
  const scores: number[][] = []
  const latenciesMs: number[] = []
  for (const q of questions) {
    const started = performance.now()
    const found = retriever.searchSync(q, k)
    latenciesMs.push(performance.now() - started)
    hits.push(found.map((p) => p.id))
    scores.push(found.map((p) => p.score))
  }
  const rankingLatencies = questions.map((q) => {
    const started = performance.now()
    retriever.topRowids(q, k)
    return performance.now() - started
  })
  const store = PassageStore.openReadOnly(storeDir)
  const bytes = (sql: string) => (store.db.prepare(sql).get() as { n: number | null }).n ?? 0
  // Skip tables and block impacts are index too (counted since the block-max change).
  const impacts = store.hasBlockImpacts() ? ' + ifnull(length(maxima), 0)' : ''
  const indexBytes = bytes(`SELECT sum(length(term) + length(data) + ifnull(length(skips), 0)${impacts} + 12) AS n FROM postings`) + bytes('SELECT sum(length(title_norms) + length(text_norms)) AS n FROM segments')
  store.close()
  void retriever.close()
  return {
    system: `ours (BM25, SQLite, ${retriever.scorer})`, hits, scores, latenciesMs, p50: percentile(latenciesMs, 50), p99: percentile(latenciesMs, 99),
    indexBytes, storeBytes: statSync(join(storeDir, STORE_FILE)).size,
    rankingMs: { p50: percentile(rankingLatencies, 50), p99: percentile(rankingLatencies, 99) },
  }
}

export async function runLucene(storeDir: string, questions: readonly string[], k: number, workDir: string): Promise<SystemRun> {
  const store = PassageStore.openReadOnly(storeDir)
  try {
    const passages = store.db.prepare('SELECT id, title, text FROM passages ORDER BY rowid').iterate() as Iterable<Passage>
    const result = await runLucenePeer({ passages, questions: [...questions], k, workDir })
    return {
      system: 'Lucene 8.8 (EnglishAnalyzer, BM25 0.9/0.4)',
      hits: result.hits,
      scores: result.scores,
      latenciesMs: result.latenciesMs,
      p50: result.p50,
      p99: result.p99,
      indexBytes: result.indexBytes,
      indexSeconds: result.indexSeconds,
    }
  } finally {
    store.close()
  }
}

/** How often the two systems agree: same top-1, and the mean overlap of their top-k sets. */
export function agreement(a: SystemRun, b: SystemRun, k: number): { top1: number; overlap: number } {
  let top1 = 0
  let overlap = 0
  a.hits.forEach((hits, i) => {
    const other = b.hits[i] ?? []
    if (hits[0] !== undefined && hits[0] === other[0]) top1++
    const set = new Set(other.slice(0, k))
    overlap += hits.slice(0, k).filter((id) => set.has(id)).length / Math.max(1, Math.min(k, hits.length, other.length))
  })
  return { top1: (100 * top1) / a.hits.length, overlap: (100 * overlap) / a.hits.length }
}
