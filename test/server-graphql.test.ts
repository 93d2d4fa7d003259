import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { getIntrospectionQuery } from 'graphql'
import { SqlitePassageSource } from '../retriever/passage-source.js'
import { PassageStore } from '../retriever/passage-store.js'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { defaults } from '../core/config.js'
import { plainDecider } from '../reader/answer-set-decider.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { ambigqaServer } from '../src/server/app.js'
import type { ServerLimits } from '../src/server/limits.js'
import { buildDemoStore } from './helpers/demo-store.js'

let storeDir = ''
let store: PassageStore
let pipeline: Pipeline

before(async () => {
  storeDir = await buildDemoStore('server-')
  store = PassageStore.openReadOnly(storeDir)
  pipeline = new Pipeline({ retriever: new Bm25SqliteRetriever(PassageStore.openReadOnly(storeDir), defaults.bm25) })
})
after(async () => { await pipeline.close(); store.close() })

async function app(limits: Partial<ServerLimits> = {}, using = pipeline): Promise<FastifyInstance> {
  const instance = Fastify({ logger: false, bodyLimit: 64 * 1024 })
  await instance.register(ambigqaServer, { pipeline: using, passages: new SqlitePassageSource(store), limits })
  return instance
}

async function gql(instance: FastifyInstance, query: string, variables?: object) {
  const response = await instance.inject({ method: 'POST', url: '/graphql', body: { query, variables } })
  return { status: response.statusCode, headers: response.headers, body: response.json() as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] } }
}

test('search returns real BM25 passages, passage(id) fetches one, health reports the store up and the missing reader down', async () => {
  const instance = await app()
  const { status, body } = await gql(instance, '{ search(question: "when did harry potter come out", k: 3) { id title text score } }')
  assert.equal(status, 200)
  assert.equal(body.data.search.length, 3)
  assert.ok(body.data.search[0].score >= body.data.search[1].score)
  const id = body.data.search[0].id
  const one = await gql(instance, 'query($id: ID!) { passage(id: $id) { id title } }', { id })
  assert.equal(one.body.data.passage.id, id)
  assert.equal((await gql(instance, '{ passage(id: "no-such-id") { id } }')).body.data.passage, null)
  const health = await gql(instance, '{ health { ok passages retriever store dependencies { name required state detail } } }')
  assert.equal(health.body.data.health.passages, 5531)
  assert.equal(health.body.data.health.store, storeDir)
  assert.deepEqual(health.body.data.health.dependencies, [
    { name: 'store', required: true, state: 'UP', detail: `${storeDir}: 5531 passages` },
    { name: 'reader', required: true, state: 'DOWN', detail: 'no reader was configured' },
  ])
  assert.equal(health.body.data.health.ok, false, 'the reader is required: ask cannot work without it')
  await instance.close()
})

const code = (body: { errors?: { extensions?: { code?: string } }[] }) => body.errors?.[0]?.extensions?.code

test('empty and oversize questions, oversize batch are refused with codes', async () => {
  const instance = await app({ maxQuestionLength: 50, maxBatch: 2 })
  assert.equal(code((await gql(instance, '{ search(question: "   ") { id } }')).body), 'AMBIGQA_ERR_QUESTION_INVALID')
  assert.equal(code((await gql(instance, `{ search(question: "${'a'.repeat(51)}") { id } }`)).body), 'AMBIGQA_ERR_QUESTION_INVALID')
  assert.equal(code((await gql(instance, '{ askMany(questions: ["a", "b", "c"]) { question } }')).body), 'AMBIGQA_ERR_BATCH_TOO_LARGE')
  await instance.close()
})

test('without reader models, ask and askMany say why and search still works', async () => {
  const instance = await app()
  const ask = await gql(instance, '{ ask(question: "who wrote harry potter") { question answers { answer } } }')
  assert.equal(code(ask.body), 'AMBIGQA_ERR_READER_UNAVAILABLE')
  assert.match(ask.body.errors![0]!.message, /reader models, which did not load: no reader was configured/)
  assert.equal(code((await gql(instance, '{ askMany(questions: ["a"]) { question } }')).body), 'AMBIGQA_ERR_READER_UNAVAILABLE')
  await instance.close()
})

