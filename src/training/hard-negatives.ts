// BM25 hard negatives for the cross-encoder: for each positive (question, gold passage) pair of
// reranker-{train,heldout}.jsonl, the top BM25 passages of our own store that hold none of the
// question's answers. Random negatives (another question's passage) only teach topic matching,
// which BM25's top 100 has already passed; these teach what the reranker is for.
import { createReadStream, renameSync, writeFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import type { Retriever } from '../../core/retriever.js'
import { hasAnswer } from '../../core/has-answer.js'
import { ERR_TRAINING_DATA } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import { Progress } from '../../core/progress.js'

export interface RerankerGroup {
  id: string
  source: string
  question: string
  answers: string[]
  positive: { title: string; text: string }
  negatives: { title: string; text: string; rank: number }[]
}

export interface MineOptions {
  retriever: Retriever
  /** reranker-{train,heldout}.jsonl as `ambigqa data build` writes it (rows with `answers`). */
  input: string
  output: string
  /** BM25 depth searched for negatives. */
  depth: number
  negatives: number
  /** At most this many groups per source, in file order (the file is shuffled). */
  perSource?: number
  log: Logger
}

interface PairRow {
  id: string
  source: string
  question: string
  title: string
  text: string
  label: number
  answers?: string[]
}

/** Writes one group per positive that has answers and enough answerless BM25 passages; returns counts. */
export async function mineHardNegatives(o: MineOptions): Promise<{ groups: number; skipped: number }> {
  const positives = await readPositives(o.input, o.perSource)
  const lines: string[] = []
  let skipped = 0
  let done = 0
  const progress = new Progress({ label: 'mining BM25 hard negatives', unit: 'questions', log: o.log, fraction: () => done / Math.max(1, positives.length) })
  for (const row of positives) {
    const hits = await o.retriever.search(row.question, o.depth)
    const negatives: RerankerGroup['negatives'] = []
    for (const [rank, hit] of hits.entries()) {
      if (negatives.length === o.negatives) break
      // The gold paragraph is often in the store itself (SQuAD's are): never a negative.
      if (hit.text === row.text || hasAnswer(`${hit.title} ${hit.text}`, row.answers)) continue
      negatives.push({ title: hit.title, text: hit.text, rank: rank + 1 })
    }
    done++
    progress.update(done)
    if (negatives.length < o.negatives) {
      skipped++
      continue
    }
    const group: RerankerGroup = { id: row.id, source: row.source, question: row.question, answers: row.answers, positive: { title: row.title, text: row.text }, negatives }
    lines.push(JSON.stringify(group))
  }
  progress.done()
  const tmp = `${o.output}.tmp`
  writeFileSync(tmp, lines.length ? `${lines.join('\n')}\n` : '')
  renameSync(tmp, o.output)
  return { groups: lines.length, skipped }
}

async function readPositives(path: string, perSource: number | undefined): Promise<(PairRow & { answers: string[] })[]> {
  const out: (PairRow & { answers: string[] })[] = []
  const count = new Map<string, number>()
  let line = 0
  for await (const text of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
    line++
    if (!text.trim()) continue
    let row: PairRow
    try {
      row = JSON.parse(text) as PairRow
    } catch (err) {
      throw ERR_TRAINING_DATA(path, `line ${line}`, (err as Error).message)
    }
    if (row.label !== 1) continue
    if (!Array.isArray(row.answers)) {
      throw ERR_TRAINING_DATA(path, `line ${line}`, 'a positive pair has no "answers" list')
    }
    if (row.answers.length === 0) continue
    const n = count.get(row.source) ?? 0
    if (perSource !== undefined && n >= perSource) continue
    count.set(row.source, n + 1)
    out.push(row as PairRow & { answers: string[] })
  }
  return out
}
