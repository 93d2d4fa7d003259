// The decoders on a GPU against the CPU (issue 45): question disambiguation (assets/models/qd-lm)
// and SpanSeqGen (assets/models/span-lm), both Gemma 3 270M run by llama.cpp, on the same prompts
// with llama.cpp's CPU build and with the GPU build --device asks for (webgpu: the Vulkan build on
// the device WebGPU uses; cuda; auto), side by side in one run. Greedy decoding: each generated line
// is compared token by token; where a prompt's lines first part, the first differing token is named
// and both builds read the tokens before it again (one batch, an empty context) and give the two
// tokens' logits there, so that a difference is measured: how near the two tokens were on each
// build. (A prompt's later lines read the earlier ones, so after a difference they are listed, not
// measured.) Seconds and CPU seconds side by side: loading, the first prompt (on a GPU it includes
// compiling the kernels it uses, unless the driver's shader cache holds them) and the rest per prompt.
// Usage: node dist/bench/lm-device.js --store DIR --questions FILE.json --device webgpu|cuda|auto
//          [--limit N] [--read N] [--models qd,span] [--out FILE.json]
// The prompts come from the pipeline on the CPU, without rewrites: QD reads each question with two
// answers or more, its answers and their evidence; SpanSeqGen each question and its passages. On
// the software GPU (eval "$(scripts/software-gpu env)") llama.cpp uses lavapipe only when
// GGML_VK_VISIBLE_DEVICES names it (GGML_VK_VISIBLE_DEVICES=0; LP_NUM_THREADS=1 keeps lavapipe to
// one thread): its numbers are a software device's, never a GPU's, and a first run compiles
// llama.cpp's kernels through lavapipe's LLVM for tens of minutes (docs/gpus.md); Mesa's shader
// cache keeps them for the next.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pino from 'pino'
import type { Token } from 'node-llama-cpp'
import { loadConfig } from '../core/config.js'
import { DEVICES, type Device } from '../core/kinds.js'
import { DEFAULT_READER_DIR } from '../core/paths.js'
import { LlamaLm } from '../reader/generation/llama-lm.js'
import { LmDisambiguator } from '../reader/lm-disambiguator.js'
import { pickEvidence, qdAnswerLine, qdPrefix, spanPrefix } from '../reader/lm-prompt.js'
import type { DisambiguationItem } from '../reader/question-disambiguator.js'
import { openPipeline } from '../src/pipeline/open-pipeline.js'
import { writeAtomic } from '../core/write-atomic.js'

const { values } = parseArgs({ options: { store: { type: 'string' }, questions: { type: 'string' }, device: { type: 'string', default: 'webgpu' }, limit: { type: 'string', default: '12' }, read: { type: 'string', default: '3' }, models: { type: 'string', default: 'qd,span' }, out: { type: 'string' } } })
const device = values.device as Device
if (!DEVICES.includes(device) || device === 'cpu') throw new Error(`--device must be one of ${DEVICES.filter((d) => d !== 'cpu').join(', ')}, not ${values.device}`)
if (!values.store || !values.questions) throw new Error('--store DIR and --questions FILE.json are required')
const models = values.models!.split(',').map((m) => m.trim())
if (models.length === 0 || models.some((m) => m !== 'qd' && m !== 'span')) throw new Error(`--models takes qd, span or both, not ${values.models}`)
const questions = (JSON.parse(readFileSync(values.questions, 'utf8')) as string[]).slice(0, Number(values.limit))
const read = Number(values.read)

const warnings: string[] = []
const logger = pino({ level: 'warn' }, { write: (line: string) => { warnings.push(JSON.parse(line).msg as string) } })
const config = loadConfig({ flags: { store: values.store, 'log.level': 'warn' } })