test('query depth over the limit is refused', async () => {
  const instance = await app({ maxDepth: 2 })
  const { body } = await gql(instance, '{ ask(question: "q") { answers { evidence { id } } } }')
  assert.ok(body.errors?.length)
  assert.equal(code(body), 'AMBIGQA_ERR_QUERY_TOO_DEEP')
  assert.match(body.errors![0]!.message, /depth 4 is more than the limit of 2.*server\.maxDepth/)
  await instance.close()
})

test('GraphiQL\'s introspection query passes the default depth and cost limits; nesting introspection lists does not', async () => {
  const instance = await app()
  const full = await gql(instance, getIntrospectionQuery({ inputValueDeprecation: true, schemaDescription: true, specifiedByUrl: true, directiveIsRepeatable: true }))
  assert.equal(full.status, 200, JSON.stringify(full.body.errors))
  const types = full.body.data.__schema.types.map((t: { name: string }) => t.name)
  assert.ok(types.length > 0)
  assert.ok(types.includes('AnswerSet'))
  const nested = await gql(instance, '{ __schema { types { fields { type { fields { type { fields { type { fields { name } } } } } } } } } }')
  assert.equal(code(nested.body), 'AMBIGQA_ERR_QUERY_TOO_DEEP')
  await instance.close()
})

test('the cost limit admits a full askMany batch (32 questions with the defaults) and the batch limit refuses 33', async () => {
  const instance = await app()
  const questions = (n: number) => Array.from({ length: n }, (_, i) => `question ${i}`)
  const full = await gql(instance, 'query($qs: [String!]!) { askMany(questions: $qs) { question ambiguous answers { answer question confidence evidence { title } } } }', { qs: questions(32) })
  assert.equal(code(full.body), 'AMBIGQA_ERR_READER_UNAVAILABLE', 'past the cost and batch limits, it meets the missing reader')
  const literal = await gql(instance, `{ askMany(questions: ${JSON.stringify(questions(32))}) { question } }`)
  assert.equal(code(literal.body), 'AMBIGQA_ERR_READER_UNAVAILABLE', 'a literal list is costed by its length too')
  const over = await gql(instance, 'query($qs: [String!]!) { askMany(questions: $qs) { question } }', { qs: questions(33) })
  assert.equal(code(over.body), 'AMBIGQA_ERR_BATCH_TOO_LARGE')
  await instance.close()
})

test('beyond concurrency + queue requests get an explicit overload error and HTTP 503', async () => {
  // BM25 over SQLite is synchronous; a retriever that waits 50 ms first makes requests overlap.
  const real = pipeline.stages.retriever
  const slow = new Pipeline({ retriever: { name: 'slow', close: async () => {}, search: async (q, k) => { await new Promise((r) => setTimeout(r, 50)); return real.search(q, k) } } })
  const instance = await app({ concurrency: 1, queue: 1 }, slow)
  const many = await Promise.all(Array.from({ length: 12 }, () => gql(instance, '{ search(question: "harry potter film release", k: 100) { id } }')))
  const overloaded = many.filter((r) => code(r.body) === 'AMBIGQA_ERR_OVERLOADED')
  assert.ok(overloaded.length > 0, 'some requests are refused')
  for (const r of overloaded) assert.equal(r.status, 503)
  for (const r of many) assert.ok(r.status === 200 || code(r.body) === 'AMBIGQA_ERR_OVERLOADED')
  await instance.close()
})

test('a request longer than timeoutMs fails with AMBIGQA_ERR_TIMEOUT', async () => {
  const real = pipeline.stages.retriever
  const slow = new Pipeline({ retriever: { name: 'slow', close: async () => {}, search: async (q, k) => { await new Promise((r) => setTimeout(r, 300)); return real.search(q, k) } } })
  const instance = await app({ timeoutMs: 50 }, slow)
  const { status, body } = await gql(instance, '{ search(question: "harry potter") { id } }')
  assert.equal(code(body), 'AMBIGQA_ERR_TIMEOUT')
  assert.equal(status, 504)
  await instance.close()
})

