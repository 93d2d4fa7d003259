// ask and askMany over the whole pipeline with real parts: BM25 on SQLite over the demo corpus,
// and the tiny real ONNX reader made by train/ (test/helpers/reader-fixture.ts).
import assert from 'node:assert/strict'
import { after, before, mock, test } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { Reader } from '../reader/reader.js'
import { QuestionDisambiguation } from '../reader/question-disambiguation.js'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { SqlitePassageSource } from '../retriever/passage-source.js'
import { PassageStore } from '../retriever/passage-store.js'
import { defaults } from '../core/config.js'
import { plainDecider } from '../reader/answer-set-decider.js'
import { hasAnswer } from '../core/has-answer.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { ambigqaServer } from '../src/server/app.js'
import { readerFixture } from './helpers/reader-fixture.js'
import { buildDemoStore } from './helpers/demo-store.js'

const fixture = readerFixture()
let storeDir = ''
let store: PassageStore
let pipeline: Pipeline
let instance: FastifyInstance
let disambiguations = 0

before(async () => {
  if (fixture.skip) return
  storeDir = await buildDemoStore('server-ask-')
  store = PassageStore.openReadOnly(storeDir)
  const settings = { ...defaults.reader, kind: 'spanseqgen' as const, spanseqgen: fixture.dir!, qd: fixture.dir!, precision: 'fp32' as const, numBeams: 1 }
  const qd = await QuestionDisambiguation.open(settings)
  // SpanSeqGen reads with QD's model (the same folder), as open-pipeline shares it.
  const reader = await Reader.open(settings, undefined, { folder: fixture.dir!, model: qd.seq2seq! })
  pipeline = new Pipeline({
    retriever: new Bm25SqliteRetriever(PassageStore.openReadOnly(storeDir), defaults.bm25),
    // The QD stage, counted: whether the server ran question disambiguation at all.
    reader, decider: plainDecider(settings), disambiguator: { name: 'qd', run: (input, signal) => { disambiguations++; return qd.run(input, signal) } }, close: async () => { await reader.close(); await qd.close() },
  })
  instance = Fastify({ logger: false })
  await instance.register(ambigqaServer, { pipeline, passages: new SqlitePassageSource(store), limits: {} })
})
after(async () => {
  if (fixture.skip) return
  await instance.close()
  await pipeline.close()
  store.close()
})

async function gql(query: string, variables?: object) {
  const response = await instance.inject({ method: 'POST', url: '/graphql', body: { query, variables } })
  return { status: response.statusCode, body: response.json() as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] } }
}

const ANSWER_SET = 'question ambiguous ambiguity found answers { answer question rewritten confidence evidence { id title text } } passages { id } timings { retrievalMs rerankMs readMs decideMs disambiguateMs totalMs }'

test('ask returns an answer set: distinct answers, a question each, evidence that contains the answer, every stage timed', { skip: fixture.skip }, async () => {
  const { status, body } = await gql(`query($q: String!) { ask(question: $q, options: { retrieve: 20, read: 3 }) { ${ANSWER_SET} } }`, { q: 'who wrote the harry potter books' })
  assert.equal(status, 200, JSON.stringify(body.errors))
  const set = body.data.ask
  assert.equal(set.question, 'who wrote the harry potter books')
  assert.equal(set.passages.length, 20)
  // The detector decides: ambiguous is P(more than one answer) > 0.5, and an unambiguous question keeps one answer.
  assert.equal(set.ambiguous, set.ambiguity > 0.5)
  if (!set.ambiguous) assert.ok(set.answers.length <= 1)
  assert.ok(set.answers.length > 0, 'the demo corpus answers this question')
  assert.equal(set.found, true)
  const keys = set.answers.map((a: { answer: string }) => a.answer.toLowerCase())
  assert.equal(new Set(keys).size, keys.length)
  for (const a of set.answers) {
    assert.ok(a.confidence > 0 && a.confidence <= 1)
    assert.ok(a.question.length > 0)
    for (const p of a.evidence) assert.ok(hasAnswer(`${p.title} ${p.text}`, [a.answer]), `${a.answer} not in ${p.id}`)
    if (set.answers.length === 1) assert.equal(a.question, set.question)
    // A rewrite differs from the prompt; an answer whose question is the prompt says so.
    assert.equal(a.rewritten, a.question !== set.question)
  }
  const rewrites = set.answers.filter((a: { rewritten: boolean }) => a.rewritten).map((a: { question: string }) => a.question.toLowerCase())
  assert.equal(new Set(rewrites).size, rewrites.length, 'the rewrites of one set differ from each other')
  for (const key of ['retrievalMs', 'rerankMs', 'readMs', 'decideMs', 'disambiguateMs', 'totalMs']) assert.equal(typeof set.timings[key], 'number')
})

