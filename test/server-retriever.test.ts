// The retriever argument of search and of ask's options: honoured, not ignored. Real parts only:
// 200 demo passages in a SQLite store, BM25, and e5 vectors where the encoder is installed; the
// kinds this machine cannot serve (Elasticsearch on a closed port, an encoder folder that is
// empty) give their own coded errors instead of the configured retriever's passages.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import Fastify, { type FastifyInstance } from 'fastify'
import { buildIndex } from '../index/build-index.js'
import { encodeStore } from '../index/dense/store-vectors.js'
import { buildAnnIndex } from '../index/dense/ann-index.js'
import { describeRetriever } from '../core/retriever.js'
import { openRetriever } from '../retriever/open-retriever.js'
import { SqlitePassageSource } from '../retriever/passage-source.js'
import { PassageStore } from '../retriever/passage-store.js'
import { loadConfig, type Config } from '../core/config.js'
import { silentLogger } from '../core/log.js'
import { DEFAULT_ENCODERS_DIR } from '../core/paths.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { ambigqaServer } from '../src/server/app.js'
import { prerequisite } from './helpers/prerequisite.js'

const MODEL = 'e5-small-v2-int8'
const encoderSkip = prerequisite(existsSync(join(DEFAULT_ENCODERS_DIR, MODEL, 'model.onnx')) ? false : `needs models/encoders/${MODEL}: run scripts/assets ${MODEL}`)
const QUESTION = 'who played in the world series in 1989'

let dir = ''
let store = ''
let passages: PassageStore

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'server-retriever-'))
  const lines = gunzipSync(readFileSync(resolve(process.cwd(), 'assets/demo/passages.tsv.gz'))).toString('utf8').split('\n').slice(0, 201)
  writeFileSync(join(dir, 'p.tsv'), `${lines.join('\n')}\n`)
  store = join(dir, 'store')
  await buildIndex({ store, sources: [{ path: join(dir, 'p.tsv') }], onError: 'fail', batchSize: 100, segmentSize: 1000, workers: 1, log: silentLogger })
  passages = PassageStore.openReadOnly(store)
})
after(() => { passages?.close() })

/** A server configured for BM25 on the store, opening other kinds from `flags` as the CLI's would. */
async function server(flags: Record<string, unknown> = {}): Promise<{ app: FastifyInstance; pipeline: Pipeline; config: Config }> {
  // Elasticsearch on a port nobody listens on: a down cluster, whether or not one runs here.
  const config = loadConfig({ env: {}, flags: { store, retriever: 'bm25-sqlite', 'elasticsearch.url': 'http://127.0.0.1:9', ...flags } })
  const pipeline = new Pipeline({ retriever: await openRetriever(config), retrieverKind: config.retriever, openRetriever: (kind) => openRetriever({ ...config, retriever: kind }) })
  const app = Fastify({ logger: false })
  await app.register(ambigqaServer, { pipeline, passages: new SqlitePassageSource(passages), limits: {} })
  return { app, pipeline, config }
}

async function search(app: FastifyInstance, retriever?: string) {
  const arg = retriever ? `, retriever: ${retriever}` : ''
  const response = await app.inject({ method: 'POST', url: '/graphql', body: { query: `query($q: String!) { search(question: $q, k: 5${arg}) { id score } }`, variables: { q: QUESTION } } })
  return { status: response.statusCode, body: response.json() as { data?: { search: { id: string; score: number }[] } | null; errors?: { message: string; extensions?: { code?: string } }[] } }
}

test('a retriever that cannot be opened or reached is an error with its code, never the configured one\'s passages', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'no-encoders-'))
  const { app, pipeline } = await server({ 'dense.modelsDir': empty })
  try {
    const bm25 = await search(app)
    assert.equal(bm25.status, 200)
    assert.ok(bm25.body.data!.search.length > 0)
    assert.deepEqual((await search(app, 'BM25_SQLITE')).body.data, bm25.body.data, 'naming the configured kind changes nothing')
    const cases: [string, string][] = [
      ['BM25_ES', 'AMBIGQA_ERR_ELASTICSEARCH_UNAVAILABLE'],
      ['DENSE_ES', 'AMBIGQA_ERR_MODEL_MISSING'],
      ['DENSE', 'AMBIGQA_ERR_MODEL_MISSING'],
      ['HYBRID', 'AMBIGQA_ERR_MODEL_MISSING'],
    ]
    for (const [name, code] of cases) {
      const { status, body } = await search(app, name)
      assert.equal(body.errors?.[0]?.extensions?.code, code, name)
      assert.ok(status >= 400, name)
      assert.equal(body.data ?? null, null, name)
    }
    // A failed open is not kept: the same request fails again the same way (and would succeed once the encoder is there).
    assert.equal((await search(app, 'DENSE')).body.errors?.[0]?.extensions?.code, 'AMBIGQA_ERR_MODEL_MISSING')
    const unknown = await search(app, 'WHOOSH')
    assert.equal(unknown.status, 400, 'not in the enum: refused by GraphQL validation')
  } finally {
    await app.close()
    await pipeline.close()
  }
})