test('a timed-out ask aborts its work: the reader sees the aborted signal', async () => {
  let seen: AbortSignal | undefined
  const reading = new Pipeline({
    retriever: pipeline.stages.retriever,
    reader: { name: 'slow reader', run: async (input, signal) => { seen = signal; await new Promise((r) => setTimeout(r, 200)); return { ...input, answers: [] } } },
    decider: plainDecider(defaults.reader),
    disambiguator: { name: 'qd', run: async (input) => ({ ...input, answers: [], ambiguous: false }) },
  })
  const instance = await app({ timeoutMs: 50 }, reading)
  const { body } = await gql(instance, '{ ask(question: "harry potter") { ambiguous } }')
  assert.equal(code(body), 'AMBIGQA_ERR_TIMEOUT')
  assert.equal(seen?.aborted, true)
  await instance.close()
})

test('body over bodyLimit is refused with 413; metrics and graphiql are served', async () => {
  const instance = await app()
  const big = await instance.inject({ method: 'POST', url: '/graphql', body: { query: `{ search(question: "${'a'.repeat(70_000)}") { id } }` } })
  assert.equal(big.statusCode, 413)
  await gql(instance, '{ health { ok } }')
  const metrics = await instance.inject({ method: 'GET', url: '/metrics' })
  assert.match(metrics.body, /ambigqa_graphql_requests_total\{field="health",outcome="ok"\} 1/)
  assert.equal((await instance.inject({ method: 'GET', url: '/graphiql' })).statusCode, 200)
  await instance.close()
})

