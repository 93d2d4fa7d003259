// Elasticsearch (BM25 and kNN) against the real server (scripts/elasticsearch up). Without a reachable server
// these tests skip, naming the command; under CI (CI set) they require it, since .ci/run starts it.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import test from 'node:test'
import { gunzipSync } from 'node:zlib'
import { Client } from '@elastic/elasticsearch'
import { buildIndex } from '../index/build-index.js'
import { buildElasticsearchIndex } from '../index/elasticsearch/build-elasticsearch.js'
import { encodeElasticsearch } from '../index/dense/encode-elasticsearch.js'
import { vectorField, vectorMapping } from '../retriever/dense-es-retriever.js'
import { Bm25EsRetriever } from '../retriever/bm25-es-retriever.js'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { DenseEncoder } from '../retriever/dense-encoder.js'
import { DenseEsRetriever } from '../retriever/dense-es-retriever.js'
import { DenseRetriever } from '../retriever/dense-retriever.js'
import { encodeStore } from '../index/dense/store-vectors.js'
import { analyze } from '../retriever/english-analyzer.js'
import { openRetriever } from '../retriever/open-retriever.js'
import { PassageStore } from '../retriever/passage-store.js'
import { defaults } from '../core/config.js'
import { AmbigqaError } from '../core/errors.js'
import { silentLogger } from '../core/log.js'
import { DEFAULT_ENCODERS_DIR } from '../core/paths.js'
import { runCli } from './helpers/run-cli.js'
import { prerequisite } from './helpers/prerequisite.js'
import { sharedFile } from './helpers/shared-data.js'

const URL = process.env.AMBIGQA_ELASTICSEARCH_URL ?? 'http://127.0.0.1:9200'
const SCRIPT = resolve(process.cwd(), 'scripts', 'elasticsearch')

async function reachable(): Promise<boolean> {
  try {
    const res = await fetch(`${URL}/_cluster/health?wait_for_status=yellow&timeout=5s`, { signal: AbortSignal.timeout(8000) })
    return res.ok
  } catch {
    return false
  }
}

const up = await reachable()
// Required under AMBIGQA_TEST_REQUIRE_ALL (and, as before, CI or AMBIGQA_TEST_REQUIRE_ELASTICSEARCH).
const esSkip = prerequisite(up ? false : `needs Elasticsearch at ${URL}; start it with scripts/elasticsearch up`, Boolean(process.env.CI || process.env.AMBIGQA_TEST_REQUIRE_ELASTICSEARCH))
const tsv = sharedFile('corpus/dpr-asqa300.tsv')
const ENCODER = 'e5-small-v2-int8'
const encoderSkip = prerequisite(existsSync(join(DEFAULT_ENCODERS_DIR, ENCODER, 'model.onnx')) ? false : `needs models/encoders/${ENCODER}: run scripts/assets ${ENCODER}`)
const index = `ambigqa-test-${process.pid}`
const client = new Client({ node: URL, maxRetries: 0, requestTimeout: 10_000 })

test.after(async () => {
  if (up) await client.indices.delete({ index, ignore_unavailable: true }).catch(() => undefined)
  await client.close()
})

const QUESTIONS = [
  'who played the doctor in dexter season 1',
  'when did the harry potter movie come out',
  "who sings don't stop believing",
  'what is the population of new york city',
  'when was the first super bowl played',
  'who wrote the declaration of independence',
  'how many episodes are in game of thrones season 8',
  'where is the world\'s largest ocean',
]

test('the english analyzer gives the same tokens as ours', { skip: esSkip }, async () => {
  const sentences = [
    "The Doctor's running cars in Dexter season 1 weren't the 3.5 fastest ones!",
    'Harry Potter and the Philosopher\'s Stone premiered in London on 4 November 2001.',
    'U.S.A. e-mail addresses like john@example.com, and C++ or O\'Neil\'s café naïve résumé',
  ]
  for (const text of sentences) {
    const res = await client.indices.analyze({ analyzer: 'english', text })
    assert.deepEqual(res.tokens?.map((t) => t.token), analyze(text), text)
  }
})

