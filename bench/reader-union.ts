// bench/reader-union: the extractive reader's answer set joined with SpanSeqGen's, offline, from two
// `ambigqa eval ambignq --answers-only` runs over the same questions (issue 47: "the two readers err
// differently"). Each rule below makes one set per question from the two runs' sets; the official
// F1 answer of each, beside the extractive set alone, with its paired bootstrap 95% interval. Run it
// on the tuning sets to choose (never on eval-300); several --set pool their questions.
//   npx tsc -p . && node dist/bench/reader-union.js --set DATA.json:IDS.txt:EXTRACTIVE_RUN:SPANSEQGEN_RUN [--set ...]
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { normalizeAnswer } from '../core/normalize-answer.js'
import { loadEvalRecords } from '../src/eval/eval-ambignq.js'
import type { ProgressRecord } from '../src/eval/eval-records.js'
import { PROGRESS_FILE, readJsonLines } from '../src/eval/run-folder.js'
import type { AmbigNqRecord } from '../src/eval/score-ambignq.js'
import { pairedBootstrap } from './paired-bootstrap.js'
import { mean, pct, setF1 } from './set-f1.js'

const { values } = parseArgs({ options: { set: { type: 'string', multiple: true } } })
if (!values.set?.length) throw new Error('--set DATA.json:IDS.txt:EXTRACTIVE_RUN:SPANSEQGEN_RUN is required (once or more)')

type Answer = ProgressRecord['answers'][number]
const answersOf = (run: string): Map<string, Answer[]> => new Map(readJsonLines<ProgressRecord>(join(run, PROGRESS_FILE)).items.map((r) => [r.id, r.answers]))

interface Question { record: AmbigNqRecord; extractive: Answer[]; span: string[] }
const questions: Question[] = []
for (const spec of values.set) {
  const [data, ids, extractiveRun, spanRun] = spec.split(':')
  if (!data || !ids || !extractiveRun || !spanRun) throw new Error(`--set ${spec}: give DATA.json:IDS.txt:EXTRACTIVE_RUN:SPANSEQGEN_RUN`)
  const extractive = answersOf(extractiveRun)
  const span = answersOf(spanRun)
  for (const record of loadEvalRecords(data, ids)) {
    const e = extractive.get(record.id)
    const s = span.get(record.id)
    if (!e || !s) throw new Error(`${record.id} is not answered in both ${extractiveRun} and ${spanRun}: finish both runs first`)
    questions.push({ record, extractive: e, span: s.map((a) => a.answer) })
  }
}

/** SpanSeqGen's answers the extractive set lacks (the metric's normalisation). */
const extra = (q: Question) => {
  const have = new Set(q.extractive.map((a) => normalizeAnswer(a.answer)))
  return q.span.filter((a) => normalizeAnswer(a) !== '' && !have.has(normalizeAnswer(a)))
}
const top = (q: Question) => Math.max(0, ...q.extractive.map((a) => a.confidence))
const texts = (q: Question) => q.extractive.map((a) => a.answer)
// The extractive answers after the best that SpanSeqGen also wrote (either text inside the other).
const agreed = (q: Question) => {
  const span = q.span.map(normalizeAnswer).filter(Boolean)
  return q.extractive.slice(1).map((a) => a.answer).filter((a) => span.some((s) => s.includes(normalizeAnswer(a)) || normalizeAnswer(a).includes(s)))
}

const RULES: [string, (q: Question) => string[]][] = [
  ['extractive alone (served)', texts],
  ['SpanSeqGen alone', (q) => q.span],
  ['both sets joined', (q) => [...texts(q), ...extra(q)]],
  ['joined with SpanSeqGen\'s first new answer', (q) => [...texts(q), ...extra(q).slice(0, 1)]],
  ...[1, 2].map((k): [string, (q: Question) => string[]] => [`joined when the extractive set has ≤ ${k}`, (q) => [...texts(q), ...(q.extractive.length <= k ? extra(q) : [])]]),
  ...[0.3, 0.5, 0.7].map((t): [string, (q: Question) => string[]] => [`joined when the best confidence < ${t}`, (q) => [...texts(q), ...(top(q) < t ? extra(q) : [])]]),
  ['the best extractive answer, then those SpanSeqGen also wrote', (q) => [...texts(q).slice(0, 1), ...agreed(q)]],
  ...[0.2, 0.3, 0.5].map((t): [string, (q: Question) => string[]] => [`SpanSeqGen's set when the best confidence < ${t}`, (q) => (top(q) < t && q.span.length > 0 ? q.span : texts(q))]),
]

const f1Of = (setOf: (q: Question) => string[]) => setF1(questions, setOf)
const base = f1Of(texts)
console.log(`bench/reader-union: ${questions.length} questions; F1 answer x100; 95% intervals from 5,000 paired resamples against the extractive set alone`)
console.log('\n| rule | F1 answer | answers a question | − extractive alone | 95% interval |\n|---|---|---|---|---|')
for (const [name, rule] of RULES) {
  const f1 = f1Of(rule)
  const size = mean(questions.map((q) => rule(q).length))
  if (rule === texts) { console.log(`| ${name} | ${pct(mean(f1))} | ${size.toFixed(2)} | | |`); continue }
  const d = pairedBootstrap(base, f1)
  console.log(`| ${name} | ${pct(mean(f1))} | ${size.toFixed(2)} | ${d.difference >= 0 ? '+' : ''}${pct(d.difference)} | ${pct(d.low)} to ${pct(d.high)} |`)
}
