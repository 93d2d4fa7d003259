// reader.device / reranker.device / dense.device (and --device): a GPU provider that cannot start
// falls back to the CPU with one warning per provider and process, and the outputs are then the
// CPU's. On this machine (no GPU, no CUDA provider library, no Vulkan driver) every GPU device
// falls back; where one does start, its outputs must agree with the CPU's.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { test } from 'node:test'
import pino from 'pino'
import ort from '../core/onnx-runtime.js'
import { createSession, defaultSessionOptions, deviceOf, gpuProviders } from '../core/onnx-session.js'
import { DEFAULT_ENCODERS_DIR, DEFAULT_READER_DIR } from '../core/paths.js'
import { WorkerSession } from '../core/worker-session.js'
import { DenseEncoder } from '../retriever/dense-encoder.js'
import { buildDemoStore } from './helpers/demo-store.js'
import { runCli } from './helpers/run-cli.js'
import { prerequisite } from './helpers/prerequisite.js'

const model = join(DEFAULT_READER_DIR, 'extractive', 'model_quantized.onnx')
const skip = prerequisite(existsSync(model) ? false : `no shipped extractive reader at ${model} (scripts/train-defaults builds it)`)
const ENCODER = 'e5-small-v2-int8'
const skipEncoder = prerequisite(existsSync(join(DEFAULT_ENCODERS_DIR, ENCODER)) ? false : `no ${ENCODER} encoder (scripts/assets ${ENCODER})`)

function feeds(): Record<string, ort.Tensor> {
  const row = [101, 2040, 2626, 4302, 102, 4302, 10693, 2003, 1037, 2186, 102]
  const ids = BigInt64Array.from(row.map(BigInt))
  return { input_ids: new ort.Tensor('int64', ids, [1, row.length]), attention_mask: new ort.Tensor('int64', BigInt64Array.from(row.map(() => 1n)), [1, row.length]), token_type_ids: new ort.Tensor('int64', new BigInt64Array(row.length), [1, row.length]) }
}

function close(got: Float32Array, want: Float32Array, what: string): void {
  assert.equal(got.length, want.length, what)
  assert.ok(want.length > 0, what)
  for (let i = 0; i < want.length; i++) assert.ok(Math.abs(got[i]! - want[i]!) <= 1e-2 * Math.max(1, Math.abs(want[i]!)), `${what}[${i}]: ${got[i]} against the CPU's ${want[i]}`)
}

test('the devices and the providers each tries, in order', () => {
  assert.deepEqual(gpuProviders('cpu'), [])
  assert.deepEqual(gpuProviders('cuda'), ['cuda'])
  assert.deepEqual(gpuProviders('webgpu'), ['webgpu'])
  assert.deepEqual(gpuProviders('auto'), ['cuda', 'webgpu'])
})

test('device auto in a worker: each GPU provider that cannot start warns once, the session says where it runs, its outputs are the CPU\'s', { skip }, async () => {
  const lines: string[] = []
  const logger = pino({ level: 'warn' }, { write: (line: string) => { lines.push(line) } })
  const cpu = await createSession(model, defaultSessionOptions)
  const there = await WorkerSession.create(model, { ...defaultSessionOptions, device: 'auto', logger })
  try {
    assert.equal(deviceOf(cpu), 'cpu')
    const want = await cpu.run(feeds())
    const got = await there.run(feeds())
    for (const name of Object.keys(want)) {
      if (there.device === 'cpu') assert.deepEqual(got[name]!.data, want[name]!.data, name)
      else close(got[name]!.data as Float32Array, want[name]!.data as Float32Array, name)
    }
    const warned = lines.map((l) => JSON.parse(l) as { msg: string; device: string })
    if (there.device === 'cpu') {
      // Neither provider started: a warning for each, the first saying what comes next.
      assert.equal(warned.length, 2, lines.join('\n'))
      assert.match(warned[0]!.msg, /^device cuda is not usable here \(.*\); trying webgpu, then the CPU/)
      assert.match(warned[1]!.msg, /^device webgpu is not usable here \(.*\); running the model on the CPU/)
    }
  } finally {
    await cpu.release()
    await there.release()
  }
})

test('the dense encoder on device webgpu: the CPU\'s vectors where WebGPU cannot start, and it says where it runs', { skip: skipEncoder }, async () => {
  const lines: string[] = []
  const logger = pino({ level: 'warn' }, { write: (line: string) => { lines.push(line) } })
  const cpu = await DenseEncoder.load(ENCODER, DEFAULT_ENCODERS_DIR, 1)
  const gpu = await DenseEncoder.load(ENCODER, DEFAULT_ENCODERS_DIR, 1, { device: 'webgpu', logger })
  try {
    assert.equal(cpu.device, 'cpu')
    const text = ['when was harvard founded']
    const [want] = await cpu.encode(text, 'query')
    const [got] = await gpu.encode(text, 'query')
    if (gpu.device === 'cpu') {
      assert.deepEqual(got, want)
      assert.ok(lines.length <= 1, lines.join('\n'))
    } else {
      close(got!, want!, 'vector')
    }
  } finally {
    await cpu.close()
    await gpu.close()
  }
})

test('--device that is not a device is a configuration error naming the devices', async () => {
  const result = await runCli(['--device', 'gpu', 'search', 'when was harvard founded'])
  assert.equal(result.code, 1)
  assert.match(result.stderr, /AMBIGQA_ERR_CONFIG_INVALID: configuration key '(reader|reranker|dense)\.device' \(from a command-line flag\) is invalid: .*'cpu' \| 'cuda' \| 'webgpu' \| 'auto'/)
})

test('bench/device-infer (the GPU batch\'s inference step) on a machine with no GPU: the device falls back, the answers are the CPU\'s and answers/s is printed for both', { skip: skip || skipEncoder, timeout: 300_000 }, async () => {
  const store = await buildDemoStore('device-infer-')
  const dir = mkdtempSync(join(tmpdir(), 'device-infer-'))
  try {
    const questions = join(dir, 'questions.json')
    writeFileSync(questions, JSON.stringify(['when did the harry potter movie come out', 'who sings i\'m coming out']))
    const out = join(dir, 'report.json')
    // The demo store has no vectors: BM25 retrieval; the reader and the decider's encoder are the ONNX models compared.
    await promisify(execFile)(process.execPath, ['dist/bench/device-infer.js', '--store', store, '--questions', questions, '--device', 'webgpu', '--levels', '2', '--out', out], { env: { ...process.env, AMBIGQA_RETRIEVER: 'bm25-sqlite' }, maxBuffer: 1 << 24 })
    const report = JSON.parse(readFileSync(out, 'utf8'))
    assert.equal(report.questions, 2)
    assert.equal(report.ran, 'cpu (webgpu could not start)')
    assert.equal(report.sameAnswers, 2)
    assert.deepEqual(report.differ, [])
    assert.ok(report.answersPerSecond['2'].cpu > 0 && report.answersPerSecond['2'].webgpu > 0, JSON.stringify(report.answersPerSecond))
  } finally {
    rmSync(dir, { recursive: true, force: true })
    rmSync(join(store, '..'), { recursive: true, force: true })
  }
})
