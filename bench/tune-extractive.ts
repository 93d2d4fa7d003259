// bench/tune-extractive: chooses the extractive reader's serving settings — passages read (k),
// the retriever's rank as a prior on the passage score (rankPrior), the answer-set margin
// (keep), the floor under which nothing is answered (minProbability), maxAnswers and dropContaining — on a tuning split that is not eval-300 (train/splits/reader-tune.txt: qa-feedback's
// AmbigNQ train questions, which the reader never trains on), by the official F1 answer. Each
// question's top passages are retrieved and read once; every setting is scored from those logits
// (a passage's logits do not depend on the other passages, but for the int8 model's one activation
// scale per batch, which moves them a little). The floor is the highest within
// --tolerance F1 of the best, and a larger k must beat a smaller one by more than that. The
// chosen setting is then shown on eval-300 beside the k curve, for the record: nothing is chosen
// there.
//   npx tsc -p . && node dist/bench/tune-extractive.js --model models/extractive [--store data/eval-300]
import { parseArgs } from 'node:util'
import { ExtractiveReader, type ReadPassage, type ScoredSpan } from '../reader/extractive-reader.js'
import { plainSet } from '../reader/answer-set-decider.js'
import type { RetrievedPassage } from '../core/retriever.js'
import { openRetriever } from '../retriever/open-retriever.js'
import { loadConfig } from '../core/config.js'
import { loadEvalRecords } from '../src/eval/eval-ambignq.js'
import { hasAnswer } from '../core/has-answer.js'
import { scoreAmbigNq, type AmbigNqRecord } from '../src/eval/score-ambignq.js'
import { DEFAULT_SHARED_DATA } from '../core/paths.js'

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'models/extractive' },
    precision: { type: 'string', default: 'int8' },
    store: { type: 'string', default: 'data/eval-300' },
    shared: { type: 'string', default: DEFAULT_SHARED_DATA },
    'tune-ids': { type: 'string', default: 'train/splits/reader-tune.txt' },
    ks: { type: 'string', default: '1,3,5,10,20,30' },
    keeps: { type: 'string', default: '0.05,0.1,0.2,0.3,0.5,0.7' },
    floors: { type: 'string', default: '0,0.02,0.05,0.1,0.2' },
    'max-answers': { type: 'string', default: '1,2,3,5' },
    // The retriever's order as a prior on the passage score (reader.rankPrior).
    priors: { type: 'string', default: '0,0.5,1,2,4' },
    // reader.dropContaining: 0 keeps an answer that holds a better one's words and more, 1 drops it.
    'drop-containing': { type: 'string', default: '0,1' },
    tolerance: { type: 'string', default: '0.3' },
    // Only the first n questions of each set (a quick check of the bench itself).
    limit: { type: 'string' },
  },
})
const list = (s: string) => s.split(',').map(Number)
const ks = list(values.ks!)
const tolerance = Number(values.tolerance)
const grid = list(values.priors!).flatMap((rankPrior) => list(values.keeps!).flatMap((keep) => list(values.floors!).flatMap((minProbability) => list(values['max-answers']!).flatMap((maxAnswers) =>
  list(values['drop-containing']!).map((drop) => ({ rankPrior, keep, minProbability, maxAnswers, dropContaining: drop === 1 }))))))
type Setting = (typeof grid)[number]

const config = loadConfig({ flags: { store: values.store } })
const retriever = await openRetriever(config)
const reader = await ExtractiveReader.load(values.model!, { precision: values.precision as 'int8' | 'fp32' })

interface Question { record: AmbigNqRecord; passages: RetrievedPassage[]; read: ReadPassage[]; golds: string[]; spans: Map<string, ScoredSpan[]> }

/** The question's spans over its top k passages at the current rank prior (the rest of the setting does not change them). */
function spansAt(q: Question, k: number): ScoredSpan[] {
  const key = `${k}:${reader.options.rankPrior}`
  let spans = q.spans.get(key)
  if (!spans) q.spans.set(key, (spans = reader.scoreSpans(q.read.slice(0, k))))
  return spans
}

/** Retrieves each question's top passages and reads them once. */
async function prepare(name: string, records: AmbigNqRecord[]): Promise<Question[]> {
  const started = performance.now()
  const out: Question[] = []
  const maxK = Math.max(...ks)
  for (let i = 0; i < records.length; i += 8) {
    const chunk = records.slice(i, i + 8)
    const passages = await Promise.all(chunk.map((r) => retriever.search(r.question, maxK)))
    const read = await reader.readPassages(chunk.map((r, j) => ({ question: r.question, passages: passages[j]! })))
    chunk.forEach((record, j) => out.push({ record, passages: passages[j]!, read: read[j]!, golds: goldAnswers(record), spans: new Map() }))
    if ((i / 8) % 10 === 0) process.stderr.write(`${name}: ${out.length}/${records.length} questions read (${((performance.now() - started) / 1000).toFixed(0)} s)\n`)
  }
  return out
}

function goldAnswers(record: AmbigNqRecord): string[] {
  return record.annotations.flatMap((a) => (a.type === 'singleAnswer' ? a.answer : a.qaPairs.flatMap((p) => p.answer)))
}

