// BM25 hard negatives mined from a real store (the demo corpus): answerless, never the gold
// passage, in BM25 order; bad training files get the catalogue's error.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { PassageStore } from '../retriever/passage-store.js'
import { defaults } from '../core/config.js'
import { hasAnswer } from '../core/has-answer.js'
import { isAmbigqaError } from '../core/errors.js'
import { silentLogger } from '../core/log.js'
import { mineHardNegatives, type RerankerGroup } from '../src/training/hard-negatives.js'
import { buildDemoStore } from './helpers/demo-store.js'

let retriever: Bm25SqliteRetriever
const dir = mkdtempSync(join(tmpdir(), 'ambigqa-negatives-'))

before(async () => {
  retriever = new Bm25SqliteRetriever(PassageStore.openReadOnly(await buildDemoStore('ambigqa-negatives-store-')), defaults.bm25)
})
after(async () => retriever.close())

const pair = (id: string, source: string, question: string, answers: string[] | undefined, label = 1) =>
  JSON.stringify({ id, source, question, title: 'Gold', text: `gold passage for ${id}`, label, ...(answers ? { answers } : {}) })

test('negatives are the top BM25 passages without an answer; positives without answers are skipped', async () => {
  const input = join(dir, 'pairs.jsonl')
  writeFileSync(input, [
    pair('a', 'nq-gold', 'who won the 1912 world series', ['Boston Red Sox', 'Red Sox']),
    pair('a:neg', 'nq-gold', 'who won the 1912 world series', undefined, 0),
    pair('b', 'qa-feedback', 'who played in the world series', []),
    pair('c', 'squad', 'when did the apple i go on sale', ['July 1976']),
    pair('d', 'squad', 'what is the price of the apple i', ['$666.66']),
  ].join('\n'))
  const output = join(dir, 'groups.jsonl')
  const result = await mineHardNegatives({ retriever, input, output, depth: 30, negatives: 3, perSource: 1, log: silentLogger })
  const groups = readFileSync(output, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as RerankerGroup)
  // 'b' has no answers, 'd' is over the per-source cap of 1.
  assert.deepEqual(groups.map((g) => g.id), ['a', 'c'])
  assert.deepEqual(result, { groups: 2, skipped: 0 })
  for (const g of groups) {
    assert.equal(g.negatives.length, 3)
    assert.equal(g.positive.text, `gold passage for ${g.id}`)
    const ranks = g.negatives.map((n) => n.rank)
    assert.deepEqual(ranks, [...ranks].sort((x, y) => x - y))
    const top = await retriever.search(g.question, 30)
    for (const n of g.negatives) {
      assert.ok(!hasAnswer(`${n.title} ${n.text}`, g.answers), `${g.id}: a negative holds an answer`)
      assert.equal(top[n.rank - 1]!.text, n.text, 'rank is the BM25 rank')
    }
    // Every passage ranked above the last negative and left out holds an answer.
    for (const p of top.slice(0, ranks.at(-1))) {
      if (!g.negatives.some((n) => n.text === p.text)) assert.ok(hasAnswer(`${p.title} ${p.text}`, g.answers))
    }
  }
})

test('a positive without an answers list names the file, the line and the fix', async () => {
  const input = join(dir, 'old.jsonl')
  writeFileSync(input, `${pair('a', 'squad', 'who', ['x'])}\n${pair('b', 'squad', 'what', undefined)}\n`)
  await assert.rejects(
    mineHardNegatives({ retriever, input, output: join(dir, 'never.jsonl'), depth: 10, negatives: 1, log: silentLogger }),
    (err: unknown) => isAmbigqaError(err) && err.code === 'AMBIGQA_ERR_TRAINING_DATA' && /old\.jsonl, line 2/.test(err.message) && /ambigqa data build/.test(err.message),
  )
})
