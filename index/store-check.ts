// Checks that a store is whole and that its BM25 index matches its passages: the state says
// 'ready' even when the index under it is wrong (two builds writing one store) or the file is
// damaged, and the content checksum covers the passages only.
//
// 'quick' is what `serve` runs at every start: the segments table and the passages' last row
// id, so its time grows with the number of segments, not passages (measured in BENCHMARKS.md).
// It catches overlapping, missing or extra segments and an index that stops short of the
// passages. 'full' (`index stats --verify`) adds SQLite's quick_check over every page and
// re-derives every segment's postings and norms from the passages: as long as indexing them.
import { createHash } from 'node:crypto'
import type { PassageStore } from '../retriever/passage-store.js'
import { FIELDS } from '../retriever/postings.js'
import { runSegmentJob } from './bm25/segment-worker.js'

export type CheckLevel = 'quick' | 'full'

export interface StoreCheck {
  level: CheckLevel
  ok: boolean
  /** What is wrong, in words; empty when ok. */
  problems: string[]
  ms: number
}

interface SegmentRow {
  seg: number; first_rowid: number; last_rowid: number; title_norms: number; text_norms: number; title_docs: number; text_docs: number
}

/** Entries, summed document frequencies and an order-free hash of one segment's postings. */
interface PostingsDigest { entries: number; df: number; hash: bigint; impacts: boolean }

const MASK = (1n << 64n) - 1n
const MAX_PROBLEMS = 10

export function checkStore(store: PassageStore, level: CheckLevel): StoreCheck {
  const started = performance.now()
  const problems: string[] = []
  const step = (what: string, run: () => void) => {
    try {
      run()
    } catch (err) {
      problems.push(`${what}: ${(err as Error).message}`)
    }
  }
  let segments: SegmentRow[] = []
  step('reading the segments', () => {
    segments = store.db.prepare(
      'SELECT seg, first_rowid, last_rowid, length(title_norms) AS title_norms, length(text_norms) AS text_norms, title_docs, text_docs FROM segments ORDER BY first_rowid, seg',
    ).all() as SegmentRow[]
    const maxRowid = (store.db.prepare('SELECT max(rowid) AS n FROM passages').get() as { n: number | null }).n ?? 0
    checkSegments(segments, maxRowid, problems)
  })
  if (level === 'full') {
    step('SQLite quick_check', () => {
      const rows = store.db.pragma(`quick_check(${MAX_PROBLEMS})`) as { quick_check: string }[]
      for (const r of rows) if (r.quick_check !== 'ok') problems.push(`SQLite quick_check: ${r.quick_check}`)
    })
    if (problems.length === 0) step('comparing the postings with the passages', () => checkPostings(store, segments, problems))
  }
  return { level, ok: problems.length === 0, problems: problems.slice(0, MAX_PROBLEMS), ms: performance.now() - started }
}

function checkSegments(segments: SegmentRow[], maxRowid: number, problems: string[]): void {
  if (maxRowid === 0) problems.push('the store holds no passages')
  let next = 1
  for (const s of segments) {
    const span = s.last_rowid - s.first_rowid + 1
    if (s.first_rowid !== next) {
      problems.push(s.first_rowid < next
        ? `segment ${s.seg} indexes passages ${s.first_rowid}-${s.last_rowid} again (overlapping segments: two builds wrote this store)`
        : `passages ${next}-${s.first_rowid - 1} are in no segment`)
    }
    if (span < 1 || s.title_norms !== span || s.text_norms !== span) problems.push(`segment ${s.seg} has norms for ${s.title_norms}/${s.text_norms} passages, not ${span}`)
    if (s.title_docs > span || s.text_docs > span) problems.push(`segment ${s.seg} counts more documents than it spans`)
    next = Math.max(next, s.last_rowid + 1)
  }
  if (next - 1 < maxRowid) problems.push(`passages ${next}-${maxRowid} are not indexed`)
  if (next - 1 > maxRowid) problems.push(`segments index passages up to ${next - 1}, but the last passage is ${maxRowid}`)
}