/** F1 answer (all, multi) of one setting at k passages, and how often the best passage holds a gold answer. */
function score(questions: Question[], k: number, s: Setting): { all: number; multi: number; empty: number } {
  Object.assign(reader.options, { rankPrior: s.rankPrior, dropContaining: s.dropContaining, candidates: Math.max(...list(values['max-answers']!)) })
  const predictions: Record<string, string[]> = {}
  let empty = 0
  for (const q of questions) {
    const item = { question: q.record.question, passages: q.passages.slice(0, k) }
    const candidates = reader.candidates(item, spansAt(q, k)).map((a) => ({ ...a, confidence: a.probability }))
    const answers = plainSet(candidates, s).map((a) => a.answer)
    if (answers.length === 0) empty++
    predictions[q.record.id] = answers.length > 0 ? answers : ['']
  }
  const m = scoreAmbigNq(questions.map((q) => q.record), predictions).metrics['F1 answer']
  return { all: 100 * m.all, multi: 100 * m.multi, empty }
}

/** Share of questions whose highest-selected passage among the top k (rank prior included) holds a gold answer, and whose top k hold one at all. */
function selection(questions: Question[], k: number, rankPrior: number): { selected: number; recall: number } {
  let selected = 0
  let recall = 0
  for (const q of questions) {
    const read = q.read.slice(0, k)
    let best = 0
    const logit = (i: number) => read[i]!.logits.relevance - rankPrior * Math.log(i + 1)
    read.forEach((_, i) => { if (logit(i) > logit(best)) best = i })
    const holds = (p: RetrievedPassage) => hasAnswer(`${p.title} ${p.text}`, q.golds)
    if (q.passages[best] && holds(q.passages[best]!)) selected++
    if (q.passages.slice(0, k).some(holds)) recall++
  }
  return { selected: (100 * selected) / questions.length, recall: (100 * recall) / questions.length }
}

const fmt = (s: Setting) => `prior ${s.rankPrior}, keep ${s.keep}, floor ${s.minProbability}, max ${s.maxAnswers}${s.dropContaining ? ', drop containing' : ''}`
const limit = values.limit === undefined ? undefined : Number(values.limit)
const tune = await prepare('tune', loadEvalRecords(`${values.shared}/ambignq/train_light.json`, values['tune-ids'], limit))
const evalSet = await prepare('eval-300', loadEvalRecords(`${values.shared}/ambignq/dev_light.json`, `${values.shared}/splits/eval-300.txt`, limit))
const multi = (qs: Question[]) => qs.filter((q) => !q.record.annotations.some((a) => a.type === 'singleAnswer')).length
console.log(`bench/tune-extractive: model ${values.model} (${values.precision}), store ${values.store}, retriever ${config.retriever}`)
console.log(`tuning split ${values['tune-ids']}: ${tune.length} questions (${multi(tune)} multi); eval-300: ${evalSet.length} (${multi(evalSet)} multi); ${grid.length} settings per k`)
console.log('\n| k | tune: best setting | tune F1 all / multi | tune selection / recall@k | eval-300 F1 all / multi (same setting) | eval-300 selection / recall@k |')
console.log('|---|---|---|---|---|---|')
let chosen: { k: number; s: Setting; all: number } | undefined
for (const k of ks) {
  // F1 never rewards declining (an empty set scores 0, as a wrong one does), so the floor is the
  // highest whose F1 is within `tolerance` of the best: "not found" where it costs (almost) nothing.
  const results = grid.map((s) => ({ s, ...score(tune, k, s) }))
  const top = Math.max(...results.map((r) => r.all))
  const best = results.filter((r) => r.all >= top - tolerance).sort((x, y) => y.s.minProbability - x.s.minProbability || y.all - x.all)[0]
  const e = score(evalSet, k, best!.s)
  const st = selection(tune, k, best!.s.rankPrior)
  const se = selection(evalSet, k, best!.s.rankPrior)
  console.log(`| ${k} | ${fmt(best!.s)} | ${best!.all.toFixed(1)} / ${best!.multi.toFixed(1)} | ${st.selected.toFixed(1)} / ${st.recall.toFixed(1)} | ${e.all.toFixed(1)} / ${e.multi.toFixed(1)} | ${se.selected.toFixed(1)} / ${se.recall.toFixed(1)} |`)
  if (!chosen || best!.all > chosen.all + tolerance) chosen = { k, s: best!.s, all: best!.all }
}
const e = score(evalSet, chosen!.k, chosen!.s)
console.log(`\nchosen on the tuning split: read ${chosen!.k}, ${fmt(chosen!.s)} (tune F1 ${chosen!.all.toFixed(1)}); eval-300 F1 answer ${e.all.toFixed(1)} all / ${e.multi.toFixed(1)} multi, ${e.empty} of ${evalSet.length} questions answered with nothing`)
// The chosen setting with and without dropContaining, side by side.
console.log('\n| dropContaining | tune F1 all / multi | eval-300 F1 all / multi |\n|---|---|---|')
for (const dropContaining of [false, true]) {
  const t = score(tune, chosen!.k, { ...chosen!.s, dropContaining })
  const v = score(evalSet, chosen!.k, { ...chosen!.s, dropContaining })
  console.log(`| ${dropContaining} | ${t.all.toFixed(1)} / ${t.multi.toFixed(1)} | ${v.all.toFixed(1)} / ${v.multi.toFixed(1)} |`)
}
// What declining costs: the chosen setting at every floor tried, and how many questions it leaves unanswered.
console.log('\n| floor (minProbability) | tune F1 all | tune unanswered | eval-300 F1 all / multi | eval-300 unanswered |\n|---|---|---|---|---|')
for (const minProbability of list(values.floors!)) {
  const t = score(tune, chosen!.k, { ...chosen!.s, minProbability })
  const v = score(evalSet, chosen!.k, { ...chosen!.s, minProbability })
  console.log(`| ${minProbability} | ${t.all.toFixed(1)} | ${t.empty} of ${tune.length} | ${v.all.toFixed(1)} / ${v.multi.toFixed(1)} | ${v.empty} of ${evalSet.length} |`)
}
await reader.close()
await retriever.close()
