// bench/encoders: speed of every sentence encoder that scripts/assets laid out, side by side in
// one run: passages/s when encoding real eval-300 passages in batches (what `index encode`
// does) and the latency of encoding one real eval-300 question (what every dense query pays).
// Prints numbers; passes or fails nothing.
//   npx tsc -p . && node dist/bench/encoders.js [--store data/eval-300] [--passages 512] [--threads 2]
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { DenseEncoder, ENCODER_NAMES, passageText } from '../retriever/dense-encoder.js'
import { PassageStore } from '../retriever/passage-store.js'
import { EVAL_300_STORE, eval300Questions } from '../src/eval/eval-300.js'
import { percentile } from '../src/eval/evaluate-retriever.js'
import { loadIdList, loadQuestions } from '../src/eval/questions.js'
import { DEFAULT_ENCODERS_DIR, DEFAULT_SHARED_DATA, PROJECT_ROOT } from '../core/paths.js'

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: join(PROJECT_ROOT, EVAL_300_STORE) }, data: { type: 'string', default: DEFAULT_SHARED_DATA },
    passages: { type: 'string', default: '512' }, threads: { type: 'string', default: '2' }, batch: { type: 'string', default: '32' },
  },
})
const n = Number(values.passages)
const batch = Number(values.batch)
const threads = Number(values.threads)

// An even sample across the store, so every source's passage lengths are in it.
const store = PassageStore.openReadOnly(values.store!)
const total = store.count()
const sample = store.byRowids(Array.from({ length: n }, (_, i) => 1 + Math.floor((i * total) / n))).map((p) => passageText(p.title, p.text))
store.close()
const { questions: file, ids } = eval300Questions(values.data!)
const questions = loadQuestions(file, loadIdList(ids)).map((q) => q.question)

const available = ENCODER_NAMES.filter((name) => existsSync(join(DEFAULT_ENCODERS_DIR, name, 'model.onnx')))
if (available.length === 0) throw new Error(`no encoders in ${DEFAULT_ENCODERS_DIR}: run scripts/assets`)
console.log(`bench/encoders: ${sample.length} eval-300 passages in batches of ${batch}, ${questions.length} questions one at a time, ${threads} threads`)
console.log(`${'encoder'.padEnd(26)}${'passages/s'.padStart(12)}${'query p50 ms'.padStart(14)}${'query p99 ms'.padStart(14)}`)
for (const name of available) {
  const encoder = await DenseEncoder.load(name, DEFAULT_ENCODERS_DIR, threads)
  await encoder.encode(sample.slice(0, batch), 'passage')
  let started = performance.now()
  for (let i = 0; i < sample.length; i += batch) await encoder.encode(sample.slice(i, i + batch), 'passage')
  const perSecond = sample.length / ((performance.now() - started) / 1000)
  for (const q of questions.slice(0, 20)) await encoder.encode([q], 'query')
  const ms: number[] = []
  for (const q of questions) {
    started = performance.now()
    await encoder.encode([q], 'query')
    ms.push(performance.now() - started)
  }
  await encoder.close()
  console.log(`${name.padEnd(26)}${perSecond.toFixed(1).padStart(12)}${percentile(ms, 50).toFixed(2).padStart(14)}${percentile(ms, 99).toFixed(2).padStart(14)}`)
}