// The prompts: the CPU pipeline's answers, evidence and passages, as the decoders get them.
interface Prompt { question: string; prefix: string; forced: string[]; labels: string[]; maxTokens: number }
const qdPrompts: Prompt[] = []
const spanPrompts: Prompt[] = []
const pipeline = await openPipeline(config, logger)
try {
  for (const question of questions) {
    const result = await pipeline.ask(question, { retrieve: config.reader.retrieve, read, disambiguate: false })
    // SpanSeqGen's prompt (reader/lm-span-reader.ts) and its line of at most 64 tokens.
    spanPrompts.push({ question, prefix: spanPrefix(question, pickEvidence([result.reranked])), forced: [''], labels: ['answers'], maxTokens: 64 })
    if (result.answers.length < 2) continue // one answer keeps the question: no rewrite to compare
    const item: DisambiguationItem = { question, answers: result.answers.map((a) => a.answer), passages: result.reranked, evidence: result.answers.map((a) => a.evidence) }
    // LmDisambiguator's prompt and its rewrites of at most 48 tokens.
    qdPrompts.push({ question, prefix: qdPrefix(question, item.answers, LmDisambiguator.evidence(item)), forced: item.answers.map(qdAnswerLine), labels: [...item.answers], maxTokens: 48 })
  }
} finally {
  await pipeline.close()
}

type Trace = Awaited<ReturnType<LlamaLm['lineTokens']>>
interface Side { ran: string; loadSeconds: number; firstSeconds: number; secondsPerPromptAfter: number; firstCpuSeconds: number; cpuSecondsPerPromptAfter: number; traces: Trace[] }

async function generate(lm: LlamaLm, loadSeconds: number, prompts: readonly Prompt[]): Promise<Side> {
  // CPU seconds: the whole process's, every thread (on lavapipe the driver's compiling and computing
  // threads, and llama.cpp's waiting for them).
  const cpuNow = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6 }
  const traces: Trace[] = []
  let t = performance.now()
  let c = cpuNow()
  let firstSeconds = 0
  let firstCpu = 0
  for (const [i, p] of prompts.entries()) {
    traces.push(await lm.lineTokens(p.prefix, p.forced, p.maxTokens))
    if (i === 0) { firstSeconds = (performance.now() - t) / 1000; firstCpu = cpuNow() - c; t = performance.now(); c = cpuNow() }
  }
  const rest = Math.max(1, prompts.length - 1)
  const after = prompts.length > 1 ? (performance.now() - t) / 1000 / rest : 0
  const afterCpu = prompts.length > 1 ? (cpuNow() - c) / rest : 0
  return { ran: lm.device, loadSeconds, firstSeconds: round(firstSeconds), secondsPerPromptAfter: round(after), firstCpuSeconds: round(firstCpu), cpuSecondsPerPromptAfter: round(afterCpu), traces }
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits

async function load(folder: string, on: Device, lookahead: number): Promise<{ lm: LlamaLm; seconds: number }> {
  const t = performance.now()
  // llama.cpp's threads as served (reader.lmThreads): the CPU build breaks a near tie differently
  // with another thread count (2026-11-28: one QD line of 11 parted between 1 and 2 threads).
  const lm = await LlamaLm.load(folder, { device: on, threads: config.reader.lmThreads, lookahead, logger })
  return { lm, seconds: round((performance.now() - t) / 1000) }
}

