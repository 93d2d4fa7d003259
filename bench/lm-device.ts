// The decoders on a GPU against the CPU (issue 45): question disambiguation by the pretrained
// decoder (assets/models/qd-lm on Gemma 3 270M, llama.cpp) for the same questions, answers and
// evidence, once with llama.cpp's CPU build and once with the GPU build --device asks for (webgpu:
// the Vulkan build on the device WebGPU uses; cuda; auto). Greedy decoding: the proposals must be
// the same words; a difference is listed with both sides. Seconds per question side by side; the
// first GPU call includes compiling the GPU's kernels (reported apart).
// Usage: node dist/bench/lm-device.js --store DIR --questions FILE.json --device webgpu|cuda|auto [--limit N] [--read N] [--out FILE.json]
// (the answers and evidence come from the pipeline on the CPU, without rewrites; a software Vulkan
// driver needs GGML_VK_VISIBLE_DEVICES=0 for llama.cpp to use it.)
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import pino from 'pino'
import { loadConfig } from '../core/config.js'
import { DEVICES, type Device } from '../core/kinds.js'
import { LlamaLm } from '../reader/generation/llama-lm.js'
import { LmDisambiguator } from '../reader/lm-disambiguator.js'
import type { DisambiguationItem, Rewrite } from '../reader/question-disambiguator.js'
import { openPipeline } from '../src/pipeline/open-pipeline.js'
import { writeAtomic } from '../core/write-atomic.js'

const { values } = parseArgs({ options: { store: { type: 'string' }, questions: { type: 'string' }, device: { type: 'string', default: 'webgpu' }, limit: { type: 'string', default: '12' }, read: { type: 'string', default: '3' }, out: { type: 'string' } } })
const device = values.device as Device
if (!DEVICES.includes(device) || device === 'cpu') throw new Error(`--device must be one of ${DEVICES.filter((d) => d !== 'cpu').join(', ')}, not ${values.device}`)
if (!values.store || !values.questions) throw new Error('--store DIR and --questions FILE.json are required')
const questions = (JSON.parse(readFileSync(values.questions, 'utf8')) as string[]).slice(0, Number(values.limit))
const read = Number(values.read)

const warnings: string[] = []
const logger = pino({ level: 'warn' }, { write: (line: string) => { warnings.push(JSON.parse(line).msg as string) } })
const config = loadConfig({ flags: { store: values.store, 'log.level': 'warn' } })

// The items: the CPU pipeline's answers and evidence, as the disambiguation stage gets them.
const items: DisambiguationItem[] = []
const pipeline = await openPipeline(config, logger)
try {
  for (const question of questions) {
    const result = await pipeline.ask(question, { retrieve: config.reader.retrieve, read, disambiguate: false })
    if (result.answers.length < 2) continue // one answer keeps the prompt: nothing to compare
    items.push({ question, answers: result.answers.map((a) => a.answer), passages: result.reranked, evidence: result.answers.map((a) => a.evidence) })
  }
} finally {
  await pipeline.close()
}

async function rewrite(on: Device): Promise<{ ran: string; loadSeconds: number; firstSeconds: number; seconds: number; rewrites: Rewrite[][] }> {
  let t = performance.now()
  const lm = await LlamaLm.load(config.reader.qd, { device: on, threads: config.reader.threads, lookahead: config.reader.qdLookahead, logger })
  const loadSeconds = (performance.now() - t) / 1000
  try {
    const qd = new LmDisambiguator(lm)
    const rewrites: Rewrite[][] = []
    t = performance.now()
    rewrites.push(...await qd.disambiguate(items.slice(0, 1)))
    const firstSeconds = (performance.now() - t) / 1000
    t = performance.now()
    rewrites.push(...await qd.disambiguate(items.slice(1)))
    return { ran: lm.device, loadSeconds, firstSeconds, seconds: (performance.now() - t) / 1000, rewrites }
  } finally {
    await lm.close()
  }
}

const cpu = await rewrite('cpu')
const gpu = await rewrite(device)
let same = 0
let total = 0
const differ: { question: string; answer: string; cpu: string; device: string }[] = []
items.forEach((item, i) => item.answers.forEach((answer, j) => {
  total++
  const a = cpu.rewrites[i]![j]!.proposal
  const b = gpu.rewrites[i]![j]!.proposal
  if (a === b) same++
  else differ.push({ question: item.question, answer, cpu: a, device: b })
}))
const perQuestion = (r: { seconds: number }) => Math.round((r.seconds / Math.max(1, items.length - 1)) * 100) / 100
const report = {
  questions: questions.length, items: items.length, proposals: total, device, ran: gpu.ran, sameProposals: same, differ,
  ...(/lvp/.test(process.env.VK_DRIVER_FILES ?? process.env.VK_ICD_FILENAMES ?? '') && gpu.ran === 'vulkan' ? { vulkanDriver: 'lavapipe, a software Vulkan driver on the CPU, not a GPU' } : {}),
  loadSeconds: { cpu: cpu.loadSeconds, [device]: gpu.loadSeconds },
  firstQuestionSeconds: { cpu: cpu.firstSeconds, [device]: gpu.firstSeconds },
  secondsPerQuestionAfter: { cpu: perQuestion(cpu), [device]: perQuestion(gpu) },
  warnings,
}
if (values.out) writeAtomic(values.out, `${JSON.stringify(report, null, 2)}\n`)
console.log(JSON.stringify(report, null, 2))