test('a pipeline that cannot open other retrievers says so with AMBIGQA_ERR_RETRIEVER_UNAVAILABLE', async () => {
  const config = loadConfig({ env: {}, flags: { store, retriever: 'bm25-sqlite' } })
  const pipeline = new Pipeline({ retriever: await openRetriever(config) })
  const app = Fastify({ logger: false })
  await app.register(ambigqaServer, { pipeline, passages: new SqlitePassageSource(passages), limits: {} })
  try {
    assert.ok((await search(app, 'BM25_SQLITE')).body.data!.search.length > 0)
    const dense = await search(app, 'DENSE')
    assert.equal(dense.status, 400)
    assert.equal(dense.body.errors?.[0]?.extensions?.code, 'AMBIGQA_ERR_RETRIEVER_UNAVAILABLE')
    assert.equal(dense.body.errors?.[0]?.message, "retriever dense is not available here: this server serves only bm25-sqlite. Leave the retriever argument out to use the server's own (health.retriever names it)")
  } finally {
    await app.close()
    await pipeline.close()
  }
})

test('DENSE and HYBRID give their own rankings and scores: e5\'s cosine, the fusion of BM25 and e5', { skip: encoderSkip, timeout: 300_000 }, async () => {
  await encodeStore({ store, model: MODEL, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 16, threads: 1, log: silentLogger })
  const { app, pipeline, config } = await server()
  try {
    const bm25 = (await search(app)).body.data!.search
    const dense = await search(app, 'DENSE')
    const hybrid = await search(app, 'HYBRID')
    assert.equal(dense.status, 200, JSON.stringify(dense.body.errors))
    assert.equal(hybrid.status, 200, JSON.stringify(hybrid.body.errors))
    for (const list of [bm25, dense.body.data!.search, hybrid.body.data!.search]) assert.equal(list.length, 5)
    // Each is what that retriever, opened directly, returns.
    for (const [kind, got] of [['dense', dense.body.data!.search], ['hybrid', hybrid.body.data!.search]] as const) {
      const direct = await openRetriever({ ...config, retriever: kind })
      try {
        const want = await direct.search(QUESTION, 5)
        assert.deepEqual(got.map((p) => p.id), want.map((p) => p.id), kind)
        got.forEach((p, i) => assert.ok(Math.abs(p.score - want[i]!.score) < 1e-6, `${kind} ${p.id}`))
      } finally {
        await direct.close()
      }
    }
    // e5 cosines are below 1; BM25 scores here are well above; the fusion is neither.
    assert.ok(dense.body.data!.search.every((p) => p.score > 0 && p.score < 1))
    assert.ok(bm25[0]!.score > 1)
    assert.notDeepEqual(dense.body.data!.search.map((p) => p.score), bm25.map((p) => p.score))
    assert.notDeepEqual(hybrid.body.data!.search.map((p) => p.score), dense.body.data!.search.map((p) => p.score))

    // Which path dense retrieval takes is said (health's `retrieval`), and the ANN index, once
    // built, gives this small store the same five passages as exact search.
    const exact = await openRetriever({ ...config, retriever: 'hybrid' })
    assert.match(describeRetriever(exact), /^bm25-sqlite; dense\(e5-small-v2-int8\): exact search over 200 vectors in memory$/)
    await exact.close()
    await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger })
    const viaAnn = await openRetriever({ ...config, retriever: 'dense' })
    try {
      assert.match(describeRetriever(viaAnn), /^ANN index \(HNSW i8/)
      assert.deepEqual((await viaAnn.search(QUESTION, 5)).map((p) => p.id), dense.body.data!.search.map((p) => p.id))
    } finally {
      await viaAnn.close()
    }
  } finally {
    await app.close()
    await pipeline.close()
  }
})
