// LlamaLm.score: log P(continuation | prefix) for several continuations after one shared prefix,
// on the real pretrained decoder (Gemma 3 270M from `scripts/assets lm-base`), against the same
// probabilities computed directly: the prefix read and each continuation read after it with the
// full vocabulary's logits, the softmax taken here. The scorer reads only the asked tokens' logits
// (and the greedy top's, and llama.cpp's Σ exp(logit − top)), keeps the prefix's KV cache across
// continuations and erases each continuation after it: a wrong cache would show as a continuation
// scored otherwise than on a fresh context. Within 5e-3 nats: llama.cpp sums Σ exp(logit − top)
// over the 262,144-token vocabulary in float32.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import type { Llama, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp'
import { DEFAULT_LM_BASE_DIR } from '../core/paths.js'
import { LlamaLm, openLlama } from '../reader/generation/llama-lm.js'
import { prerequisite } from './helpers/prerequisite.js'

const base = join(DEFAULT_LM_BASE_DIR, 'gemma-3-270m-q4_k_m.gguf')
const skip = prerequisite(!existsSync(base) ? `needs the decoder's base model ${base}: run scripts/assets lm-base` : false)

const prefix = 'Question: what is the capital of france?\nAnswer:'
const continuations = [' Paris', ' Berlin', ' the city of Paris, on the Seine', ' London', ' Madrid']

let llama: Llama
let model: LlamaModel
let sequence: LlamaContextSequence
// threads 1: llama.cpp's threads wait on each other, and on a busy machine two are far slower.
before(async () => {
  if (skip) return
  llama = await openLlama()
  model = await llama.loadModel({ modelPath: base })
  sequence = (await model.createContext({ contextSize: 512, threads: 1 })).getSequence()
})
after(async () => { if (!skip) await llama.dispose() })

function logSoftmaxAt(logits: Map<Token, number>, token: Token): number {
  let top = -Infinity
  for (const v of logits.values()) top = Math.max(top, v)
  let z = 0
  for (const v of logits.values()) z += Math.exp(v - top)
  return logits.get(token)! - top - Math.log(z)
}

/** On a fresh context: the prefix read in one batch with the full logits at its last token, then
 * the continuation read in one batch with the full logits at each of its tokens (the split the
 * scorer reads with: another split rounds otherwise, by up to 0.2 nats on this model). */
async function direct(continuation: string, ends: readonly string[]): Promise<{ sum: number; end: number }> {
  await sequence.clearHistory()
  const prompt = [model.tokens.bos!, ...model.tokenize(prefix)]
  const tokens = model.tokenize(continuation)
  const full = { generateNext: { logits: true } } as const
  const head = await sequence.controlledEvaluate(prompt.map((t, i) => (i === prompt.length - 1 ? [t, full] : t)))
  const rest = await sequence.controlledEvaluate(tokens.map((t) => [t, full]))
  const logits = [head[prompt.length - 1]?.next.logits, ...rest.map((o) => o?.next.logits)]
  let sum = 0
  tokens.forEach((t, i) => { sum += logSoftmaxAt(logits[i]!, t) })
  const last = logits[tokens.length]!
  const endTokens = [...new Set(ends.map((e) => model.tokenize(e)[0]!))]
  const end = Math.log(endTokens.reduce((s, t) => s + Math.exp(logSoftmaxAt(last, t)), 0))
  return { sum, end }
}

test('one continuation after another: each scored as on a fresh context, the prefix read once, the same after another prefix', { skip, timeout: 300_000 }, async () => {
  const lm = await LlamaLm.loadBase(base, { threads: 1 })
  try {
    const ends = ['\n', ' |']
    const scores = await lm.score(prefix, continuations, { ends })
    assert.equal(scores.length, continuations.length)
    for (const [i, c] of continuations.entries()) {
      const want = await direct(c, ends)
      const got = scores[i]!
      assert.equal(got.tokens, model.tokenize(c).length, `${c}: its tokens`)
      assert.ok(Math.abs(got.sum - want.sum) < 5e-3, `${c}: sum ${got.sum} against ${want.sum}`)
      assert.ok(Math.abs(got.mean - want.sum / got.tokens) < 5e-3, `${c}: mean`)
      assert.ok(Math.abs(got.end! - want.end) < 5e-3, `${c}: end ${got.end} against ${want.end}`)
      assert.ok(got.sum < 0 && got.end! < 0, 'log probabilities')
    }
    // The model knows the capital (it does not know who wrote Pride and Prejudice: 270M parameters).
    const byName = [0, 1, 3, 4].map((i) => scores[i]!.sum)
    assert.equal(Math.max(...byName), scores[0]!.sum, `Paris first: ${byName.join(', ')}`)
    // After another prefix, asked again: the same numbers.
    await lm.score('Answer:', continuations)
    const again = await lm.score(prefix, continuations, { ends })
    again.forEach((s, i) => assert.equal(s.sum, scores[i]!.sum, `${continuations[i]}: again`))
  } finally {
    await lm.close()
  }
})

test('a continuation scores the same beside others as alone', { skip, timeout: 300_000 }, async () => {
  const lm = await LlamaLm.loadBase(base, { threads: 1 })
  try {
    const [alone] = await lm.score(prefix, [continuations[2]!])
    const beside = await lm.score(prefix, continuations)
    assert.ok(Math.abs(alone!.sum - beside[2]!.sum) < 1e-6, `alone ${alone!.sum}, beside four ${beside[2]!.sum}`)
  } finally {
    await lm.close()
  }
})

test('an empty continuation scores 0 over 0 tokens', { skip }, async () => {
  const lm = await LlamaLm.loadBase(base, { threads: 1 })
  try {
    const [empty, name] = await lm.score(prefix, ['', ' Jane Austen'])
    assert.deepEqual(empty, { sum: 0, mean: 0, tokens: 0 })
    assert.ok(name!.tokens > 0 && name!.sum < 0)
  } finally {
    await lm.close()
  }
})

test('a base model that is not there is a coded error naming the fetch', async () => {
  await assert.rejects(LlamaLm.loadBase('/nonexistent/model.gguf'), (e: Error & { code?: string }) => e.code === 'AMBIGQA_ERR_MODEL_MISSING' && e.message.includes('scripts/assets lm-base'))
})
