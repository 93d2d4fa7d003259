// The decoders' device (reader/generation/llama-lm.ts): LlamaLm takes the reader's device and opens
// llama.cpp's GPU build for it (webgpu: the Vulkan build; cuda; auto: CUDA, then Vulkan). A build
// that cannot start or sees no device warns once, naming the build and why, and the model runs on
// the CPU build, recorded as such for `health`: never a GPU asked for and the CPU used in silence.
// On the software GPU (scripts/software-gpu) llama.cpp's Vulkan build starts but leaves lavapipe, a
// CPU-type device, alone (GGML_VK_VISIBLE_DEVICES unset): that is the warning met here.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import pino from 'pino'
import { modelDevices } from '../core/model-devices.js'
import { DEFAULT_LM_BASE_DIR, DEFAULT_READER_DIR } from '../core/paths.js'
import { LlamaLm, llamaGpus, readLmFolder } from '../reader/generation/llama-lm.js'
import { prerequisite } from './helpers/prerequisite.js'

const folder = join(DEFAULT_READER_DIR, 'qd-lm')
const base = existsSync(join(folder, 'lm.json')) ? join(DEFAULT_LM_BASE_DIR, readLmFolder(folder).base.file) : ''
const skip = prerequisite(!existsSync(base) ? `needs the decoder's base model ${base || 'models/base'}: run scripts/assets lm-base` : false)
const visible = process.env.GGML_VK_VISIBLE_DEVICES !== undefined

test('the llama.cpp builds each device asks for, in order', () => {
  assert.deepEqual(llamaGpus('cpu'), [])
  assert.deepEqual(llamaGpus('webgpu'), ['vulkan'])
  assert.deepEqual(llamaGpus('cuda'), ['cuda'])
  assert.deepEqual(llamaGpus('auto'), ['cuda', 'vulkan'])
})

test('device webgpu where llama.cpp\'s Vulkan build sees no GPU: one warning naming the build, the CPU build, the CPU\'s tokens, and health told so', { skip: skip || (visible ? 'GGML_VK_VISIBLE_DEVICES is set: llama.cpp may use the Vulkan device here' : false), timeout: 300_000 }, async () => {
  const lines: string[] = []
  const logger = pino({ level: 'warn' }, { write: (line: string) => { lines.push(line) } })
  const cpu = await LlamaLm.load(folder, { threads: 1 })
  const asked = await LlamaLm.load(folder, { threads: 1, device: 'webgpu', logger })
  try {
    assert.equal(cpu.device, 'cpu')
    assert.equal(asked.device, 'cpu')
    assert.equal(lines.length, 1, lines.join('\n'))
    assert.match(JSON.parse(lines[0]!).msg as string, /^llama\.cpp's vulkan build is not usable here \(.+\); the decoders run on the CPU/)
    const recorded = modelDevices().filter((m) => m.model === folder)
    assert.equal(recorded.length, 2)
    assert.ok(recorded.every((m) => m.device === 'cpu' && m.note === 'llama.cpp'), JSON.stringify(recorded))
    const prefix = 'Question: when did the harry potter movie come out?\nAnswer:'
    assert.deepEqual(await asked.lines(prefix, [' 16 November 2001\nRewrite:'], 12), await cpu.lines(prefix, [' 16 November 2001\nRewrite:'], 12))
    // The build is not tried again in this process: a second model loads without a word.
    const again = await LlamaLm.load(folder, { threads: 1, device: 'webgpu', logger })
    await again.close()
    assert.equal(lines.length, 1)
  } finally {
    await cpu.close()
    await asked.close()
  }
  assert.equal(modelDevices().filter((m) => m.model === folder).length, 0, 'forgotten when closed')
})

// What bench/lm-device compares two builds with: lineTokens is lines as tokens, and nextLogits,
// reading the tokens before a line's first token in one batch as generation read them, names that
// token as its greedy choice.
test('lineTokens: the tokens lines writes; nextLogits: the greedy choice and the logits where a line starts', { skip, timeout: 300_000 }, async () => {
  const lm = await LlamaLm.load(folder, { threads: 1 })
  try {
    const prefix = 'Question: when did the harry potter movie come out?\nAnswers: 16 November 2001 | 15 July 2011\n'
    const forced = ['Answer: 16 November 2001\nSpecific question:', 'Answer: 15 July 2011\nSpecific question:']
    const traced = await lm.lineTokens(prefix, forced, 24)
    assert.deepEqual(traced.lines.map((l) => lm.detokenize(l.generated)), await lm.lines(prefix, forced, 24))
    assert.equal(traced.lines.length, 2)
    assert.deepEqual(traced.prompt.slice(1), lm.tokenize(prefix))
    assert.deepEqual(traced.lines.map((l) => l.forced), forced.map((f) => lm.tokenize(f)))
    const first = traced.lines[0]!.generated[0]!
    const other = lm.tokenize(' banana')[0]!
    const { top, logits } = await lm.nextLogits([...traced.prompt, ...traced.lines[0]!.forced], [first, other])
    assert.equal(top, first)
    assert.equal(logits.length, 2)
    assert.ok(logits.every(Number.isFinite) && logits[0]! > logits[1]!, JSON.stringify(logits))
    await assert.rejects(lm.nextLogits([], [first]), /no tokens/)
  } finally {
    await lm.close()
  }
})