function checkPostings(store: PassageStore, segments: SegmentRow[], problems: string[]): void {
  // Skip tables and block impacts are checked too: a wrong block bound would make block-max
  // evaluation drop passages silently. A schema 2 segment (none of its lists has impacts) is
  // compared without them, as the retriever reads it without them.
  const stored = new Map<number, PostingsDigest>()
  const maxima = store.hasBlockImpacts() ? 'maxima' : 'NULL AS maxima'
  const rows = store.db.prepare(`SELECT seg, term, field, df, data, skips, ${maxima} FROM postings`).iterate() as Iterable<{
    seg: number; term: string; field: number; df: number; data: Buffer; skips: Buffer | null; maxima: Buffer | null
  }>
  for (const row of rows) {
    let digest = stored.get(row.seg)
    if (!digest) stored.set(row.seg, (digest = { entries: 0, df: 0, hash: 0n, impacts: false }))
    add(digest, row.term, row.field, row.df, row.data, row.skips, row.maxima)
    if (row.maxima !== null) digest.impacts = true
  }
  const known = new Set(segments.map((s) => s.seg))
  for (const seg of stored.keys()) if (!known.has(seg)) problems.push(`postings of segment ${seg}, which does not exist`)
  const norms = store.db.prepare('SELECT title_norms, text_norms FROM segments WHERE seg = ?')
  for (const s of segments) {
    const built = runSegmentJob({ dbPath: '', first: s.first_rowid, last: s.last_rowid }, store.db)
    const impacts = stored.get(s.seg)?.impacts === true
    const expected: PostingsDigest = { entries: 0, df: 0, hash: 0n, impacts }
    const slice = (data: Uint8Array, offsets: Uint32Array, i: number) => (offsets[i] === offsets[i + 1] ? null : data.subarray(offsets[i], offsets[i + 1]))
    for (let i = 0; i < built.postingTerms.length; i++) {
      add(expected, built.postingTerms[i]!, built.postingFields[i]!, built.postingDfs[i]!, built.postingData.subarray(built.postingOffsets[i], built.postingOffsets[i + 1]),
        slice(built.skipData, built.skipOffsets, i), impacts ? slice(built.impactData, built.impactOffsets, i) : null)
    }
    const got = stored.get(s.seg) ?? { entries: 0, df: 0, hash: 0n, impacts }
    if (got.entries !== expected.entries || got.df !== expected.df || got.hash !== expected.hash) {
      problems.push(`segment ${s.seg} (passages ${s.first_rowid}-${s.last_rowid}): ${got.entries} posting lists with ${got.df} postings stored, ` +
        `${expected.entries} with ${expected.df} from its passages${got.entries === expected.entries && got.df === expected.df ? ' (same counts, different postings)' : ''}`)
    }
    const row = norms.get(s.seg) as { title_norms: Buffer; text_norms: Buffer }
    FIELDS.forEach((field, f) => {
      if (!Buffer.from(built.norms[f]!).equals(row[`${field}_norms`])) problems.push(`segment ${s.seg}: the ${field} length norms do not match its passages`)
    })
    if (problems.length >= MAX_PROBLEMS) return
  }
}

function add(digest: PostingsDigest, term: string, field: number, df: number, data: Uint8Array, skips: Uint8Array | null, impacts: Uint8Array | null): void {
  const h = createHash('sha256').update(term).update(`\u0000${field}\u0000${df}\u0000`).update(data)
    .update(`\u0000${skips?.length ?? -1}\u0000`).update(skips ?? new Uint8Array(0))
    .update(`\u0000${impacts?.length ?? -1}\u0000`).update(impacts ?? new Uint8Array(0)).digest()
  digest.entries += 1
  digest.df += df
  digest.hash = (digest.hash + h.readBigUInt64LE(0)) & MASK
}
