// bench/qd-oracle: question disambiguation with the gold answers given (oracle QD), so that reading
// does not count. Every multi-answer eval-300 question gets one rewrite per gold answer of its
// first multipleQAs annotation, from each model side by side; a single-answer question keeps its
// prompt with its gold answer. Scored with the official metric in full mode (F1 BLEU, F1 EDIT-F1),
// with the fault rates of each model's best proposal (rewrite-check.ts) over the multi-answer
// questions: identical to the prompt, a repetition (a word twice in a row or a word pair twice), a word from nowhere, the same as
// another answer's, half of the prompt's content words gone. Each answer's evidence is the first retrieved passage (top --k) holding it.
//   npx tsc -p . && node dist/bench/qd-oracle.js --model assets/models/reader@384 --model models/qd@96
//   [--model assets/models/qd-lm: a decoder-only LM folder (lm.json), greedy]
//   [--heldout data/train/qd-heldout.jsonl: the train-side held-out rewrites, where settings are chosen]
//   [--ids train/splits/asqa-second.txt --store data/eval-asqa: the second set instead of eval-300]
import { readFileSync } from 'node:fs'
import { basename } from 'node:path'
import { parseArgs } from 'node:util'
import { QuestionDisambiguator, sourceTexts, type DisambiguationItem, type Disambiguator, type Rewrite } from '../reader/question-disambiguator.js'
import { LmDisambiguator } from '../reader/lm-disambiguator.js'
import { isLmFolder, LlamaLm } from '../reader/generation/llama-lm.js'
import { rewriteFaults, supportedWords, type RewriteFault } from '../reader/rewrite-check.js'
import { Seq2SeqModel } from '../reader/generation/seq2seq-model.js'
import { openRetriever } from '../retriever/open-retriever.js'
import { loadConfig } from '../core/config.js'
import { hasAnswer } from '../core/has-answer.js'
import { DEFAULT_SHARED_DATA } from '../core/paths.js'
import { loadEvalRecords } from '../src/eval/eval-ambignq.js'
import { isMultiAnswer, scoreAmbigNq, type AmbigNqRecord, type PredictedQaPair } from '../src/eval/score-ambignq.js'

const { values } = parseArgs({
  options: {
    // dir@maxInputTokens, repeated: the models compared.
    model: { type: 'string', multiple: true, default: ['assets/models/reader@384', 'assets/models/qd@96'] },
    candidates: { type: 'string', default: '1,4' },
    // free and/or vocab (decoding over the evidence's word pieces: DisambiguatorOptions.evidenceVocabulary)
    edits: { type: 'string', default: 'free,vocab' },
    precision: { type: 'string', default: 'int8' },
    store: { type: 'string', default: 'data/eval-300' },
    shared: { type: 'string', default: DEFAULT_SHARED_DATA },
    k: { type: 'string', default: '10' },
    limit: { type: 'string' },
    // token n-grams decoding may not repeat (the server's QD: 2)
    'no-repeat': { type: 'string', default: '2' },
    // data/train/qd-heldout.jsonl: score on the train-side held-out rewrites instead of eval-300.
    heldout: { type: 'string' },
    // Another AmbigNQ dev id list (e.g. train/splits/asqa-second.txt, with --store data/eval-asqa).
    ids: { type: 'string' },
  },
})

const limit = values.limit ? Number(values.limit) : undefined
const idList = values.ids ?? `${values.shared}/splits/eval-300.txt`
const records = values.heldout ? heldoutRecords(values.heldout, limit) : loadEvalRecords(`${values.shared}/ambignq/dev_light.json`, idList, limit)

/** The QD held-out rows (train side: ambigqa_train.data's qd-heldout.jsonl) as AmbigNQ records, one
 * per prompt with two rewrites or more: where settings are chosen, never on eval-300. */
function heldoutRecords(path: string, max?: number): AmbigNqRecord[] {
  const groups = new Map<string, { question: string; qaPairs: { question: string; answer: string[] }[] }>()
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue
    const row = JSON.parse(line) as { qid: string; source: string; question: string; target: string; answer: string }
    const key = `${row.source}:${row.qid}`
    if (!groups.has(key)) groups.set(key, { question: row.question, qaPairs: [] })
    groups.get(key)!.qaPairs.push({ question: row.target, answer: [row.answer] })
  }
  const out = [...groups].filter(([, g]) => g.qaPairs.length > 1).map(([id, g]) => ({ id, question: g.question, annotations: [{ type: 'multipleQAs' as const, qaPairs: g.qaPairs }] }))
  return out.slice(0, max)
}
const retriever = await openRetriever(loadConfig({ flags: { store: values.store } }))

function goldPairs(record: AmbigNqRecord): { answer: string; aliases: string[] }[] | undefined {
  const multi = record.annotations[0]
  if (!isMultiAnswer(record) || multi?.type !== 'multipleQAs') return undefined
  return multi.qaPairs.map((p) => ({ answer: p.answer[0]!, aliases: p.answer }))
}

