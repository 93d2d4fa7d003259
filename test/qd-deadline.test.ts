// An ask whose deadline comes while question disambiguation runs (issue 48): answered at once with
// its answers, the rewrites written by then, and the prompt for the others, marked
// `rewriteStopped`, instead of a 504 after the deadline; and the decoder, stopped at its next step,
// serves the next ask as before. Real parts: the demo corpus on BM25, the shipped extractive reader
// and decider, QD on Gemma 3 270M (assets/models/qd-lm and its base from `scripts/assets
// lm-base`), the server's own deadline timer, moved by node:test's mock timers at the moment the
// decoder has written its first rewrite: what is asserted is what comes back, never how fast.
import assert from 'node:assert/strict'
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, mock, test } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { loadConfig } from '../core/config.js'
import { ERR_TIMEOUT } from '../core/errors.js'
import { DEFAULT_LM_BASE_DIR, DEFAULT_READER_DIR } from '../core/paths.js'
import { readLmFolder } from '../reader/generation/llama-lm.js'
import { LmDisambiguator } from '../reader/lm-disambiguator.js'
import { qdAnswerLine, qdPrefix } from '../reader/lm-prompt.js'
import { QuestionDisambiguation } from '../reader/question-disambiguation.js'
import { SqlitePassageSource } from '../retriever/passage-source.js'
import { PassageStore } from '../retriever/passage-store.js'
import { openPipeline } from '../src/pipeline/open-pipeline.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { ambigqaServer } from '../src/server/app.js'
import { buildDemoStore } from './helpers/demo-store.js'
import { prerequisite } from './helpers/prerequisite.js'

const qdFolder = join(DEFAULT_READER_DIR, 'qd-lm')
const base = existsSync(join(qdFolder, 'lm.json')) ? join(DEFAULT_LM_BASE_DIR, readLmFolder(qdFolder).base.file) : ''
const skip = prerequisite(!existsSync(join(DEFAULT_READER_DIR, 'extractive', 'model_quantized.onnx')) ? 'needs the shipped extractive reader (assets/models/extractive)'
  : !existsSync(base) ? `needs the decoder's base model ${base || 'models/base'}: run scripts/assets lm-base` : false)

// Three answers on the demo corpus, each rewritten by the decoder (when it has the time).
const QUESTION = 'who sings i\'m coming out'
// Long enough for an ask on a busy machine: the one ask that meets its deadline has it moved.
const TIMEOUT_MS = 600_000
const ANSWER_SET = 'question answers { answer question rewritten rewriteStopped }'

interface Answer { answer: string; question: string; rewritten: boolean; rewriteStopped: boolean }
interface Reply { status: number; body: { data?: { ask: { question: string; answers: Answer[] } }; errors?: { message: string }[] } }

let store = ''
let pipeline: Pipeline
let qd: QuestionDisambiguation
let lm: LmDisambiguator['lm']
let passages: SqlitePassageSource
let instance: FastifyInstance
/** Called by the decoder each time it finishes a line, while a test listens. */
let lineWritten: ((lines: readonly string[]) => void) | undefined

before(async () => {
  if (skip) return
  store = await buildDemoStore('qd-deadline-')
  // One llama.cpp thread: on a shared two-core machine, two spin-wait for each other.
  const opened = await openPipeline(loadConfig({ flags: { store, retriever: 'bm25-sqlite', 'reader.threads': 1, 'log.level': 'warn' }, env: {} }))
  qd = opened.stages.disambiguator as QuestionDisambiguation
  lm = (qd.disambiguator as LmDisambiguator).lm
  // Observed, not replaced: the decoder's own lines, told to the test as they are written.
  const lines = lm.lines.bind(lm)
  lm.lines = (prefix, forced, maxTokens, signal, onLine) => lines(prefix, forced, maxTokens, signal, (line, so) => { onLine?.(line, so); lineWritten?.(so) })
  pipeline = new Pipeline(opened.stages)
  passages = new SqlitePassageSource(PassageStore.openReadOnly(store))
  instance = Fastify({ logger: false })
  await instance.register(ambigqaServer, { pipeline, passages, limits: { timeoutMs: TIMEOUT_MS } })
})
after(async () => {
  if (skip) return
  await instance?.close()
  await pipeline?.close()
  await passages?.close()
  if (store) rmSync(join(store, '..'), { recursive: true, force: true })
})

