// bench/compare-runs: two evaluation runs over the same questions (`ambigqa eval ambignq`
// folders), side by side: F1 answer all / multi of each, and the difference with its paired
// bootstrap 95% interval (bench/paired-bootstrap.ts), so that a change is reported with how much
// of it the choice of questions could explain.
//   npx tsc -p . && node dist/bench/compare-runs.js --before bench/out/<a> --after bench/out/<b> [--data <AmbigNQ json> --ids <id list>]
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { DEFAULT_SHARED_DATA } from '../core/paths.js'
import { loadEvalRecords } from '../src/eval/eval-ambignq.js'
import { isMultiAnswer, loadPredictions, scoreAmbigNq } from '../src/eval/score-ambignq.js'
import { pairedBootstrap } from './paired-bootstrap.js'

const { values } = parseArgs({
  options: {
    before: { type: 'string' },
    after: { type: 'string' },
    data: { type: 'string', default: join(DEFAULT_SHARED_DATA, 'ambignq/dev_light.json') },
    ids: { type: 'string', default: join(DEFAULT_SHARED_DATA, 'splits/eval-300.txt') },
  },
})
if (!values.before || !values.after) throw new Error('--before <evaluation folder> and --after <evaluation folder> are required')
const records = loadEvalRecords(values.data!, values.ids)
// predictions-answers.json: the answer sets alone, what F1 answer reads.
const score = (run: string) => scoreAmbigNq(records, loadPredictions(join(run, 'predictions-answers.json'), records))
const before = score(values.before)
const after = score(values.after)
const pct = (x: number) => (100 * x).toFixed(1)
console.log(`bench/compare-runs: ${records.length} questions (${values.ids}); F1 answer x100; 95% intervals from 5,000 paired resamples of the questions`)
console.log('\n| questions | before | after | after − before | 95% interval | questions changed |\n|---|---|---|---|---|---|')
for (const [name, subset] of [['all', records], ['multi', records.filter(isMultiAnswer)]] as const) {
  const f1 = (run: typeof before) => subset.map((r) => run.perQuestion[r.id]!['F1 answer']!)
  const d = pairedBootstrap(f1(before), f1(after))
  console.log(`| ${name} (${subset.length}) | ${pct(before.metrics['F1 answer'][name])} | ${pct(after.metrics['F1 answer'][name])} | ${d.difference >= 0 ? '+' : ''}${pct(d.difference)} | ${pct(d.low)} to ${pct(d.high)} | ${d.changed} |`)
}
