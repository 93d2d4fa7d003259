// bench/split-joined: the answer set with each answer that joins names split (reader/answer-set-decider.ts
// splitJoined), offline, against the set as run, from `ambigqa eval ambignq --answers-only` runs made
// with AMBIGQA_READER_SPLIT_JOINED=false: F1 answer of each with its paired bootstrap 95% interval,
// and every set that changed. The split follows the set, so this is what the served decider returns.
// Run it on the tuning sets to choose (never on eval-300); several --set pool their questions.
//   npx tsc -p . && node dist/bench/split-joined.js --set DATA.json:IDS.txt:RUN [--set ...]
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { RetrievedPassage } from '../core/retriever.js'
import { splitJoined } from '../reader/answer-set-decider.js'
import { loadEvalRecords } from '../src/eval/eval-ambignq.js'
import type { ProgressRecord } from '../src/eval/eval-records.js'
import { PASSAGES_FILE, PROGRESS_FILE, readJsonLines } from '../src/eval/run-folder.js'
import type { AmbigNqRecord } from '../src/eval/score-ambignq.js'
import { pairedBootstrap } from './paired-bootstrap.js'
import { mean, pct, setF1 } from './set-f1.js'

const { values } = parseArgs({ options: { set: { type: 'string', multiple: true }, 'max-answers': { type: 'string', default: '4' } } })
if (!values.set?.length) throw new Error('--set DATA.json:IDS.txt:RUN is required (once or more)')
const size = Number(values['max-answers'])

interface Question { record: AmbigNqRecord; asRun: string[]; split: string[] }
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
    questions.push({ record, asRun: set.map((a) => a.answer), split: splitJoined(set, r.read.map(passage), size).map((a) => a.answer) })
  }
}

const f1Of = (setOf: (q: Question) => string[]) => setF1(questions, setOf)
const changed = questions.filter((q) => q.split.join('\n') !== q.asRun.join('\n'))
const before = f1Of((q) => q.asRun)
const after = f1Of((q) => q.split)
const d = pairedBootstrap(before, after)
console.log(`bench/split-joined: ${questions.length} questions, ${changed.length} sets split; F1 answer x100, 95% interval from 5,000 paired resamples`)
console.log(`\n| as run | split | difference | 95% interval | questions scored differently |\n|---|---|---|---|---|`)
console.log(`| ${pct(mean(before))} | ${pct(mean(after))} | ${d.difference >= 0 ? '+' : ''}${pct(d.difference)} | ${pct(d.low)} to ${pct(d.high)} | ${d.changed} |\n`)
for (const q of changed) console.log(`- ${q.asRun.join(' | ')} → ${q.split.join(' | ')}`)