test('question disambiguation runs only when the query selects an answer\'s question or rewritten; the answers are the same', { skip: fixture.skip }, async () => {
  const q = 'who wrote the harry potter books'
  const before = disambiguations
  const lean = await gql(`query($q: String!) { ask(question: $q, options: { retrieve: 10, read: 2 }) { ambiguous answers { answer confidence evidence { id } } } }`, { q })
  assert.equal(lean.status, 200, JSON.stringify(lean.body.errors))
  const many = await gql(`query($qs: [String!]!) { askMany(questions: $qs, options: { retrieve: 10, read: 2 }) { answers { answer } } }`, { qs: [q, q] })
  assert.equal(many.status, 200, JSON.stringify(many.body.errors))
  assert.equal(disambiguations, before, 'no disambiguation for queries that read no rewrite')
  const full = await gql(`query($q: String!) { ask(question: $q, options: { retrieve: 10, read: 2 }) { ambiguous answers { answer confidence evidence { id } ...Rewrite } } } fragment Rewrite on Answer { question rewritten }`, { q })
  assert.equal(full.status, 200, JSON.stringify(full.body.errors))
  assert.equal(disambiguations, before + 1, 'a fragment that selects the rewrite runs it')
  assert.ok(full.body.data.ask.answers.length > 0, 'the demo corpus answers this question')
  for (const a of full.body.data.ask.answers) assert.equal(typeof a.question, 'string')
  const strip = (set: { ambiguous: boolean; answers: { answer: string; confidence: number; evidence: unknown }[] }) => ({ ambiguous: set.ambiguous, answers: set.answers.map(({ answer, confidence, evidence }) => ({ answer, confidence, evidence })) })
  assert.deepEqual(strip(lean.body.data.ask), strip(full.body.data.ask))
  assert.deepEqual(many.body.data.askMany[0].answers.map((a: { answer: string }) => a.answer), full.body.data.ask.answers.map((a: { answer: string }) => a.answer))
})

test('askMany answers each question as ask does, sharing the reader (batched, same results)', { skip: fixture.skip }, async () => {
  const questions = ['who wrote the harry potter books', 'when was the eiffel tower built', 'who played in the world series in 1989']
  const many = await gql(`query($qs: [String!]!) { askMany(questions: $qs, options: { retrieve: 10, read: 2 }) { question answers { answer question } } }`, { qs: questions })
  assert.equal(many.status, 200, JSON.stringify(many.body.errors))
  for (const [i, q] of questions.entries()) {
    const one = await gql(`query($q: String!) { ask(question: $q, options: { retrieve: 10, read: 2 }) { question answers { answer question } } }`, { q })
    assert.deepEqual(many.body.data.askMany[i], one.body.data.ask)
  }
})

