// bench/reading: SpanSeqGen stage 1 (reading one gold passage) on its held-out set
// (data/train/spanseqgen1-heldout.jsonl, ids in train/splits/spanseqgen1-heldout.txt): exact
// match (SQuAD normalisation, any alias) of the first generated answer, greedy against beam
// search, free against span-constrained decoding, fp32 against int8.
//   npx tsc -p . && node dist/bench/reading.js --model models/spanseqgen1 [--n 300] [--decoding 'greedy, span-constrained']
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { Seq2SeqModel, type Precision } from '../reader/seq2seq-model.js'
import { SpanSeqGen } from '../reader/span-seq-gen.js'
import { matchesAnyAlias } from '../src/eval/normalize-answer.js'
import { INPUT_SEPARATOR } from '../reader/reader-input.js'

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'models/spanseqgen1' },
    data: { type: 'string', default: 'data/train/spanseqgen1-heldout.jsonl' },
    n: { type: 'string', default: '300' },
    precision: { type: 'string', default: 'fp32,int8' },
    'max-input': { type: 'string', default: '256' },
    // The decodings to run, by label (separated by ';'); all four by default.
    decoding: { type: 'string' },
  },
})
interface Row { id: string; input: string; answers: string[] }
const rows = readFileSync(values.data!, 'utf8').trim().split('\n').slice(0, Number(values.n)).map((l) => JSON.parse(l) as Row)

console.log(`bench/reading: ${rows.length} held-out examples of ${values.data}, model ${values.model}`)
for (const precision of values.precision!.split(',') as Precision[]) {
  const model = await Seq2SeqModel.load(values.model!, { precision })
  const decodings = ([['greedy', 1, false], ['greedy, span-constrained', 1, true], ['beam 4', 4, false], ['beam 4, span-constrained', 4, true]] as const)
    .filter(([label]) => values.decoding === undefined || values.decoding.split(';').includes(label))
  for (const [label, numBeams, constrainToPassages] of decodings) {
    const reader = new SpanSeqGen(model, { maxInputTokens: Number(values['max-input']), constrainToPassages, generation: { numBeams, maxLength: 24, earlyStopping: true } })
    const started = performance.now()
    let exact = 0
    for (let i = 0; i < rows.length; i += 8) {
      const chunk = rows.slice(i, i + 8)
      const items = chunk.map((r) => {
        const [question, ...rest] = r.input.split(INPUT_SEPARATOR)
        const passage = rest.join(INPUT_SEPARATOR)
        const colon = passage.indexOf(': ')
        return { question: question!, passages: [{ id: r.id, title: passage.slice(0, colon), text: passage.slice(colon + 2), score: 0 }] }
      })
      const out = await reader.read(items)
      out.forEach((answers, j) => { if (answers[0] && matchesAnyAlias(chunk[j]!.answers, answers[0].answer)) exact++ })
    }
    const seconds = (performance.now() - started) / 1000
    console.log(`${precision} ${label.padEnd(26)} EM ${(100 * exact / rows.length).toFixed(1).padStart(5)}  (${(rows.length / seconds).toFixed(1)} examples/s)`)
  }
  await model.close()
}
