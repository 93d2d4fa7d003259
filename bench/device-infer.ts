// ONNX inference on a GPU against the CPU, in one process on one machine (the GPU issue's queue
// step a): the same questions asked through the whole pipeline (retrieval, reading, the decider;
// no rewrites) once with every ONNX model on the CPU and once on --device;
// the answers are compared (the same strings in the same order; the confidences of the answers both
// give: maxConfidenceGap), and
// answers/s at 8 and 32 in flight are printed for both, side by side.
// Usage: node dist/bench/device-infer.js --store DIR --questions FILE.json --device cuda|webgpu|auto [--limit N] [--read N] [--levels 8,32] [--out FILE.json] [--qd DIR]
// (--read: passages read per question, default the config's; a software GPU is slow.)
// (--rounding-peer basic: a third run, the CPU again with onnxruntime's graph optimization at that
// level instead of all: how far the int8 models' answers move by rounding alone, beside the device's.)
// (--qd: the QD model the pipeline loads, unused without rewrites: by default the ONNX BART of
// assets/models/qd, so that the decoder's 253 MB llama.cpp base need not travel to a GPU machine.)
// (FILE.json: a JSON list of question strings; scripts/gpu-runtime pack writes eval-300's first 50).
// A device whose provider cannot start falls back to the CPU: the run says so (`ran`), and the
// comparison is then CPU against CPU (the test suite's dry run, on a machine with no GPU).
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import pino from 'pino'
import { join } from 'node:path'
import { loadConfig } from '../core/config.js'
import { DEFAULT_READER_DIR } from '../core/paths.js'
import { DEVICES, type Device } from '../core/kinds.js'
import { overrideGraphOptimization } from '../core/onnx-session.js'
import { openPipeline } from '../src/pipeline/open-pipeline.js'
import { writeAtomic } from '../core/write-atomic.js'
import type { Disambiguated } from '../core/stages.js'

const { values } = parseArgs({ options: { store: { type: 'string' }, questions: { type: 'string' }, device: { type: 'string', default: 'auto' }, limit: { type: 'string', default: '50' }, out: { type: 'string' }, levels: { type: 'string', default: '8,32' }, read: { type: 'string' }, 'rounding-peer': { type: 'string' }, qd: { type: 'string', default: join(DEFAULT_READER_DIR, 'qd') } } })
const device = values.device as Device
if (!DEVICES.includes(device) || device === 'cpu') throw new Error(`--device must be one of ${DEVICES.filter((d) => d !== 'cpu').join(', ')}, not ${values.device}`)
if (!values.store || !values.questions) throw new Error('--store DIR and --questions FILE.json are required')
const limit = Number(values.limit)
if (!Number.isInteger(limit) || limit < 1) throw new Error(`--limit must be a whole number ≥ 1, not ${values.limit}`)
const questions = (JSON.parse(readFileSync(values.questions, 'utf8')) as string[]).slice(0, limit)
if (questions.length === 0 || !questions.every((q) => typeof q === 'string' && q.length > 0)) throw new Error(`${values.questions} holds no questions (a JSON list of strings)`)
const levels = values.levels!.split(',').map(Number)

interface Run { device: Device; ran: string; warnings: string[]; loadSeconds: number; answers: Disambiguated[]; perSecond: Record<number, number> }

