// health reports each dependency with its state and is not ok when a required one is down;
// /health/ready and /health/live are for a load balancer. With Elasticsearch as the backend,
// health and passage(id) ask Elasticsearch, not a local store. A down Elasticsearch is a closed
// port here: a real fault, nothing mocked.
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { after, before, test } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { Bm25EsRetriever } from '../retriever/bm25-es-retriever.js'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { EsPassageSource, SqlitePassageSource, type PassageSource } from '../retriever/passage-source.js'
import { PassageStore } from '../retriever/passage-store.js'
import { defaults } from '../core/config.js'
import { plainDecider } from '../reader/answer-set-decider.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { ambigqaServer } from '../src/server/app.js'
import { buildDemoStore } from './helpers/demo-store.js'
import { runCli } from './helpers/run-cli.js'

let storeDir = ''
let store: PassageStore
let closedUrl = ''

before(async () => {
  storeDir = await buildDemoStore('server-health-')
  store = PassageStore.openReadOnly(storeDir)
  // A port that was free a moment ago and that nothing listens on.
  const probe = createServer()
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r))
  closedUrl = `http://127.0.0.1:${(probe.address() as { port: number }).port}`
  await new Promise((r) => probe.close(r))
})
after(() => store.close())

/** Reader and disambiguator stages that answer at once: the reader is "loaded". */
const readerStages = {
  reader: { name: 'reader', run: async (input: any) => ({ ...input, answers: [] }) },
  decider: plainDecider(defaults.reader),
  disambiguator: { name: 'qd', run: async (input: any) => ({ ...input, answers: [], ambiguous: false }) },
}

async function app(pipeline: Pipeline, passages: PassageSource): Promise<FastifyInstance> {
  const instance = Fastify({ logger: false })
  await instance.register(ambigqaServer, { pipeline, passages })
  return instance
}
type Body = { data?: any; errors?: { message: string; extensions?: { code?: string } }[] }
const gql = async (instance: FastifyInstance, query: string) => {
  const response = await instance.inject({ method: 'POST', url: '/graphql', body: { query } })
  return { status: response.statusCode, body: response.json() as Body }
}
const HEALTH = '{ health { ok store passages retriever dependencies { name required state detail } } }'

test('every dependency up: health ok, /health/ready 200, /health/live 200', async () => {
  const pipeline = new Pipeline({ retriever: new Bm25SqliteRetriever(PassageStore.openReadOnly(storeDir), defaults.bm25), ...readerStages })
  const instance = await app(pipeline, new SqlitePassageSource(store))
  const { body } = await gql(instance, HEALTH)
  assert.equal(body.data.health.ok, true)
  assert.deepEqual(body.data.health.dependencies.map((d: { name: string; state: string }) => [d.name, d.state]), [['store', 'UP'], ['reader', 'UP']])
  const ready = await instance.inject({ method: 'GET', url: '/health/ready' })
  assert.equal(ready.statusCode, 200)
  assert.equal(ready.json().ok, true)
  assert.equal(ready.json().passages, 5531)
  assert.deepEqual((await instance.inject({ method: 'GET', url: '/health/live' })).json(), { live: true })
  await instance.close()
  await pipeline.close()
})

test('Elasticsearch down: health not ok with the reason, ready 503, live 200; passage(id) and search fail with its code instead of reading SQLite', async () => {
  const es = { ...defaults.elasticsearch, url: closedUrl, requestTimeoutMs: 2000 }
  const pipeline = new Pipeline({ retriever: new Bm25EsRetriever(es), ...readerStages })
  const passages = new EsPassageSource(es)
  const instance = await app(pipeline, passages)
  const { body } = await gql(instance, HEALTH)
  const health = body.data.health
  assert.equal(health.ok, false)
  assert.equal(health.store, `${closedUrl} index ${es.index}`)
  assert.equal(health.passages, null)
  assert.equal(health.retriever, 'bm25-es')
  const down = health.dependencies.find((d: { name: string }) => d.name === 'elasticsearch')
  assert.equal(down.state, 'DOWN')
  assert.equal(down.required, true)
  assert.match(down.detail, /^AMBIGQA_ERR_ELASTICSEARCH_UNAVAILABLE: Elasticsearch at http:\/\/127\.0\.0\.1:\d+ is not reachable/)
  const ready = await instance.inject({ method: 'GET', url: '/health/ready' })
  assert.equal(ready.statusCode, 503)
  assert.equal(ready.json().ok, false)
  assert.equal((await instance.inject({ method: 'GET', url: '/health/live' })).statusCode, 200)
  // The id of a passage the local demo store holds: Elasticsearch is asked, not SQLite.
  const id = store.byRowids([1])[0]!.id
  const passage = await gql(instance, `{ passage(id: "${id}") { id } }`)
  assert.equal(passage.body.errors?.[0]?.extensions?.code, 'AMBIGQA_ERR_ELASTICSEARCH_UNAVAILABLE')
  assert.equal(passage.body.data.passage, null)
  const search = await gql(instance, '{ search(question: "harry potter") { id } }')
  assert.equal(search.body.errors?.[0]?.extensions?.code, 'AMBIGQA_ERR_ELASTICSEARCH_UNAVAILABLE')
  await instance.close()
  await pipeline.close()
  await passages.close()
})

test('serve with its Elasticsearch unreachable starts not ready and says so; /health/ready answers 503', { timeout: 120_000 }, async () => {
  let port = 0
  let log = ''
  let found: () => void = () => {}
  const listening = new Promise<void>((r) => { found = r })
  let child: import('node:child_process').ChildProcess | undefined
  const exited = runCli(['serve', '--retriever', 'bm25-es', '--port', '0'], {
    env: { AMBIGQA_LOG_LEVEL: 'info', AMBIGQA_ELASTICSEARCH_URL: closedUrl, AMBIGQA_ELASTICSEARCH_REQUEST_TIMEOUT_MS: '2000' },
    onSpawn: (c) => {
      child = c
      c.stdout!.on('data', (chunk) => {
        log += chunk
        const match = /listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(log)
        if (match) port = Number(match[1])
        if (port && log.includes('not ready')) found()
      })
    },
  })
  await Promise.race([listening, exited.then((r) => { throw new Error(`serve exited: ${r.stderr}`) })])
  assert.match(log, /not ready: elasticsearch is down \(AMBIGQA_ERR_ELASTICSEARCH_UNAVAILABLE: .*\)/)
  const ready = await fetch(`http://127.0.0.1:${port}/health/ready`)
  assert.equal(ready.status, 503)
  const live = await fetch(`http://127.0.0.1:${port}/health/live`)
  assert.equal(live.status, 200)
  child!.kill('SIGTERM')
  assert.equal((await exited).code, 0)
})
