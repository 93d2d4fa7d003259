// Elasticsearch against the real server (scripts/elasticsearch up). Without a reachable server
// these tests skip, naming the command; under CI (CI set) they require it, since .ci/run starts it.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import test from 'node:test'
import { Client } from '@elastic/elasticsearch'
import { buildIndex } from '../index/build-index.js'
import { buildElasticsearchIndex } from '../index/build-elasticsearch.js'
import { Bm25EsRetriever } from '../retriever/bm25-es-retriever.js'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { analyze } from '../retriever/english-analyzer.js'
import { PassageStore } from '../retriever/passage-store.js'
import { AmbigqaError } from '../src/errors.js'
import { silentLogger } from '../src/log.js'
import { runCli } from './helpers/run-cli.js'
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
if (!up && (process.env.CI || process.env.AMBIGQA_TEST_REQUIRE_ELASTICSEARCH)) throw new Error(`CI (or AMBIGQA_TEST_REQUIRE_ELASTICSEARCH) is set but Elasticsearch is not reachable at ${URL}: .ci/run should have started it with scripts/elasticsearch up`)
const esSkip = up ? false : `needs Elasticsearch at ${URL}; start it with scripts/elasticsearch up`
const tsv = sharedFile('corpus/dpr-asqa300.tsv')
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
