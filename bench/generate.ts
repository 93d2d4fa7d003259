// bench/generate: the seq2seq reader on the CPU.
// 1. Decoding speed with the KV cache against recomputing the whole decoder every step (same
//    model, same inputs, exactly --tokens new tokens each (24 and 64: EOS is held off until then);
//    the encoder's run is included in both.
// 2. SpanSeqGen and QD latency per question, p50/p99, at batch 1 and batch 8, fp32 and int8, on
//    real eval-300 questions with passages from BM25 over the given store; QD reads the gold
//    answers of the multi-answer questions.
//   npx tsc -p . && node dist/bench/generate.js [--spanseqgen dir] [--qd dir] [--store data/demo] [--n 40]
import { existsSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { generate } from '../reader/generation/generate.js'
import { QuestionDisambiguator } from '../reader/question-disambiguator.js'
import { Seq2SeqModel, type Precision } from '../reader/generation/seq2seq-model.js'
import { SpanSeqGen } from '../reader/span-seq-gen.js'
import type { ReadingQuestion } from '../reader/types.js'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { PassageStore } from '../retriever/passage-store.js'
import { defaults } from '../core/config.js'
import { percentile } from '../src/eval/evaluate-retriever.js'
import { eval300Questions } from '../src/eval/eval-300.js'
import { loadIdList } from '../src/eval/questions.js'
import { loadReference } from '../src/eval/score-ambignq.js'
import { DEFAULT_SHARED_DATA } from '../core/paths.js'

const { values } = parseArgs({
  options: {
    spanseqgen: { type: 'string', default: defaults.reader.spanseqgen },
    qd: { type: 'string', default: defaults.reader.qd },
    store: { type: 'string', default: 'data/demo' },
    data: { type: 'string', default: DEFAULT_SHARED_DATA },
    n: { type: 'string', default: '40' },
    tokens: { type: 'string', default: '24,64' },
    read: { type: 'string', default: '5' },
  },
})
const n = Number(values.n)
const read = Number(values.read)

const { questions: file, ids } = eval300Questions(values.data!)
const records = loadReference(file).filter((r) => loadIdList(ids).has(r.id)).slice(0, n)
const store = PassageStore.openReadOnly(values.store!)
const retriever = new Bm25SqliteRetriever(store, defaults.bm25)
const items: ReadingQuestion[] = []
for (const r of records) items.push({ question: r.question, passages: await retriever.search(r.question, read) })
await retriever.close()
const multi = records.flatMap((r, i) => {
  const a = r.annotations.find((x) => x.type === 'multipleQAs')
  return a && a.type === 'multipleQAs' ? [{ question: r.question, answers: a.qaPairs.map((p) => p.answer[0]!), passages: items[i]!.passages }] : []
})

function precisions(dir: string): Precision[] {
  return (['fp32', 'int8'] as const).filter((p) => existsSync(`${dir}/${p === 'int8' ? 'encoder_model_quantized.onnx' : 'encoder_model.onnx'}`))
}

function stats(ms: number[]): string {
  return `p50 ${percentile(ms, 50).toFixed(0).padStart(5)} ms  p99 ${percentile(ms, 99).toFixed(0).padStart(5)} ms`
}

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now()
  const out = await f()
  return [out, performance.now() - t]
}

/** Per-question latency: at batch b every question of a batch waits for the whole batch. */
async function latency<T>(list: readonly T[], batch: number, run: (chunk: T[]) => Promise<unknown>): Promise<{ ms: number[]; perSecond: number }> {
  const ms: number[] = []
  const start = performance.now()
  for (let i = 0; i < list.length; i += batch) {
    const chunk = list.slice(i, i + batch)
    const [, t] = await timed(() => run(chunk))
    for (let j = 0; j < chunk.length; j++) ms.push(t)
  }
  return { ms, perSecond: list.length / ((performance.now() - start) / 1000) }
}

console.log(`bench/generate: ${items.length} eval-300 questions, ${read} BM25 passages each from ${values.store}; QD on ${multi.length} multi-answer questions (gold answers)`)
for (const precision of precisions(values.spanseqgen!)) {
  const model = await Seq2SeqModel.load(values.spanseqgen!, { precision })
  const reader = new SpanSeqGen(model, { maxInputTokens: defaults.reader.maxInputTokens })
  const inputs = items.slice(0, 6).map((item) => ({ input: reader.input(item) }))
  for (const tokens of values.tokens!.split(',').map(Number)) {
    const forced = { ...model.generationDefaults, numBeams: 1, maxLength: 1 + tokens, minLength: 1 + tokens, maxNewTokens: undefined }
    await generate(model, inputs.slice(0, 1), forced)
    for (const beams of [1, 4]) {
      const options = { ...forced, numBeams: beams, earlyStopping: true as const }
      const [, cached] = await timed(async () => { for (const r of inputs) await generate(model, [r], options) })
      const [, recomputed] = await timed(async () => { for (const r of inputs) await generate(model, [r], options, { useCache: false }) })
      const total = inputs.length * tokens
      console.log(`${precision} beams ${beams}: ${String(tokens).padStart(2)} tokens x ${inputs.length} questions (encoder included)  KV cache ${(total / (cached / 1000)).toFixed(1)} tokens/s  recompute ${(total / (recomputed / 1000)).toFixed(1)} tokens/s  speed-up ${(recomputed / cached).toFixed(2)}x`)
    }
  }
  for (const batch of [1, 8]) {
    const r = await latency(items, batch, (chunk) => reader.read(chunk))
    console.log(`${precision} SpanSeqGen batch ${batch}: ${stats(r.ms)}  ${r.perSecond.toFixed(2)} questions/s  (beams ${model.generationDefaults.numBeams})`)
  }
  await model.close()
}
for (const precision of precisions(values.qd!)) {
  const model = await Seq2SeqModel.load(values.qd!, { precision })
  const qd = new QuestionDisambiguator(model, { maxInputTokens: defaults.reader.maxInputTokens })
  for (const batch of [1, 8]) {
    const r = await latency(multi, batch, (chunk) => qd.disambiguate(chunk))
    const answers = multi.reduce((s, m) => s + m.answers.length, 0)
    console.log(`${precision} QD batch ${batch}: ${stats(r.ms)} per question (${(answers / multi.length).toFixed(1)} rewrites each)  ${r.perSecond.toFixed(2)} questions/s`)
  }
  await model.close()
}