interface Question { record: AmbigNqRecord; item?: DisambiguationItem }
const questions: Question[] = []
for (const record of records) {
  const pairs = goldPairs(record)
  if (!pairs) {
    questions.push({ record })
    continue
  }
  const passages = await retriever.search(record.question, Number(values.k))
  const evidence = pairs.map((p) => passages.filter((x) => hasAnswer(x.text, p.aliases)).slice(0, 1))
  questions.push({ record, item: { question: record.question, answers: pairs.map((p) => p.answer), passages: passages.slice(0, 3), evidence } })
}
const multi = questions.filter((q) => q.item)
process.stderr.write(`${records.length} questions, ${multi.length} with multipleQAs only; evidence found for ${multi.flatMap((q) => q.item!.evidence!).filter((e) => e.length > 0).length} of ${multi.reduce((n, q) => n + q.item!.answers.length, 0)} answers\n`)

function singleAnswer(record: AmbigNqRecord): string {
  const a = record.annotations[0]!
  return a.type === 'singleAnswer' ? a.answer[0]! : a.qaPairs[0]!.answer[0]!
}

const pct = (x: number) => (100 * x).toFixed(1)
const rows: string[] = []
for (const spec of values.model!) {
  const [dir, tokens] = spec.split('@') as [string, string | undefined]
  // A decoder-only LM folder (lm.json) runs once, greedy; a seq2seq export for each setting asked.
  const lm = isLmFolder(dir) ? await LlamaLm.load(dir) : undefined
  const model = lm ? undefined : await Seq2SeqModel.load(dir, { precision: values.precision as 'int8' | 'fp32' })
  const settings = lm ? [{ edits: 'free', candidates: 1 }] : values.edits!.split(',').flatMap((edits) => values.candidates!.split(',').map((c) => ({ edits, candidates: Number(c) })))
  for (const { edits, candidates } of settings) {
    const qd: Disambiguator = lm ? new LmDisambiguator(lm) : new QuestionDisambiguator(model!, { maxInputTokens: Number(tokens ?? 384), candidates, evidenceVocabulary: edits === 'vocab', generation: { noRepeatNgramSize: Number(values['no-repeat']) } })
    const started = performance.now()
    const rewrites = new Map<string, Rewrite[]>()
    for (let i = 0; i < multi.length; i += 8) {
      const chunk = multi.slice(i, i + 8)
      const out = await qd.disambiguate(chunk.map((q) => q.item!))
      chunk.forEach((q, j) => rewrites.set(q.record.id, out[j]!))
    }
    const seconds = (performance.now() - started) / 1000
    const predictions: Record<string, PredictedQaPair[]> = {}
    const proposals: Record<string, PredictedQaPair[]> = {}
    const faults = new Map<RewriteFault | 'any', number>()
    let total = 0
    let rewritten = 0
    for (const q of questions) {
      if (!q.item) {
        predictions[q.record.id] = proposals[q.record.id] = [{ question: q.record.question, answer: singleAnswer(q.record) }]
        continue
      }
      const list = rewrites.get(q.record.id)!
      predictions[q.record.id] = list.map((r, j) => ({ question: r.question, answer: q.item!.answers[j]! }))
      proposals[q.record.id] = list.map((r, j) => ({ question: r.proposal || q.record.question, answer: q.item!.answers[j]! }))
      const supported = supportedWords(sourceTexts(q.item))
      list.forEach((r, j) => {
        total++
        if (r.rewritten) rewritten++
        const found = rewriteFaults(q.item!.question, r.proposal, supported, list.slice(0, j).map((x) => x.proposal))
        for (const f of found) faults.set(f, (faults.get(f) ?? 0) + 1)
        if (found.length > 0) faults.set('any', (faults.get('any') ?? 0) + 1)
      })
    }
    const score = (p: Record<string, PredictedQaPair[]>) => scoreAmbigNq(records, p).metrics
    const checked = score(predictions)
    const raw = score(proposals)
    const rate = (f: RewriteFault | 'any') => pct((faults.get(f) ?? 0) / total)
    rows.push(`| ${dir} (${lm ? 'decoder, greedy' : `${tokens ?? 384} tokens`}) | ${edits} | ${candidates} | ${pct(raw['F1 edit-f1']!.multi)} / ${pct(raw['F1 bleu4']!.multi)} | ${pct(checked['F1 edit-f1']!.multi)} / ${pct(checked['F1 bleu4']!.multi)} / ${pct(checked['F1 edit-f1']!.all)} | ${pct(rewritten / total)} | ${rate('identical')} | ${rate('repetition')} | ${rate('unsupported-word')} | ${rate('duplicate')} | ${rate('not-minimal')} | ${rate('any')} | ${seconds.toFixed(0)} |`)
    process.stderr.write(`${rows.at(-1)}\n`)
  }
  await (lm ?? model)!.close()
}
console.log(`oracle QD on ${records.length} ${values.heldout ? 'held-out train-side' : values.ids ? basename(values.ids) : 'eval-300'} questions (${multi.length} multi-answer; ${values.precision})`)
console.log('| model | edits | candidates | best proposal: EDIT-F1 / BLEU-4 (multi) | returned: EDIT-F1 / BLEU-4 (multi) / EDIT-F1 (all) | rewritten % | identical % | repetition % | word from nowhere % | duplicate % | not minimal % | any fault % | s |')
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for (const row of rows) console.log(row)
await retriever.close?.()
