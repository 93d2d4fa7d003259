import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'node:test'
import { buildIndex } from '../index/build-index.js'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { analyze } from '../retriever/english-analyzer.js'
import { lengthToNorm, normToLength } from '../retriever/lucene-norms.js'
import { PassageStore } from '../retriever/passage-store.js'
import { loadQuestions } from '../src/eval/questions.js'
import { silentLogger } from '../core/log.js'
import { sharedFile } from './helpers/shared-data.js'

test('English analysis: possessives, lower case, Lucene stop words, Porter stems, UAX#29-like words', () => {
  assert.deepEqual(analyze("The running dogs' houses of Harry's"), ['run', 'dog', 'hous', 'harri'])
  assert.deepEqual(analyze('U.S.A. 1,000.5 state-of-the-art'), ['u.s.a', '1,000.5', 'state', 'art'])
  assert.deepEqual(analyze('It is not such a thing, and that was then'), ['thing'])
  assert.deepEqual(analyze('Wilhelm Röntgen'), ['wilhelm', 'röntgen'])
  // As Lucene's StandardTokenizer: one token per ideograph, middle dots inside words,
  // superscripts and fractions outside them, and İ lower-cased to i.
  assert.deepEqual(analyze('紅軍長征 n·m 12 km² 2½ İlyasova'), ['紅', '軍', '長', '征', 'n·m', '12', 'km', '2', 'ilyasova'])
})

test('length norms round-trip as Lucene 8 SmallFloat.intToByte4 does', () => {
  for (let n = 0; n < 24; n++) assert.equal(normToLength(lengthToNorm(n)), n)
  assert.equal(normToLength(lengthToNorm(100)), 96)
  assert.equal(normToLength(lengthToNorm(1000)), 984)
  for (let n = 1; n < 5000; n++) assert.ok(normToLength(lengthToNorm(n)) <= n)
})

async function tinyStore(rows: [string, string, string][]): Promise<PassageStore> {
  const dir = mkdtempSync(join(tmpdir(), 'bm25-'))
  const path = join(dir, 'p.tsv')
  writeFileSync(path, `id\ttext\ttitle\n${rows.map((r) => r.join('\t')).join('\n')}\n`)
  await buildIndex({ store: join(dir, 'store'), sources: [{ path }], onError: 'fail', batchSize: 2, segmentSize: 2, workers: 1, log: silentLogger })
  return PassageStore.openReadOnly(join(dir, 'store'))
}

test('scores follow Lucene 8 BM25 summed over title and text, with k1 and b from the caller', async () => {
  const store = await tinyStore([
    ['a', 'apple apple banana', 'Fruit'],
    ['b', 'banana cherry', 'Apple'],
    ['c', 'cherry date elderberry fig', 'Other'],
  ])
  const k1 = 0.9
  const b = 0.4
  const retriever = new Bm25SqliteRetriever(store, { k1, b })
  const hits = retriever.searchSync('apple', 3)
  // text: N=3, df(apple)=1, avgdl=(3+2+4)/3; title: N=3, df=1, avgdl=1.
  const idf = Math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
  const textScore = (idf * 2) / (2 + k1 * (1 - b + (b * 3) / 3))
  const titleScore = (idf * 1) / (1 + k1 * (1 - b + (b * 1) / 1))
  assert.deepEqual(hits.map((h) => h.id), ['a', 'b'])
  assert.ok(Math.abs(hits[0]!.score - textScore) < 1e-12)
  assert.ok(Math.abs(hits[1]!.score - titleScore) < 1e-12)

  // A different k1 changes the scores without rebuilding anything.
  const flat = new Bm25SqliteRetriever(PassageStore.openReadOnly(store.dir), { k1: 0, b })
  assert.ok(Math.abs(flat.searchSync('apple', 1)[0]!.score - idf) < 1e-12)
  await retriever.close()
  await flat.close()
})

test('multi-segment stores rank as single-segment ones; k is honoured; ties go to the earlier passage', async () => {
  const rows: [string, string, string][] = Array.from({ length: 9 }, (_, i) => [`p${i}`, i % 3 === 0 ? 'zebra crossing' : `filler ${i}`, 'T'])
  const store = await tinyStore(rows)
  const retriever = new Bm25SqliteRetriever(store, { k1: 0.9, b: 0.4 })
  assert.deepEqual(retriever.searchSync('zebra', 10).map((h) => h.id), ['p0', 'p3', 'p6'])
  assert.deepEqual(retriever.searchSync('zebra', 2).map((h) => h.id), ['p0', 'p3'])
  assert.deepEqual(retriever.searchSync('the of and', 5), [])
  assert.throws(() => retriever.searchSync('zebra', 0), { code: 'AMBIGQA_ERR_USAGE' })
  await retriever.close()
})

const dprTsv = sharedFile('corpus/dpr-asqa300.tsv')
const dev = sharedFile('ambignq/dev_light.json')
test('MaxScore pruning returns exactly the exhaustive top k', { skip: dprTsv.skip || dev.skip, timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bm25-'))
  // Small segments and lists longer than a skip block exercise every path of the pruned scorer.
  await buildIndex({ store: join(dir, 'store'), sources: [{ path: dprTsv.path }], onError: 'fail', batchSize: 1000, segmentSize: 700, workers: 1, log: silentLogger })
  const retriever = new Bm25SqliteRetriever(PassageStore.openReadOnly(join(dir, 'store')), { k1: 0.9, b: 0.4 })
  const questions = loadQuestions(dev.path).slice(0, 300).map((q) => q.question)
  for (const q of questions) {
    // k beyond the number of matching passages never prunes: the exhaustive ranking.
    const all = retriever.topRowids(q, 1_000_000)
    for (const k of [1, 5, 20, 100]) assert.deepEqual(retriever.topRowids(q, k), all.slice(0, k), `${q} @${k}`)
  }
  await retriever.close()
})
