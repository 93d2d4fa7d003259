// bench/rewrite-shares: of an eval run's answers in sets of two or more, the share returned
// rewritten and, of those, the share keeping every content word of the prompt (function words
// aside, rewrite-check.ts); the same share for AmbigNQ's own rewrites of the multi-answer
// questions; then the first 20 multi-answer questions (id list order) with the first answer
// returned, its rewrite and AmbigNQ's rewrite for that answer.
//   node dist/bench/rewrite-shares.js --run bench/out/eval-300-qd-lm
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { DEFAULT_SHARED_DATA } from '../core/paths.js'
import { FUNCTION_WORDS, rewriteWords } from '../reader/rewrite-check.js'
import { loadEvalRecords } from '../src/eval/eval-ambignq.js'
import type { PredictedQaPair } from '../src/eval/score-ambignq.js'

const { values } = parseArgs({ options: { run: { type: 'string' }, shared: { type: 'string', default: DEFAULT_SHARED_DATA }, show: { type: 'string', default: '20' } } })
if (!values.run) throw new Error('usage: rewrite-shares --run bench/out/<eval run>')
const records = loadEvalRecords(`${values.shared}/ambignq/dev_light.json`, `${values.shared}/splits/eval-300.txt`)
const predictions = JSON.parse(readFileSync(`${values.run}/predictions.json`, 'utf8')) as Record<string, PredictedQaPair[]>
const functionWords = new Set(FUNCTION_WORDS)
const same = (a: string, b: string) => rewriteWords(a).join(' ') === rewriteWords(b).join(' ')
const keepsPrompt = (prompt: string, rewrite: string) => {
  const words = new Set(rewriteWords(rewrite))
  return rewriteWords(prompt).filter((w) => !functionWords.has(w)).every((w) => words.has(w))
}
const pct = (n: number, d: number) => `${(100 * n / d).toFixed(1)}%`
let inSets = 0; let rewritten = 0; let kept = 0
for (const r of records) {
  const list = predictions[r.id] ?? []
  if (list.length < 2) continue
  for (const a of list) {
    inSets++
    if (same(a.question, r.question)) continue
    rewritten++
    if (keepsPrompt(r.question, a.question)) kept++
  }
}
let gold = 0; let goldKept = 0
for (const r of records) for (const a of r.annotations) if (a.type === 'multipleQAs') for (const p of a.qaPairs) {
  gold++
  if (keepsPrompt(r.question, p.question.split('|')[0]!)) goldKept++
}
console.log(`answers in sets of two or more: ${inSets}; rewritten ${rewritten} (${pct(rewritten, inSets)}); of those keeping every content word of the prompt ${kept} (${pct(kept, rewritten)})`)
console.log(`AmbigNQ's rewrites keeping every content word of the prompt: ${pct(goldKept, gold)} of ${gold}`)
console.log('\n| prompt | answer returned | rewrite returned | AmbigNQ\'s rewrite (first annotation, same answer where one matches) |\n|---|---|---|---|')
const multi = records.filter((r) => r.annotations.length > 0 && r.annotations.every((a) => a.type === 'multipleQAs')).slice(0, Number(values.show))
for (const r of multi) {
  const list = predictions[r.id] ?? []
  const a = list[0]
  if (!a) continue
  const pairs = r.annotations[0]!.type === 'multipleQAs' ? r.annotations[0]!.qaPairs : []
  const match = pairs.find((p) => p.answer.some((x) => same(x, a.answer)))
  const goldRewrite = match ? match.question.split('|')[0] : `(no gold answer matches; first: ${pairs[0]?.question.split('|')[0] ?? ''})`
  const returned = !same(a.question, r.question) ? a.question : list.length === 1 ? '(one answer returned: the prompt)' : '(refused: the prompt, rewritten false)'
  console.log(`| ${r.question} | ${a.answer} | ${returned} | ${goldRewrite} |`)
}