async function run(on: Device): Promise<Run> {
  const warnings: string[] = []
  const logger = pino({ level: 'warn' }, { write: (line: string) => { warnings.push(JSON.parse(line).msg as string) } })
  const config = loadConfig({ flags: { store: values.store, 'log.level': 'warn', 'reader.device': on, 'reranker.device': on, 'dense.device': on, 'reader.qd': values.qd } })
  const options = { retrieve: config.reader.retrieve, read: values.read ? Number(values.read) : config.reader.read, disambiguate: false }
  let t = performance.now()
  const pipeline = await openPipeline(config, logger)
  const loadSeconds = (performance.now() - t) / 1000
  try {
    // One at a time first (the answers compared; the first ask also warms the sessions up).
    const answers: Disambiguated[] = []
    for (const q of questions) answers.push(await pipeline.ask(q, options))
    const perSecond: Record<number, number> = {}
    for (const inFlight of levels) {
      let next = 0
      t = performance.now()
      await Promise.all(Array.from({ length: inFlight }, async () => {
        while (next < questions.length) await pipeline.ask(questions[next++]!, options)
      }))
      perSecond[inFlight] = Math.round((questions.length / ((performance.now() - t) / 1000)) * 100) / 100
    }
    const fellBack = warnings.some((w) => / is not usable here/.test(w))
    return { device: on, ran: on === 'cpu' ? 'cpu' : fellBack ? `cpu (${on} could not start)` : on, warnings, loadSeconds, answers, perSecond }
  } finally {
    await pipeline.close()
  }
}

const cpu = await run('cpu')
const gpu = await run(device)
const peerLevel = values['rounding-peer'] as 'disabled' | 'basic' | 'extended' | undefined
if (peerLevel !== undefined && !['disabled', 'basic', 'extended'].includes(peerLevel)) throw new Error(`--rounding-peer must be disabled, basic or extended, not ${peerLevel}`)
let peer: Run | undefined
if (peerLevel) {
  overrideGraphOptimization(peerLevel)
  peer = await run('cpu')
  overrideGraphOptimization(undefined)
}

// A question whose answers differ lists both sides with their confidences: the int8 models move by
// their own rounding (BENCHMARKS.md, "Every model on a GPU API"), so an answer near the cut may be
// on one side only.
function compare(other: Run): { sameAnswers: number; maxConfidenceGap: number; differ: { question: string; cpu: [string, number][]; device: [string, number][] }[] } {
  let sameAnswers = 0
  let maxConfidenceGap = 0
  const differ: { question: string; cpu: [string, number][]; device: [string, number][] }[] = []
  questions.forEach((question, i) => {
    const a = cpu.answers[i]!.answers
    const b = other.answers[i]!.answers
    for (const x of a) {
      const y = b.find((z) => z.answer === x.answer)
      if (y) maxConfidenceGap = Math.max(maxConfidenceGap, Math.abs(x.confidence - y.confidence))
    }
    if (a.length === b.length && a.every((x, k) => x.answer === b[k]!.answer)) sameAnswers++
    else differ.push({ question, cpu: a.map((x) => [x.answer, Number(x.confidence.toFixed(4))]), device: b.map((x) => [x.answer, Number(x.confidence.toFixed(4))]) })
  })
  return { sameAnswers, maxConfidenceGap: Number(maxConfidenceGap.toExponential(2)), differ }
}
const { sameAnswers, maxConfidenceGap, differ } = compare(gpu)
// Mesa's lavapipe (scripts/software-gpu) computes on the CPU: its numbers are a software device's.
const icd = process.env.VK_DRIVER_FILES ?? process.env.VK_ICD_FILENAMES ?? ''
const report = {
  questions: questions.length, device, ran: gpu.ran,
  ...(peer ? { roundingPeer: { cpuOptimization: peerLevel, ...compare(peer) } } : {}),
  ...(gpu.ran === 'webgpu' && /lvp/.test(icd) ? { vulkanDriver: `lavapipe, a software Vulkan driver on the CPU, not a GPU (${icd})` } : {}), sameAnswers, maxConfidenceGap, differ,
  loadSeconds: { cpu: cpu.loadSeconds, [device]: gpu.loadSeconds },
  answersPerSecond: Object.fromEntries(levels.map((n) => [n, { cpu: cpu.perSecond[n], [device]: gpu.perSecond[n] }])),
  warnings: gpu.warnings,
}
if (values.out) writeAtomic(values.out, `${JSON.stringify(report, null, 2)}\n`)
console.log(JSON.stringify(report, null, 2))
