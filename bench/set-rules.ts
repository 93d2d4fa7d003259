// bench/set-rules: the answer set under the decider's set rules (reader/answer-set-decider.ts
// setRules: splitJoined, completeDates), offline, two settings side by side, from `ambigqa eval
// ambignq --answers-only` runs made with every rule off (AMBIGQA_READER_SPLIT_JOINED=false
// AMBIGQA_READER_COMPLETE_DATES=false): F1 answer of each with its paired bootstrap 95% interval,
// and every set that changed. The rules follow the set, so this is what the served decider returns.
// Run it on the tuning sets to choose (never on eval-300); several --set pool their questions.
//   npx tsc -p . && node dist/bench/set-rules.js --set DATA.json:IDS.txt:RUN [--set ...] [--before RULES] [--after RULES]
// RULES: comma-separated rule names, '' for none; default --before '' --after splitJoined.
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { RetrievedPassage } from '../core/retriever.js'
import { setRules } from '../reader/answer-set-decider.js'
import { loadEvalRecords } from '../src/eval/eval-ambignq.js'
import type { ProgressRecord } from '../src/eval/eval-records.js'
import { PASSAGES_FILE, PROGRESS_FILE, readJsonLines } from '../src/eval/run-folder.js'
import type { AmbigNqRecord } from '../src/eval/score-ambignq.js'
import { pairedBootstrap } from './paired-bootstrap.js'
import { mean, pct, setF1 } from './set-f1.js'

const RULES = ['splitJoined', 'completeDates'] as const
const { values } = parseArgs({ options: { set: { type: 'string', multiple: true }, before: { type: 'string', default: '' }, after: { type: 'string', default: 'splitJoined' }, 'max-answers': { type: 'string', default: '4' } } })
if (!values.set?.length) throw new Error('--set DATA.json:IDS.txt:RUN is required (once or more)')
const rulesOf = (list: string) => {
  const names = list.split(',').filter((x) => x !== '')
  for (const n of names) if (!(RULES as readonly string[]).includes(n)) throw new Error(`unknown rule ${n}: give some of ${RULES.join(', ')}`)
  return { splitJoined: names.includes('splitJoined'), completeDates: names.includes('completeDates'), maxAnswers: Number(values['max-answers']) }
}
const [beforeRules, afterRules] = [rulesOf(values.before), rulesOf(values.after)]

interface Question { record: AmbigNqRecord; before: string[]; after: string[] }
const questions: Question[] = []
for (const spec of values.set) {
  const [data, ids, run] = spec.split(':')
  if (!data || !ids || !run) throw new Error(`--set ${spec}: give DATA.json:IDS.txt:RUN`)
  const passages = new Map(readJsonLines<RetrievedPassage>(join(run, PASSAGES_FILE)).items.map((p) => [p.id, p]))
  const runs = new Map(readJsonLines<ProgressRecord>(join(run, PROGRESS_FILE)).items.map((r) => [r.id, r]))
  const passage = (id: string) => { const p = passages.get(id); if (!p) throw new Error(`${run}: passage ${id} is not in ${PASSAGES_FILE}`); return p }
  for (const record of loadEvalRecords(data, ids)) {
    const r = runs.get(record.id)
    if (!r) throw new Error(`${record.id} is not answered in ${run}: finish the run first`)
    const set = r.answers.map((a) => ({ answer: a.answer, confidence: a.confidence, evidence: a.evidence.map(passage) }))
    const input = { question: r.question, reranked: r.read.map(passage) }
    const answers = (rules: typeof beforeRules) => setRules(input, set, rules).map((a) => a.answer)
    questions.push({ record, before: answers(beforeRules), after: answers(afterRules) })
  }
}

const changed = questions.filter((q) => q.after.join('\n') !== q.before.join('\n'))
const before = setF1(questions, (q) => q.before)
const after = setF1(questions, (q) => q.after)
const d = pairedBootstrap(before, after)
console.log(`bench/set-rules: ${questions.length} questions, ${changed.length} sets changed; rules '${values.before}' → '${values.after}'; F1 answer x100, 95% interval from 5,000 paired resamples`)
console.log(`\n| before | after | difference | 95% interval | questions scored differently |\n|---|---|---|---|---|`)
console.log(`| ${pct(mean(before))} | ${pct(mean(after))} | ${d.difference >= 0 ? '+' : ''}${pct(d.difference)} | ${pct(d.low)} to ${pct(d.high)} | ${d.changed} |\n`)
for (const q of changed) {
  const i = questions.indexOf(q)
  console.log(`- ${q.record.question}: ${q.before.join(' | ')} → ${q.after.join(' | ')} (${pct(before[i]!)} → ${pct(after[i]!)})`)
}
