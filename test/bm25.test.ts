import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'node:test'
import Database from 'better-sqlite3'
import { buildIndex } from '../index/build-index.js'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { analyze } from '../retriever/english-analyzer.js'
import { lengthToNorm, normToLength } from '../retriever/lucene-norms.js'
import { PassageStore, STORE_FILE } from '../retriever/passage-store.js'
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

/** The eval-300 DPR passages, each twice under two ids (exact ties everywhere, as in the 1M
 * synthetic corpus), in small segments so lists span many segments and skip blocks. */
async function tiedStore(dir: string): Promise<string> {
  const lines = readFileSync(dprTsv.path, 'utf8').split('\n').filter((line) => line.length > 0)
  const [header, ...rows] = lines
  const twice = rows.flatMap((row) => [row, row.replace(/^([^\t]*)/, '$1-copy')])
  const path = join(dir, 'twice.tsv')
  writeFileSync(path, `${header}\n${twice.join('\n')}\n`)
  const store = join(dir, 'store')
  await buildIndex({ store, sources: [{ path }], onError: 'fail', batchSize: 2000, segmentSize: 3000, workers: 1, log: silentLogger })
  return store
}

test('block-max evaluation returns exactly the exhaustive top k, scores and tie order included', { skip: dprTsv.skip || dev.skip, timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bm25-'))
  const store = PassageStore.openReadOnly(await tiedStore(dir))
  assert.equal(store.hasBlockImpacts(), true)
  const retriever = new Bm25SqliteRetriever(store, { k1: 0.9, b: 0.4 })
  assert.equal(retriever.scorer, 'block-max')
  const dev300 = loadQuestions(dev.path).slice(0, 300).map((q) => q.question)
  const questions = [
    ...dev300,
    // One term, a frequent one (many skip blocks) and a rare one.
    'film', 'zeppelin',
    // Many terms: three questions in one.
    dev300.slice(0, 3).join(' '),
    // Every term the same: repeats weigh a list, and equal lists must tie as they do exhaustively.
    'who who wrote wrote the song song',
  ]
  let compared = 0
  let beyondMatches = 0
  for (const q of questions) {
    // The exhaustive ranking: term at a time with k beyond every match, so nothing is pruned.
    const all = retriever.topRowids(q, 1_000_000, 'maxscore')
    for (const k of [1, 3, 10, 100, 1000, 1_000_000]) {
      const got = retriever.topRowids(q, k, 'block-max')
      assert.deepEqual(got, all.slice(0, k), `${q} @${k}`)
      compared++
      if (k > all.length) beyondMatches++
    }
  }
  assert.ok(compared > 0 && beyondMatches > 0, 'compared rankings, some with k beyond the matches')
  assert.ok(analyze('film').length === 1 && analyze(questions.at(-2)!).length > 15, 'a one-term and a many-term query')
  await retriever.close()
})

test('a schema 2 store (no block impacts) still reads and ranks the same; a build resumed on it adds them', { skip: dprTsv.skip || dev.skip, timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bm25-'))
  const path = join(dir, 'p.tsv')
  writeFileSync(path, readFileSync(dprTsv.path, 'utf8').split('\n').slice(0, 2001).join('\n') + '\n')
  const storeDir = join(dir, 'store')
  await buildIndex({ store: storeDir, sources: [{ path }], onError: 'fail', batchSize: 500, segmentSize: 700, workers: 1, log: silentLogger })
  const questions = loadQuestions(dev.path).slice(0, 50).map((q) => q.question)
  const current = new Bm25SqliteRetriever(PassageStore.openReadOnly(storeDir), { k1: 0.9, b: 0.4 })
  const expected = questions.map((q) => current.topRowids(q, 20))
  await current.close()
  // Downgrade to what schema 2 wrote.
  const db = new Database(join(storeDir, STORE_FILE))
  db.exec("ALTER TABLE postings DROP COLUMN maxima; UPDATE meta SET value = '2' WHERE key = 'schema_version'")
  db.close()
  const old = new Bm25SqliteRetriever(PassageStore.openReadOnly(storeDir), { k1: 0.9, b: 0.4 })
  assert.equal(old.scorer, 'maxscore')
  assert.ok(expected.length > 0 && expected.every((top) => top.length > 0))
  assert.deepEqual(questions.map((q) => old.topRowids(q, 20)), expected)
  // Block-max without impacts bounds blocks by list weights: slower, still exact.
  assert.deepEqual(questions.map((q) => old.topRowids(q, 20, 'block-max')), expected)
  await old.close()
  // Resuming a build migrates the store: schema 3, the column back, old segments without impacts.
  const more = join(dir, 'more.tsv')
  const lines = readFileSync(dprTsv.path, 'utf8').split('\n')
  writeFileSync(more, [lines[0], ...lines.slice(2001, 3001)].join('\n') + '\n')
  await buildIndex({ store: storeDir, sources: [{ path }, { path: more }], onError: 'fail', batchSize: 500, segmentSize: 700, workers: 1, log: silentLogger })
  const resumed = new Bm25SqliteRetriever(PassageStore.openReadOnly(storeDir), { k1: 0.9, b: 0.4 })
  assert.equal(resumed.scorer, 'block-max')
  for (const q of questions) assert.deepEqual(resumed.topRowids(q, 20), resumed.topRowids(q, 1_000_000, 'maxscore').slice(0, 20), q)
  const withImpacts = (resumed as unknown as { store: PassageStore }).store.db.prepare('SELECT count(*) AS n FROM postings WHERE maxima IS NOT NULL').get() as { n: number }
  assert.ok(withImpacts.n > 0, 'segments written after the upgrade carry impacts')
  await resumed.close()
})
