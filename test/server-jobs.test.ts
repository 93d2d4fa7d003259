// Jobs read the server's files, so each rule of issue 20 has its test here: off by default, a
// token, paths under the data roots (no '..', no symbolic link out), no file content in job
// messages, the request limiter, the Host header, and one writer per store.
import assert from 'node:assert/strict'
import { copyFileSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { SqlitePassageSource } from '../retriever/passage-source.js'
import { PassageStore } from '../retriever/passage-store.js'
import { defaults } from '../core/config.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { ambigqaServer, type ServerOptions } from '../src/server/app.js'
import { buildDemoStore, DEMO_CORPUS } from './helpers/demo-store.js'

const TOKEN = 'a-token-of-sixteen-or-more'
let storeDir = ''
let store: PassageStore
let pipeline: Pipeline
let root = ''
let dataRoot = ''
let outside = ''

before(async () => {
  storeDir = await buildDemoStore('server-jobs-')
  store = PassageStore.openReadOnly(storeDir)
  pipeline = new Pipeline({ retriever: new Bm25SqliteRetriever(PassageStore.openReadOnly(storeDir), defaults.bm25) })
  root = mkdtempSync(join(tmpdir(), 'server-jobs-files-'))
  dataRoot = join(root, 'data')
  outside = join(root, 'private')
  mkdirSync(dataRoot)
  mkdirSync(outside)
  copyFileSync(DEMO_CORPUS, join(dataRoot, 'passages.tsv.gz'))
  writeFileSync(join(outside, 'secrets.env'), 'SECRET_API_KEY=hunter2\n')
  // A file inside the root that is not a passage source, whose first line must not leak either.
  writeFileSync(join(dataRoot, 'notes.tsv'), 'SECRET_API_KEY=hunter2\n')
  symlinkSync(join(outside, 'secrets.env'), join(dataRoot, 'link.tsv'))
})
after(async () => { await pipeline.close(); store.close() })

async function app(options: Partial<ServerOptions> = {}): Promise<FastifyInstance> {
  const instance = Fastify({ logger: false })
  await instance.register(ambigqaServer, {
    pipeline, passages: new SqlitePassageSource(store),
    jobs: { enabled: true, authToken: TOKEN, dataRoots: [dataRoot], indexStore: join(mkdtempSync(join(root, 'built-')), 'store') },
    ...options,
  })
  return instance
}

type Body = { data?: any; errors?: { message: string; extensions?: { code?: string } }[] }
async function gql(instance: FastifyInstance, query: string, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) {
  const response = await instance.inject({ method: 'POST', url: '/graphql', headers, body: { query } })
  return { status: response.statusCode, body: response.json() as Body }
}
const code = (body: Body) => body.errors?.[0]?.extensions?.code
const startIndexing = (source: string) => `mutation { startIndexing(source: ${JSON.stringify(source)}) { id state message } }`

async function finished(instance: FastifyInstance, id: string): Promise<{ state: string; message: string }> {
  for (;;) {
    const { body } = await gql(instance, `{ job(id: "${id}") { state message } }`)
    if (body.data.job.state === 'SUCCEEDED' || body.data.job.state === 'FAILED') return body.data.job
    await new Promise((r) => setTimeout(r, 50))
  }
}

test('jobs are off unless the operator turns them on: startIndexing and startEvaluation are refused, token or not', async () => {
  const instance = await app({ jobs: undefined })
  for (const query of [startIndexing(join(dataRoot, 'passages.tsv.gz')), 'mutation { startEvaluation(data: "/etc/passwd") { id } }']) {
    const { status, body } = await gql(instance, query)
    assert.equal(status, 403)
    assert.equal(code(body), 'AMBIGQA_ERR_JOBS_DISABLED')
    assert.match(body.errors![0]!.message, /server\.jobs/)
  }
  await instance.close()
})

test('with jobs on, a missing or wrong token is refused with 401', async () => {
  const instance = await app()
  for (const headers of [{} as Record<string, string>, { authorization: 'Bearer wrong-token-wrong-token' }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }]) {
    const { status, body } = await gql(instance, startIndexing(join(dataRoot, 'passages.tsv.gz')), headers)
    assert.equal(status, 401, JSON.stringify(headers))
    assert.equal(code(body), 'AMBIGQA_ERR_UNAUTHORIZED')
  }
  await instance.close()
})

test("paths outside the data roots, with '..', or through a symbolic link out are refused without saying whether they exist", async () => {
  const instance = await app()
  const refused = [join(outside, 'secrets.env'), join(outside, 'no-such-file'), '/etc/passwd', `${dataRoot}/../private/secrets.env`, '../private/secrets.env', 'link.tsv', join(dataRoot, 'link.tsv')]
  for (const path of refused) {
    const { status, body } = await gql(instance, startIndexing(path))
    assert.equal(status, 403, path)
    assert.equal(code(body), 'AMBIGQA_ERR_PATH_NOT_ALLOWED', path)
    assert.doesNotMatch(JSON.stringify(body), /hunter2/)
  }
  // The same words for a file that exists and one that does not.
  const exists = (await gql(instance, startIndexing(join(outside, 'secrets.env')))).body.errors![0]!.message
  const absent = (await gql(instance, startIndexing(join(outside, 'no-such-file')))).body.errors![0]!.message
  assert.equal(exists.replace('secrets.env', 'X'), absent.replace('no-such-file', 'X'))
  const evaluation = await gql(instance, `mutation { startEvaluation(data: ${JSON.stringify(join(outside, 'secrets.env'))}) { id } }`)
  assert.equal(code(evaluation.body), 'AMBIGQA_ERR_PATH_NOT_ALLOWED')
  await instance.close()
})