/** Both builds on one model's prompts, compared line by line. */
async function compare(name: 'qd' | 'span', prompts: readonly Prompt[]) {
  const folder = name === 'qd' ? config.reader.qd : join(DEFAULT_READER_DIR, 'span-lm')
  // QD is served with prompt-lookup decoding (config reader.qdLookahead), SpanSeqGen one token a step.
  const lookahead = name === 'qd' ? config.reader.qdLookahead : 0
  const cpuLm = await load(folder, 'cpu', lookahead)
  const gpuLm = await load(folder, device, lookahead)
  try {
    const cpu = await generate(cpuLm.lm, cpuLm.seconds, prompts)
    const gpu = await generate(gpuLm.lm, gpuLm.seconds, prompts)
    let same = 0
    let lines = 0
    const differ = []
    for (const [i, p] of prompts.entries()) {
      const a = cpu.traces[i]!
      const b = gpu.traces[i]!
      // Once a line differs, the prompt's later lines read different text: they are compared, but
      // only the first differing line of a prompt is a difference of the builds' own.
      let parted = false
      for (const [j, label] of p.labels.entries()) {
        lines++
        const x = a.lines[j]!.generated
        const y = b.lines[j]!.generated
        const textA = cpuLm.lm.detokenize(x)
        const textB = cpuLm.lm.detokenize(y)
        if (x.length === y.length && x.every((t, k) => t === y[k])) { same++; continue }
        if (parted) {
          differ.push({ question: p.question, line: label, cpu: textA, [device]: textB, after: 'an earlier line of this prompt differs, and the model reads it' })
          continue
        }
        parted = true
        // Every earlier line was the same on both, so the tokens before the first differing one are
        // one sequence.
        let k = 0
        while (k < x.length && k < y.length && x[k] === y[k]) k++
        const before: Token[] = [...a.prompt, ...a.lines.slice(0, j).flatMap((l) => [...l.forced, ...l.generated]), ...a.lines[j]!.forced, ...x.slice(0, k)]
        const tokens = [x[k], y[k]].filter((t): t is Token => t !== undefined)
        const at = async (lm: LlamaLm) => {
          const { top, logits } = await lm.nextLogits(before, tokens)
          return { greedy: lm.detokenize([top]), logits: logits.map((l) => round(l, 4)), ...(tokens.length === 2 ? { cpuMinusDevice: round(logits[0]! - logits[1]!, 4) } : {}) }
        }
        differ.push({
          question: p.question, line: label, cpu: textA, [device]: textB,
          firstDifference: { token: k, cpu: x[k] === undefined ? null : cpuLm.lm.detokenize([x[k]!]), [device]: y[k] === undefined ? null : cpuLm.lm.detokenize([y[k]!]) },
          // The logits of [the CPU's token, the device's token] after the shared tokens, read again
          // whole in one batch by each build (generation read them in other batches: prompt-lookup
          // drafts, one token a step), and each build's greedy choice there.
          logitsThere: { cpu: await at(cpuLm.lm), [device]: await at(gpuLm.lm) },
        })
      }
    }
    return {
      prompts: prompts.length, lines, sameLines: same, ran: { cpu: cpu.ran, [device]: gpu.ran },
      loadSeconds: { cpu: cpu.loadSeconds, [device]: gpu.loadSeconds },
      firstPromptSeconds: { cpu: cpu.firstSeconds, [device]: gpu.firstSeconds },
      secondsPerPromptAfter: { cpu: cpu.secondsPerPromptAfter, [device]: gpu.secondsPerPromptAfter },
      firstPromptCpuSeconds: { cpu: cpu.firstCpuSeconds, [device]: gpu.firstCpuSeconds },
      cpuSecondsPerPromptAfter: { cpu: cpu.cpuSecondsPerPromptAfter, [device]: gpu.cpuSecondsPerPromptAfter },
      differ,
    }
  } finally {
    await cpuLm.lm.close()
    await gpuLm.lm.close()
  }
}

const driver = process.env.VK_DRIVER_FILES ?? process.env.VK_ICD_FILENAMES ?? ''
// Mesa keeps what lavapipe compiled (MESA_SHADER_CACHE_DIR, `scripts/software-gpu env` sets it): its
// size at the start says whether the first prompt compiled llama.cpp's kernels or read them back.
const cacheDir = process.env.MESA_SHADER_CACHE_DIR
const bytesUnder = (dir: string): number => !existsSync(dir) ? 0
  : (readdirSync(dir, { recursive: true }) as string[]).reduce((sum, f) => { const st = statSync(join(dir, f)); return sum + (st.isFile() ? st.size : 0) }, 0)
const report: Record<string, unknown> = {
  questions: questions.length, device, lmThreads: config.reader.lmThreads,
  ...(/lvp/.test(driver) ? {
    vulkanDriver: 'lavapipe, a software Vulkan driver on the CPU, not a GPU',
    shaderCache: { dir: cacheDir ?? '~/.cache/mesa_shader_cache', bytesAtStart: cacheDir === undefined ? null : bytesUnder(cacheDir) },
    env: { GGML_VK_VISIBLE_DEVICES: process.env.GGML_VK_VISIBLE_DEVICES ?? null, LP_NUM_THREADS: process.env.LP_NUM_THREADS ?? null },
  } : {}),
}
for (const name of models) {
  console.error(`lm-device: ${name} on the CPU, then on ${device} (${name === 'qd' ? qdPrompts.length : spanPrompts.length} prompts)`)
  report[name] = await compare(name as 'qd' | 'span', name === 'qd' ? qdPrompts : spanPrompts)
}
report.warnings = warnings
if (values.out) writeAtomic(values.out, `${JSON.stringify(report, null, 2)}\n`)
console.log(JSON.stringify(report, null, 2))
