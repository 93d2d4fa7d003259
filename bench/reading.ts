// bench/reading: the readers side by side on the same examples — SpanSeqGen (its first generated
// answer: greedy against beam search, free against span-constrained decoding, fp32 against int8)
// and, with --extractive, the extractive reader (its best span). Exact match (SQuAD
// normalisation, any alias) and token F1 on:
//   - a held-out JSON Lines set of reader inputs `question [SEP] title: text [SEP] ...`:
//     data/train/spanseqgen1-heldout.jsonl (the gold passage alone; ids in
//     train/splits/spanseqgen1-heldout.txt) or data/train/reading-heldout.jsonl (the gold passage
//     among two BM25 hard negatives);
//   - or, with --squad, SQuAD v1.1 dev questions on their gold paragraph (every nth question, so
//     the sample spans the articles).
//   npx tsc -p . && node dist/bench/reading.js --model assets/models/reader --extractive assets/models/extractive [--n 300] [--precision int8] [--decoding 'greedy, span-constrained'] [--data file | --squad ../shared/data/squad/dev-v1.1.json]
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { ExtractiveReader } from '../reader/extractive-reader.js'
import { INPUT_SEPARATOR } from '../reader/reader-input.js'
import { Seq2SeqModel, type Precision } from '../reader/generation/seq2seq-model.js'
import { SpanSeqGen } from '../reader/span-seq-gen.js'
import type { ReadingQuestion } from '../reader/types.js'
import { matchesAnyAlias, normalizeAnswer } from '../core/normalize-answer.js'
import { multisetF1 } from '../src/eval/edit-f1.js'

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'assets/models/reader' },
    extractive: { type: 'string' },
    data: { type: 'string', default: 'data/train/spanseqgen1-heldout.jsonl' },
    squad: { type: 'string' },
    n: { type: 'string', default: '300' },
    precision: { type: 'string', default: 'fp32,int8' },
    'max-input': { type: 'string', default: '256' },
    // The decodings to run, by label (separated by ';'); all four by default.
    decoding: { type: 'string' },
  },
})
interface Row { question: string; passages: { title: string; text: string }[]; answers: string[] }
const n = Number(values.n)

function heldoutRows(path: string): Row[] {
  return readFileSync(path, 'utf8').trim().split('\n').slice(0, n).map((line) => {
    const r = JSON.parse(line) as { input: string; answers: string[] }
    const [question, ...passages] = r.input.split(INPUT_SEPARATOR)
    return {
      question: question!, answers: r.answers,
      passages: passages.map((p) => { const colon = p.indexOf(': '); return { title: p.slice(0, colon), text: p.slice(colon + 2) } }),
    }
  })
}

function squadRows(path: string): Row[] {
  const data = JSON.parse(readFileSync(path, 'utf8')) as { data: { title: string; paragraphs: { context: string; qas: { question: string; answers: { text: string }[] }[] }[] }[] }
  const all = data.data.flatMap((a) => a.paragraphs.flatMap((p) => p.qas.map((q) => ({
    question: q.question, answers: [...new Set(q.answers.map((x) => x.text))], passages: [{ title: a.title.replace(/_/g, ' '), text: p.context }],
  }))))
  const stride = Math.max(1, Math.floor(all.length / n))
  return all.filter((_, i) => i % stride === 0).slice(0, n)
}

/** SQuAD's token F1 of a prediction against its best alias: the multiset F1 of their normalised words. */
function tokenF1(golds: readonly string[], prediction: string): number {
  const words = (s: string) => normalizeAnswer(s).split(' ').filter(Boolean)
  return Math.max(0, ...golds.map((g) => multisetF1(words(g), words(prediction))))
}

/** Reads every row in chunks of 8 and prints EM, F1 and examples/s of the first answer. */
async function measure(label: string, read: (items: ReadingQuestion[]) => Promise<(string | undefined)[]>): Promise<void> {
  const started = performance.now()
  let exact = 0
  let f1 = 0
  for (let i = 0; i < rows.length; i += 8) {
    const chunk = rows.slice(i, i + 8)
    const firsts = await read(chunk.map((r, j) => ({ question: r.question, passages: r.passages.map((p, k) => ({ id: `${i + j}:${k}`, ...p, score: 0 })) })))
    firsts.forEach((answer, j) => {
      if (answer === undefined) return
      if (matchesAnyAlias(chunk[j]!.answers, answer)) exact++
      f1 += tokenF1(chunk[j]!.answers, answer)
    })
  }
  const seconds = (performance.now() - started) / 1000
  console.log(`| ${label} | ${(100 * exact / rows.length).toFixed(1)} | ${(100 * f1 / rows.length).toFixed(1)} | ${(rows.length / seconds).toFixed(1)} |`)
}

const rows = values.squad ? squadRows(values.squad) : heldoutRows(values.data!)
const passages = rows.reduce((s, r) => s + r.passages.length, 0) / rows.length
console.log(`bench/reading: ${rows.length} examples of ${values.squad ?? values.data} (${passages.toFixed(1)} passages each)`)
console.log('\n| reader | EM | F1 | examples/s |\n|---|---|---|---|')
for (const precision of values.precision!.split(',') as Precision[]) {
  if (values.extractive) {
    const reader = await ExtractiveReader.load(values.extractive, { precision })
    await measure(`extractive ${values.extractive} ${precision}, best span`, async (items) => (await reader.spans(items)).map((spans) => spans[0]?.text))
    await reader.close()
  }
  if (values.model === '') continue
  const model = await Seq2SeqModel.load(values.model!, { precision })
  const decodings = ([['greedy', 1, false], ['greedy, span-constrained', 1, true], ['beam 4', 4, false], ['beam 4, span-constrained', 4, true]] as const)
    .filter(([label]) => values.decoding === undefined || values.decoding.split(';').includes(label))
  for (const [label, numBeams, constrainToPassages] of decodings) {
    const reader = new SpanSeqGen(model, { maxInputTokens: Number(values['max-input']), constrainToPassages, generation: { numBeams, maxLength: 24, earlyStopping: true } })
    await measure(`SpanSeqGen ${values.model} ${precision}, ${label}`, async (items) => (await reader.read(items)).map((answers) => answers[0]?.answer))
  }
  await model.close()
}