test('a job that fails on a file under the root says its code, never the file content', async () => {
  const instance = await app()
  const { status, body } = await gql(instance, startIndexing('notes.tsv'))
  assert.equal(status, 200, JSON.stringify(body))
  const job = await finished(instance, body.data.startIndexing.id)
  assert.equal(job.state, 'FAILED')
  assert.match(job.message, /^failed with AMBIGQA_ERR_[A-Z_]+; the server log has the details/)
  assert.doesNotMatch(job.message, /hunter2|SECRET/)
  await instance.close()
})

test('mutations go through the request limiter: with every slot taken, startIndexing is refused with 503', async () => {
  let release: () => void = () => {}
  const held = new Promise<void>((r) => { release = r })
  let entered: () => void = () => {}
  const searching = new Promise<void>((r) => { entered = r })
  const blocking = new Pipeline({ retriever: { name: 'held', close: async () => {}, search: async () => { entered(); await held; return [] } } })
  const instance = await app({ pipeline: blocking, limits: { concurrency: 1, queue: 0 } })
  const search = gql(instance, '{ search(question: "harry potter") { id } }')
  await searching
  const { status, body } = await gql(instance, startIndexing(join(dataRoot, 'passages.tsv.gz')))
  assert.equal(status, 503)
  assert.equal(code(body), 'AMBIGQA_ERR_OVERLOADED')
  release()
  assert.equal((await search).status, 200)
  await instance.close()
})

test('beyond loopback, requests for a host name the server does not answer for are refused (DNS rebinding)', async () => {
  const instance = await app({ host: '0.0.0.0', allowedHosts: ['qa.example.org'] })
  const ask = (host: string) => instance.inject({ method: 'POST', url: '/graphql', headers: { host }, body: { query: '{ health { ok } }' } })
  for (const host of ['attacker.example:4000', 'qa.example.org.evil.example', 'evil.example']) {
    const response = await ask(host)
    assert.equal(response.statusCode, 421, host)
    assert.equal(response.json().code, 'AMBIGQA_ERR_HOST_NOT_ALLOWED')
  }
  for (const host of ['qa.example.org', 'QA.example.org:4000', '127.0.0.1:4000', 'localhost:4000', '[::1]:4000']) assert.equal((await ask(host)).statusCode, 200, host)
  assert.equal((await instance.inject({ method: 'GET', url: '/health/live', headers: { host: 'evil.example' } })).statusCode, 421)
  await instance.close()
  const bound = await app({ host: '192.0.2.7' })
  assert.equal((await bound.inject({ method: 'GET', url: '/health/live', headers: { host: '192.0.2.7:4000' } })).statusCode, 200)
  assert.equal((await bound.inject({ method: 'GET', url: '/health/live', headers: { host: 'evil.example' } })).statusCode, 421)
  await bound.close()
})

test('five indexing jobs sent at once: one runs, four are refused with STORE_BUSY, and the postings equal one build', async () => {
  const instance = await app()
  const sent = await Promise.all(Array.from({ length: 5 }, () => gql(instance, startIndexing(join(dataRoot, 'passages.tsv.gz')))))
  const started = sent.filter((r) => r.status === 200)
  const busy = sent.filter((r) => code(r.body) === 'AMBIGQA_ERR_STORE_BUSY')
  assert.equal(started.length, 1, JSON.stringify(sent.map((r) => r.body)))
  assert.equal(busy.length, 4)
  for (const r of busy) {
    assert.equal(r.status, 409)
    assert.match(r.body.errors![0]!.message, /being written by indexing job .* of this server; one writer at a time/)
  }
  const job = await finished(instance, started[0]!.body.data.startIndexing.id)
  assert.equal(job.state, 'SUCCEEDED', job.message)
  const built = PassageStore.openReadOnly(/ in (.*)$/.exec(job.message)![1]!)
  const one = store.stats()
  const got = built.stats()
  built.close()
  assert.ok(one.postings > 0)
  assert.deepEqual({ passages: got.passages, postings: got.postings, terms: got.terms, checksum: got.checksum }, { passages: one.passages, postings: one.postings, terms: one.terms, checksum: one.checksum })
  // Finished, the store takes a new job again (a resumed build that adds nothing).
  const again = await gql(instance, startIndexing(join(dataRoot, 'passages.tsv.gz')))
  assert.equal(again.status, 200, JSON.stringify(again.body))
  assert.equal((await finished(instance, again.body.data.startIndexing.id)).state, 'SUCCEEDED')
  await instance.close()
})