async function ask(): Promise<Reply> {
  const response = await instance.inject({ method: 'POST', url: '/graphql', body: { query: `query($q: String!) { ask(question: $q) { ${ANSWER_SET} } }`, variables: { q: QUESTION } } })
  return { status: response.statusCode, body: response.json() }
}

test('a deadline during question disambiguation: the answers at once, the rewrites written by then, the prompt for the rest marked rewriteStopped; the next ask as before', { skip, timeout: 1_800_000 }, async () => {
  const whole = await ask()
  assert.equal(whole.status, 200, JSON.stringify(whole.body.errors))
  const full = whole.body.data!.ask.answers
  assert.ok(full.length >= 3, `the demo corpus gives this question several answers: ${JSON.stringify(full)}`)
  assert.ok(full.every((a) => !a.rewriteStopped), 'with time enough nothing is stopped')
  assert.ok(full.some((a) => a.rewritten), 'and the decoder rewrites')

  // The server's deadline timer, moved when the decoder has finished the first answer's rewrite.
  mock.timers.enable({ apis: ['setTimeout'] })
  let stopped: Reply
  try {
    const firstLine = new Promise<void>((resolve) => { lineWritten = () => resolve() })
    const pending = ask()
    await firstLine
    lineWritten = undefined
    mock.timers.tick(TIMEOUT_MS)
    stopped = await pending
  } finally {
    lineWritten = undefined
    mock.timers.reset()
  }
  assert.equal(stopped.status, 200, `answered, not timed out: ${JSON.stringify(stopped.body.errors)}`)
  assert.equal(stopped.body.errors, undefined)
  const cut = stopped.body.data!.ask.answers
  assert.deepEqual(cut.map((a) => a.answer), full.map((a) => a.answer), 'the same answers')
  assert.deepEqual(cut[0], full[0], 'the rewrite written before the deadline is kept')
  for (const a of cut.slice(1)) {
    assert.equal(a.question, QUESTION, `${a.answer}: the prompt`)
    assert.equal(a.rewritten, false)
    assert.equal(a.rewriteStopped, true, `${a.answer}: says its rewrite was stopped`)
  }

  // The decoder, stopped mid-question, serves the next ask as it served the first.
  const again = await ask()
  assert.equal(again.status, 200, JSON.stringify(again.body.errors))
  assert.deepEqual(again.body.data!.ask.answers, full)
})

test('the decoder stops at its next step: a call aborted while it writes its second line rejects with the reason, finishes no other line, and the next call writes the same lines', { skip, timeout: 600_000 }, async () => {
  const item = { question: QUESTION, answers: ['Diana Ross', 'Iggy Azalea', 'Notorious B.I.G'], passages: await pipeline.retrieve(QUESTION, 3).then((r) => r.passages) }
  const prefix = qdPrefix(item.question, item.answers, LmDisambiguator.evidence(item))
  const forced = item.answers.map(qdAnswerLine)
  const whole = await lm.lines(prefix, forced, 48)
  assert.equal(whole.length, 3)
  const controller = new AbortController()
  const heard: string[][] = []
  const reason = ERR_TIMEOUT(1)
  // Aborted a turn of the event loop after the first line: the decoder is then in its second.
  await assert.rejects(lm.lines(prefix, forced, 48, controller.signal, (_line, so) => { heard.push([...so]); setImmediate(() => controller.abort(reason)) }), (e) => e === reason)
  assert.deepEqual(heard, [[whole[0]]], 'one line, the same as the whole call\'s first, and no other after the abort')
  assert.deepEqual(await lm.lines(prefix, forced, 48), whole)
})
