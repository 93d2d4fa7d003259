// The default configuration as `scripts/start` runs it: the dense retriever (e5 over the demo
// corpus, encoded here) and the readers the repository ships (assets/models/extractive for the
// answers, assets/models/reader for the rewrites, built by scripts/train-defaults), answering a
// real question: every answer is a span of its evidence and has a rewrite and a probability, and
// the shipped calibration (assets/models/calibration) gives the question's ambiguity.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { after, before, test } from 'node:test'
import { join } from 'node:path'
import { encodeStore } from '../index/dense/store-vectors.js'
import { defaults, loadConfig } from '../core/config.js'
import { hasAnswer } from '../core/has-answer.js'
import { openPipeline } from '../src/pipeline/open-pipeline.js'
import type { Pipeline } from '../src/pipeline/pipeline.js'
import { silentLogger } from '../core/log.js'
import { DEFAULT_ENCODERS_DIR, DEFAULT_LM_BASE_DIR, DEFAULT_READER_DIR } from '../core/paths.js'
import { buildDemoStore } from './helpers/demo-store.js'
import { prerequisite } from './helpers/prerequisite.js'

const shipped = existsSync(`${DEFAULT_READER_DIR}/reader/encoder_model_quantized.onnx`) && existsSync(`${DEFAULT_READER_DIR}/extractive/model_quantized.onnx`) && existsSync(`${DEFAULT_READER_DIR}/calibration/calibration.json`)
const encoder = existsSync(join(DEFAULT_ENCODERS_DIR, defaults.dense.model, 'model.onnx'))
const base = existsSync(join(DEFAULT_LM_BASE_DIR, 'gemma-3-270m-q4_k_m.gguf'))
const skip = prerequisite(!shipped ? `no shipped readers in ${DEFAULT_READER_DIR}/reader, extractive and calibration (scripts/train-defaults builds them)`
  : !encoder ? `needs models/encoders/${defaults.dense.model}: run scripts/assets ${defaults.dense.model}`
    : !base ? `needs the QD model's base in ${DEFAULT_LM_BASE_DIR}: run scripts/assets lm-base` : false)
let pipeline: Pipeline

before(async () => {
  if (skip) return
  const store = await buildDemoStore('default-reader-')
  await encodeStore({ store, model: defaults.dense.model, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 32, threads: 1, log: silentLogger })
  pipeline = await openPipeline(loadConfig({ flags: { store }, env: {} }))
})
after(async () => { if (!skip) await pipeline.close() })

test('the default configuration retrieves with e5, opens the shipped reader and answers from the passages', { skip, timeout: 600_000 }, async () => {
  assert.equal(pipeline.stages.readerProblem, undefined)
  assert.equal(pipeline.stages.retriever.name, `dense(${defaults.dense.model})`)
  const result = await pipeline.ask('Who played in the world series in 1989?', { retrieve: 100, read: pipeline.defaultRead })
  assert.ok(result.answers.length >= 1, 'at least one answer')
  assert.ok(result.ambiguity !== undefined && result.ambiguity > 0 && result.ambiguity < 1, 'the detector gives a probability')
  assert.equal(result.ambiguous, result.ambiguity > 0.5)
  if (!result.ambiguous && defaults.reader.oneAnswerWhenUnambiguous) assert.equal(result.answers.length, 1, 'a question judged unambiguous keeps its best answer alone')
  for (const a of result.answers) {
    assert.ok(a.evidence.length > 0, `'${a.answer}' has evidence`)
    for (const p of a.evidence) assert.ok(hasAnswer(`${p.title} ${p.text}`, [a.answer]), `'${a.answer}' is in passage ${p.id}`)
    assert.ok(a.confidence > 0 && a.confidence <= 1)
    assert.ok(a.question.length > 0)
  }
})