test('askMany at its deadline: the sets answered by then come back (HTTP 200), a question still being read is null with AMBIGQA_ERR_TIMEOUT at its path', { skip: fixture.skip }, async () => {
  const questions = ['who wrote the harry potter books', 'when was the eiffel tower built', 'who played in the world series in 1989']
  const held = questions[1]!
  const query = `query($qs: [String!]!) { askMany(questions: $qs, options: { retrieve: 10, read: 2 }) { question answers { answer question } } }`
  const alone = await gql(query, { qs: questions })
  assert.equal(alone.status, 200, JSON.stringify(alone.body.errors))
  // The real stages, but the held question's reading waits for its request's deadline (a slow read
  // cannot be timed for real); the deadline comes once the others are decided.
  const { reader, decider } = pipeline.stages
  let decided = 0
  let othersDecided: () => void = () => {}
  const others = new Promise<void>((resolve) => { othersDecided = resolve })
  const watched = new Pipeline({
    ...pipeline.stages,
    reader: { name: 'reader', run: (input, signal) => input.question !== held ? reader!.run(input, signal) : new Promise((_, reject) => signal!.addEventListener('abort', () => reject(signal!.reason), { once: true })) },
    decider: { name: 'decide', run: async (input, signal) => { const out = await decider!.run(input, signal); if (++decided === questions.length - 1) othersDecided(); return out } },
    close: async () => {},
  })
  const timeoutMs = 600_000
  const server = Fastify({ logger: false })
  await server.register(ambigqaServer, { pipeline: watched, passages: new SqlitePassageSource(store), limits: { timeoutMs } })
  mock.timers.enable({ apis: ['setTimeout'] })
  let response
  try {
    const pending = server.inject({ method: 'POST', url: '/graphql', body: { query, variables: { qs: questions } } })
    await others
    mock.timers.tick(timeoutMs)
    response = await pending
  } finally {
    mock.timers.reset()
    await server.close()
  }
  const body = response.json() as { data: { askMany: unknown[] }; errors?: { path: (string | number)[]; extensions?: { code?: string } }[] }
  assert.equal(response.statusCode, 200, JSON.stringify(body.errors))
  assert.equal(body.data.askMany.length, questions.length)
  assert.equal(body.data.askMany[1], null, 'the question still being read')
  assert.deepEqual(body.errors?.map((e) => [e.path.map(String), e.extensions?.code]), [[['askMany', '1'], 'AMBIGQA_ERR_TIMEOUT']])
  for (const i of [0, 2]) assert.deepEqual(body.data.askMany[i], alone.body.data.askMany[i], `${questions[i]}: as answered with time enough`)
})

test('ask and askMany honour options.retriever: the configured kind answers as the default, another this server cannot open is refused with a code', { skip: fixture.skip }, async () => {
  const query = (retriever: string) => `query($q: String!) { ask(question: $q, options: { retrieve: 10, read: 2${retriever ? `, retriever: ${retriever}` : ''} }) { question answers { answer question } passages { id } } }`
  const q = 'who wrote the harry potter books'
  const plain = await gql(query(''), { q })
  const named = await gql(query('BM25_SQLITE'), { q })
  assert.equal(named.status, 200, JSON.stringify(named.body.errors))
  assert.ok(plain.body.data.ask.passages.length > 0)
  assert.deepEqual(named.body.data, plain.body.data)
  // This pipeline (like server-graphql's) has no way to open another retriever.
  for (const body of [(await gql(query('DENSE'), { q })).body, (await gql('{ askMany(questions: ["a", "b"], options: { retriever: HYBRID }) { question } }')).body]) {
    assert.equal(body.errors?.[0]?.extensions?.code, 'AMBIGQA_ERR_RETRIEVER_UNAVAILABLE')
    assert.match(body.errors![0]!.message, /this server serves only bm25-sqlite/)
  }
})

test('ask without options.read reads the configured reader.read passages (pipeline read)', { skip: fixture.skip }, async () => {
  // The real reader stage, watched: how many passages each request hands it.
  const seen: number[] = []
  const readStage = pipeline.stages.reader!
  const watched = new Pipeline({ ...pipeline.stages, read: 3, reader: { name: 'reader', run: (input, signal) => { seen.push(input.reranked.length); return readStage.run(input, signal) } }, close: async () => {} })
  const server = Fastify({ logger: false })
  await server.register(ambigqaServer, { pipeline: watched, passages: new SqlitePassageSource(store), limits: {} })
  try {
    for (const options of ['', ', options: { read: 5 }']) {
      const response = await server.inject({ method: 'POST', url: '/graphql', body: { query: `{ ask(question: "who wrote the harry potter books"${options}) { question } }` } })
      assert.equal(response.statusCode, 200, response.body)
    }
    assert.deepEqual(seen, [3, 5])
  } finally {
    await server.close()
  }
})
