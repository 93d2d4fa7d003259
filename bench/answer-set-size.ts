// bench/answer-set-size: what the answer calibrator and the ambiguity detector do on an evaluation
// run, from its progress.jsonl alone. The run must be made with the detector reporting only
// (AMBIGQA_READER_ONE_ANSWER_WHEN_UNAMBIGUOUS=false), so that each record holds the whole set,
// ordered by calibrated confidence, with the reader's own probability beside each confidence.
// Prints ECE (10 bins) and Brier of the returned answers before (the reader's probability) and
// after calibration, the ambiguity AUROC, and F1 answer (all / multi) with the set as read and
// with the detector deciding its size (a question with ambiguity ≤ 0.5 keeps its first answer),
// which is exactly what answer-set-decider.ts returns with oneAnswerWhenUnambiguous on: F1
// answer does not depend on the rewrites. A run made with the detector deciding prints the same
// (its sets are already cut). Then, for the sets as the run returned them: answers per
// multi-answer question, the share of returned answers that are right, and where the first answer
// goes wrong: no gold answer in the passages read, right, a boundary error (it shares a word with
// a gold answer found in the passages) or another entity.
//   npx tsc -p . && node dist/bench/answer-set-size.js --run bench/out/<run> [--data ... --ids ...]
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { DEFAULT_SHARED_DATA } from '../core/paths.js'
import { ambiguityPoints, ambiguitySummary, answerPoints, confidenceSummary } from '../src/eval/confidence-metrics.js'
import { loadEvalRecords } from '../src/eval/eval-ambignq.js'
import type { ProgressRecord } from '../src/eval/eval-records.js'
import { PROGRESS_FILE, readJsonLines } from '../src/eval/run-folder.js'
import { isMultiAnswer, scoreAmbigNq } from '../src/eval/score-ambignq.js'
import type { PassageRecord } from '../src/eval/eval-records.js'
import { PASSAGES_FILE } from '../src/eval/run-folder.js'
import { hasAnswer } from '../core/has-answer.js'
import { normalizeAnswer } from '../core/normalize-answer.js'

const { values } = parseArgs({
  options: {
    run: { type: 'string' },
    data: { type: 'string', default: join(DEFAULT_SHARED_DATA, 'ambignq/dev_light.json') },
    ids: { type: 'string', default: join(DEFAULT_SHARED_DATA, 'splits/eval-300.txt') },
  },
})
if (!values.run) throw new Error('--run <evaluation folder> is required')
const records = loadEvalRecords(values.data!, values.ids)
const done = new Map<string, ProgressRecord>()
for (const r of readJsonLines<ProgressRecord>(join(values.run, PROGRESS_FILE)).items) done.set(r.id, r)
const missing = records.filter((r) => !done.has(r.id)).length
if (missing > 0) throw new Error(`${values.run}: ${missing} of ${records.length} questions are not answered yet`)

const fmt = (x: number) => x.toFixed(3)
const before = confidenceSummary(answerPoints(records, done, (a) => a.readerProbability))
const after = confidenceSummary(answerPoints(records, done))
console.log(`bench/answer-set-size: ${values.run}, ${records.length} questions, ${after.answers} answers returned (${(100 * after.correctShare).toFixed(1)}% correct)`)
console.log('\n| confidence | mean | ECE (10 bins) | Brier |\n|---|---|---|---|')
console.log(`| the reader's probability (before) | ${fmt(before.meanConfidence)} | ${fmt(before.ece)} | ${fmt(before.brier)} |`)
console.log(`| calibrated (after) | ${fmt(after.meanConfidence)} | ${fmt(after.ece)} | ${fmt(after.brier)} |`)

const ambiguity = ambiguitySummary(ambiguityPoints(records, done))
if (ambiguity) console.log(`\nambiguity: AUROC ${fmt(ambiguity.auroc)}, accuracy of P > 0.5 ${(100 * ambiguity.accuracy).toFixed(1)}% (${(100 * ambiguity.multiShare).toFixed(1)}% multi)`)

const f1 = (cut: boolean) => {
  const predictions: Record<string, string[]> = {}
  for (const r of records) {
    const line = done.get(r.id)!
    const answers = line.answers.map((a) => a.answer)
    const kept = cut && (line.ambiguity ?? 1) <= 0.5 ? answers.slice(0, 1) : answers
    predictions[r.id] = kept.length > 0 ? kept : ['']
  }
  const m = scoreAmbigNq(records, predictions).metrics['F1 answer']
  const size = Object.values(predictions).reduce((s, a) => s + a.filter((x) => x !== '').length, 0) / records.length
  return `${(100 * m.all).toFixed(1)} | ${(100 * m.multi).toFixed(1)} | ${size.toFixed(2)}`
}
console.log('\n| answer set | F1 answer all | multi | answers per question |\n|---|---|---|---|')
console.log(`| as read (the detector only reports) | ${f1(false)} |`)
console.log(`| the detector decides the size | ${f1(true)} |`)

// The sets as returned, and the first answer's errors.
const passages = new Map<string, PassageRecord>()
for (const p of readJsonLines<PassageRecord>(join(values.run, PASSAGES_FILE)).items) passages.set(p.id, p)
const goldsOf = (r: (typeof records)[number]) => r.annotations.flatMap((a) => (a.type === 'singleAnswer' ? a.answer : a.qaPairs.flatMap((p) => p.answer)))
let multiAnswers = 0
let returned = 0
let right = 0
const errors = { 'no gold in the passages read': 0, right: 0, boundary: 0, 'another entity': 0, 'no answer': 0 }
for (const r of records) {
  const line = done.get(r.id)!
  const golds = goldsOf(r)
  const aliases = new Set(golds.map(normalizeAnswer))
  if (isMultiAnswer(r)) multiAnswers += line.answers.length
  returned += line.answers.length
  right += line.answers.filter((a) => aliases.has(normalizeAnswer(a.answer))).length
  const texts = line.read.map((id) => passages.get(id)).filter((p) => p !== undefined).map((p) => `${p.title} ${p.text}`)
  const found = golds.filter((g) => texts.some((t) => hasAnswer(t, [g])))
  const first = line.answers[0]?.answer
  if (found.length === 0) errors['no gold in the passages read']++
  else if (first === undefined) errors['no answer']++
  else if (aliases.has(normalizeAnswer(first))) errors.right++
  else {
    const words = new Set(normalizeAnswer(first).split(' '))
    errors[found.some((g) => normalizeAnswer(g).split(' ').some((w) => words.has(w))) ? 'boundary' : 'another entity']++
  }
}
const multi = records.filter(isMultiAnswer).length
console.log(`\nas returned: ${(multiAnswers / multi).toFixed(2)} answers per multi-answer question (${multi}); ${(100 * right / Math.max(returned, 1)).toFixed(1)}% of ${returned} returned answers right`)
console.log('\n| first answer | questions |\n|---|---|')
for (const [kind, n] of Object.entries(errors)) console.log(`| ${kind} | ${n} |`)