test('bulk ingest of real passages, BM25 parity with our SQLite BM25, resume', { skip: esSkip || tsv.skip, timeout: 120_000 }, async () => {
  const report = await buildElasticsearchIndex({ es: { url: URL, index }, sources: [{ path: tsv.path }], onError: 'fail', batchSize: 1000, log: silentLogger })
  assert.ok(report.passages > 5000, `indexed ${report.passages}`)
  const mapping = await client.indices.getMapping({ index })
  assert.equal((mapping[index]!.mappings.properties!.text as { analyzer?: string }).analyzer, 'english')
  const settings = await client.indices.getSettings({ index })
  assert.equal((settings[index]!.settings!.index!.similarity as unknown as { default: { k1: string } }).default.k1, '0.9')

  const store = join(mkdtempSync(join(tmpdir(), 'es-parity-')), 'store')
  await buildIndex({ store, sources: [{ path: tsv.path }], onError: 'fail', batchSize: 2000, segmentSize: 2000, workers: 1, log: silentLogger })
  assert.equal(report.passages, PassageStore.openReadOnly(store).count())
  const ours = new Bm25SqliteRetriever(PassageStore.openReadOnly(store), { k1: 0.9, b: 0.4 })
  const es = new Bm25EsRetriever({ url: URL, index })
  try {
    for (const q of QUESTIONS) {
      const a = await ours.search(q, 10)
      const b = await es.search(q, 10)
      assert.equal(b.length, a.length, q)
      for (let r = 0; r < a.length; r++) {
        // Elasticsearch scores with LegacyBM25Similarity, whose numerator keeps the (k1 + 1)
        // factor Lucene 8 dropped: the same ranking, every score times 1.9.
        assert.ok(Math.abs(a[r]!.score - b[r]!.score / 1.9) < 1e-4 * Math.max(1, a[r]!.score), `${q}: score at rank ${r}: ours ${a[r]!.score}, es ${b[r]!.score} / 1.9`)
        if (a[r]!.id !== b[r]!.id) {
          // float32 scoring in Lucene: order may differ only among near-equal scores.
          const other = a.findIndex((p) => p.id === b[r]!.id)
          assert.ok(other !== -1 && Math.abs(a[other]!.score - a[r]!.score) < 1e-5 * a[r]!.score, `${q}: rank ${r} differs beyond a float tie`)
        }
      }
    }
  } finally {
    await ours.close()
    await es.close()
  }

  // Building again resumes from the recorded position: nothing is added twice.
  const again = await buildElasticsearchIndex({ es: { url: URL, index }, sources: [{ path: tsv.path }], onError: 'fail', batchSize: 1000, log: silentLogger })
  assert.equal(again.passages, report.passages)
  assert.equal(again.sent, 0)
  // Forgetting the position and re-sending everything keeps the count (document _id = passage id).
  await client.indices.putMapping({ index, _meta: { ambigqa: { state: 'building', sources: {} } } })
  const resent = await buildElasticsearchIndex({ es: { url: URL, index }, sources: [{ path: tsv.path }], onError: 'fail', batchSize: 1000, log: silentLogger })
  assert.equal(resent.sent, report.passages)
  assert.equal(resent.passages, report.passages)
})

test('an unreachable cluster is one clear error, from the API and from the CLI', async () => {
  const es = new Bm25EsRetriever({ url: 'http://127.0.0.1:1', index })
  const started = Date.now()
  await assert.rejects(es.search('anything', 5), (err: unknown) => {
    assert.ok(err instanceof AmbigqaError)
    assert.equal(err.code, 'AMBIGQA_ERR_ELASTICSEARCH_UNAVAILABLE')
    assert.match(err.message, /http:\/\/127\.0\.0\.1:1.*scripts\/elasticsearch up/)
    return true
  })
  assert.ok(Date.now() - started < 2000, 'fails fast')
  await es.close()
  const tiny = join(mkdtempSync(join(tmpdir(), 'es-cli-')), 'p.jsonl')
  ;(await import('node:fs')).writeFileSync(tiny, '{"id":"1","title":"A","text":"b c"}\n')
  const cli = await runCli(['index', 'build', '--backend', 'elasticsearch', '--es-url', 'http://127.0.0.1:1', '--source', tiny])
  assert.equal(cli.code, 1, cli.stderr)
  assert.match(cli.stderr, /AMBIGQA_ERR_ELASTICSEARCH_UNAVAILABLE/)
  assert.match(cli.stderr, /scripts\/elasticsearch up/)
  assert.doesNotMatch(cli.stderr, /\n\s+at /, 'no stack trace')
})