test('GraphiQL works offline: its page loads every script and style from this server, none from a CDN', async () => {
  const instance = await app()
  const page = await instance.inject({ method: 'GET', url: '/graphiql' })
  assert.equal(page.statusCode, 200)
  assert.match(page.headers['content-type'] as string, /^text\/html/)
  assert.doesNotMatch(page.body, /https?:\/\//, 'no absolute URL: nothing is fetched from elsewhere')
  const urls = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
  assert.ok(urls.length > 0)
  assert.deepEqual(urls.filter((u) => !u.startsWith('/graphiql/assets/')), [])
  for (const name of ['react.production.min.js', 'react-dom.production.min.js', 'graphiql.min.js', 'graphiql.min.css', 'start.js']) {
    assert.ok(urls.includes(`/graphiql/assets/${name}`), name)
  }
  for (const url of urls) {
    const asset = await instance.inject({ method: 'GET', url })
    assert.equal(asset.statusCode, 200, url)
    assert.match(asset.headers['content-type'] as string, url.endsWith('.css') ? /^text\/css/ : /^text\/javascript/, url)
    assert.ok(asset.body.length > 100, url)
  }
  assert.match((await instance.inject({ method: 'GET', url: '/graphiql/assets/graphiql.min.js' })).body, /GraphiQL/)
  assert.equal((await instance.inject({ method: 'GET', url: '/graphiql/assets/no-such.js' })).statusCode, 404)
  assert.equal((await instance.inject({ method: 'GET', url: '/graphiql/assets/..%2F..%2Fpackage.json' })).statusCode, 404)
  await instance.close()
})

test('a query over the cost limit is refused before it runs: aliased asks, fragments under aliases, big askMany lists', async () => {
  const instance = await app({ maxCost: 120, maxBatch: 10 })
  const aliased = await gql(instance, '{ a: ask(question: "x") { question } b: ask(question: "y") { question } c: ask(question: "z") { question } }')
  assert.equal(aliased.status, 400)
  assert.equal(code(aliased.body), 'AMBIGQA_ERR_QUERY_TOO_COSTLY')
  assert.match(aliased.body.errors![0]!.message, /more than the limit of 120.*server\.maxCost/)
  const fragments = await gql(instance, 'fragment S on Query { search(question: "x") { id title text score } } { ...S a: search(question: "y") { id } b: search(question: "z") { id } ...S ...S ...S ...S ...S ...S ...S ...S ...S ...S ...S ...S ...S ...S ...S ...S }')
  assert.equal(code(fragments.body), 'AMBIGQA_ERR_QUERY_TOO_COSTLY')
  const batch = await gql(instance, '{ askMany(questions: ["a", "b", "c"]) { question } }')
  assert.equal(code(batch.body), 'AMBIGQA_ERR_QUERY_TOO_COSTLY')
  const variable = await gql(instance, 'query($qs: [String!]!) { askMany(questions: $qs) { question } }', { qs: ['a', 'b', 'c'] })
  assert.equal(code(variable.body), 'AMBIGQA_ERR_QUERY_TOO_COSTLY', 'a variable list is costed by its length when it runs')
  const cheap = await gql(instance, '{ search(question: "harry potter", k: 2) { id } health { ok } }')
  assert.equal(cheap.status, 200)
  assert.equal(cheap.body.data.search.length, 2)
  await instance.close()
})

test('every numeric argument is bounded by server.maxK with a coded error that reads correctly: k, options.retrieve, options.read', async () => {
  const instance = await app({ maxK: 50 })
  const cases: [string, string, number][] = [
    ['{ search(question: "harry potter", k: 0) { id } }', 'k', 0],
    ['{ search(question: "harry potter", k: 51) { id } }', 'k', 51],
    ['{ ask(question: "harry potter", options: { read: 0 }) { question } }', 'options.read', 0],
    ['{ ask(question: "harry potter", options: { read: -1 }) { question } }', 'options.read', -1],
    ['{ ask(question: "harry potter", options: { retrieve: 100000 }) { question } }', 'options.retrieve', 100000],
    ['{ ask(question: "harry potter", options: { retrieve: 0 }) { question } }', 'options.retrieve', 0],
    ['{ ask(question: "harry potter", options: { retrieve: 2147483647, read: 2147483647 }) { question } }', 'options.retrieve', 2147483647],
    ['{ askMany(questions: ["harry potter"], options: { read: -5 }) { question } }', 'options.read', -5],
  ]
  for (const [query, name, value] of cases) {
    const { status, body } = await gql(instance, query)
    assert.equal(status, 400, query)
    assert.equal(code(body), 'AMBIGQA_ERR_ARGUMENT_INVALID', query)
    assert.equal(body.errors![0]!.message, `argument ${name} is ${value}, outside [1, 50]. Give an integer from 1 to 50 (the limit is server.maxK)`)
  }
  const fine = await gql(instance, '{ search(question: "harry potter", k: 50) { id } }')
  assert.equal(fine.status, 200)
  assert.equal(fine.body.data.search.length, 34, 'every passage that matches, fewer than k')
  await instance.close()
})

test('a request the queue cannot serve before its deadline is refused at the door with 503, not left to time out with 504', async () => {
  let calls = 0
  const real = pipeline.stages.retriever
  const slow = new Pipeline({ retriever: { name: 'slow', close: async () => {}, search: async (q, k) => { calls++; await new Promise((r) => setTimeout(r, 40)); return real.search(q, k) } } })
  const instance = await app({ concurrency: 1, queue: 1000, timeoutMs: 3000 }, slow)
  const query = '{ search(question: "harry potter film release", k: 5) { id } }'
  // One request alone first: the server learns what a search costs.
  assert.equal((await gql(instance, query)).status, 200)
  calls = 0
  // 200 × 40 ms of work against a 3 s deadline, one at a time: most cannot be served in time.
  const many = await Promise.all(Array.from({ length: 200 }, () => gql(instance, query)))
  const answered = many.filter((r) => r.status === 200)
  const refused = many.filter((r) => code(r.body) === 'AMBIGQA_ERR_OVERLOADED')
  assert.equal(many.filter((r) => code(r.body) === 'AMBIGQA_ERR_TIMEOUT').length, 0, 'no 504')
  assert.ok(answered.length > 0 && refused.length > 0, `${answered.length} answered, ${refused.length} refused`)
  assert.equal(answered.length + refused.length, many.length)
  assert.equal(calls, answered.length, 'a refused request never ran')
  for (const r of refused) {
    assert.equal(r.status, 503)
    assert.match(r.body.errors![0]!.message, /would not leave this one time to finish before its deadline/)
    assert.ok(Number(r.headers['retry-after']) >= 1, `Retry-After: ${r.headers['retry-after']}`)
  }
  await instance.close()
})