test('kNN on a dense_vector field: the same neighbours as exact search, resumable, vectors copied from a store', { skip: esSkip || encoderSkip, timeout: 300_000 }, async () => {
  // 200 real passages of the demo corpus in a SQLite store and two Elasticsearch indices; 10 more come later.
  const dir = mkdtempSync(join(tmpdir(), 'es-dense-'))
  const lines = gunzipSync(readFileSync(resolve(process.cwd(), 'assets/demo/passages.tsv.gz'))).toString('utf8').split('\n')
  const [first, later] = [join(dir, 'a.tsv'), join(dir, 'b.tsv')]
  writeFileSync(first, `${lines.slice(0, 201).join('\n')}\n`)
  writeFileSync(later, `${[lines[0], ...lines.slice(201, 211)].join('\n')}\n`)
  const store = join(dir, 'store')
  await buildIndex({ store, sources: [{ path: first }], onError: 'fail', batchSize: 100, segmentSize: 1000, workers: 1, log: silentLogger })
  await encodeStore({ store, model: ENCODER, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 16, threads: 1, log: silentLogger })
  const [encoded, copied] = [`${index}-dense`, `${index}-copied`]
  const build = (idx: string, path: string) => buildElasticsearchIndex({ es: { url: URL, index: idx }, sources: [{ path }], onError: 'fail', batchSize: 1000, log: silentLogger })
  await build(encoded, first)
  await build(copied, first)
  const encode = (idx: string, fromStore?: string) =>
    encodeElasticsearch({ es: { url: URL, index: idx }, model: ENCODER, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 64, threads: 1, log: silentLogger, ...(fromStore ? { fromStore } : {}) })

  const queryEncoder = await DenseEncoder.load(ENCODER, DEFAULT_ENCODERS_DIR, 1)
  const missing = new DenseEsRetriever({ url: URL, index: encoded }, queryEncoder)
  await assert.rejects(missing.search('who won the world series', 5), (err: unknown) =>
    err instanceof AmbigqaError && err.code === 'AMBIGQA_ERR_MODEL_MISSING' && err.message.includes('ambigqa index encode --backend elasticsearch'))

  assert.equal((await encode(encoded)).encoded, 200)
  assert.equal((await encode(copied, store)).encoded, 200)
  const mapping = await client.indices.getMapping({ index: encoded })
  assert.deepEqual(mapping[encoded]!.mappings.properties![vectorField(ENCODER)], vectorMapping(384))

  const exact = new DenseRetriever(PassageStore.openReadOnly(store), await DenseEncoder.load(ENCODER, DEFAULT_ENCODERS_DIR, 1))
  const viaCopy = new DenseEsRetriever({ url: URL, index: copied }, await DenseEncoder.load(ENCODER, DEFAULT_ENCODERS_DIR, 1))
  try {
    let overlap = 0
    for (const q of QUESTIONS) {
      const want = await exact.search(q, 10)
      // The store's own vectors through HNSW (200 vectors, 100 candidates or more: exact in practice); scores are the dot product.
      const copiedHits = await viaCopy.search(q, 10)
      assert.deepEqual(copiedHits.map((p) => p.id), want.map((p) => p.id), q)
      copiedHits.forEach((p, i) => assert.ok(Math.abs(p.score - want[i]!.score) < 1e-4, `${q}: ${p.score} vs ${want[i]!.score}`))
      // Encoded anew in other batches: int8 quantises activations per batch, so vectors differ slightly.
      overlap += (await missing.search(q, 10)).filter((p) => want.some((w) => w.id === p.id)).length
    }
    assert.ok(overlap >= 0.8 * 10 * QUESTIONS.length, `top-10 overlap ${overlap}`)
  } finally {
    await exact.close()
    await viaCopy.close()
  }

  // Hybrid over Elasticsearch alone, as the configuration opens it.
  const hybrid = await openRetriever({
    ...defaults, retriever: 'hybrid', elasticsearch: { ...defaults.elasticsearch, url: URL, index: encoded },
    dense: { ...defaults.dense, model: ENCODER, threads: 1 }, hybrid: { ...defaults.hybrid, retrievers: ['bm25-es', 'dense-es'], depth: 20 },
  })
  try {
    assert.equal(hybrid.name, `hybrid(bm25-es+dense-es(${ENCODER}))`)
    const fused = await hybrid.search(QUESTIONS[0]!, 10)
    const bm25 = new Bm25EsRetriever({ url: URL, index: encoded })
    const pool = new Set([...(await missing.search(QUESTIONS[0]!, 20)), ...(await bm25.search(QUESTIONS[0]!, 20))].map((p) => p.id))
    await bm25.close()
    assert.equal(fused.length, 10)
    assert.ok(fused.every((p) => pool.has(p.id)))
  } finally {
    await hybrid.close()
  }

  // Nothing left to do; 10 new passages later, only they are encoded.
  assert.equal((await encode(encoded)).encoded, 0)
  await build(encoded, later)
  assert.equal((await encode(encoded)).encoded, 10)
  await missing.close()
  await client.indices.delete({ index: [encoded, copied], ignore_unavailable: true })
})

test('down then up: a query fails fast while the cluster is down, the next one works once it is back', { skip: esSkip || tsv.skip, timeout: 120_000 }, async () => {
  const es = new Bm25EsRetriever({ url: URL, index })
  try {
    const before = await es.search(QUESTIONS[0]!, 5)
    assert.equal(before.length, 5)
    execFileSync(SCRIPT, ['down'], { stdio: 'ignore' })
    const started = Date.now()
    await assert.rejects(es.search(QUESTIONS[0]!, 5), (err: unknown) => err instanceof AmbigqaError && err.code === 'AMBIGQA_ERR_ELASTICSEARCH_UNAVAILABLE')
    assert.ok(Date.now() - started < 2000, `failed in ${Date.now() - started} ms`)
    execFileSync(SCRIPT, ['up'], { stdio: 'ignore' })
    const after = await es.search(QUESTIONS[0]!, 5)
    assert.deepEqual(after.map((p) => p.id), before.map((p) => p.id))
  } finally {
    execFileSync(SCRIPT, ['up'], { stdio: 'ignore' })
    await es.close()
  }
})
