// bench/qd-latency: the QD model's time per question on two cores, ways of running it side by side
// in the same run, alternating question by question: `--sides` lists them as model:lookahead, the
// model `adapter` (the LoRA applied at run time) or `merged` (merged into the base, the default),
// the lookahead 0 (one token a step) or N draft tokens of prompt-lookup decoding
// (reader/generation/llama-lm.ts), on the held-out split's multi-answer
// questions (train side: train/splits/qd-heldout.txt; their gold answers and evidence as the
// trainer saw them). Prints p50/p90/mean per side, and how many rewrites came out token for token
// the same (greedy either way: they should all be). A side may name its llama.cpp threads as a
// third part (merged:3:1), else it has --threads.
//   npx tsc -p . && node dist/bench/qd-latency.js [--model assets/models/qd-lm] [--sides adapter:0,merged:0,merged:3] [--limit 80] [--threads 2]
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { LlamaLm } from '../reader/generation/llama-lm.js'
import { qdAnswerLine, qdPrefix } from '../reader/lm-prompt.js'
import { qdGroups } from '../src/training/lm-pack.js'
import { percentile } from '../src/eval/evaluate-retriever.js'

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'assets/models/qd-lm' },
    data: { type: 'string', default: 'data/train' },
    sides: { type: 'string', default: 'adapter:0,merged:0,merged:3' },
    limit: { type: 'string', default: '80' },
    threads: { type: 'string', default: '2' },
  },
})
const sides = values.sides!.split(',').map((s) => {
  const [model, lookahead, threads] = s.split(':')
  if ((model !== 'adapter' && model !== 'merged') || !/^\d+$/.test(lookahead ?? '') || !/^(\d+)?$/.test(threads ?? '')) throw new Error(`--sides: ${s} is not adapter:N or merged:N, or either with :THREADS`)
  return { merge: model === 'merged', lookahead: Number(lookahead), threads: Number(threads || values.threads), label: `${model === 'merged' ? 'merged' : 'adapter at run time'}, ${lookahead === '0' ? 'one token a step' : `prompt lookup, ${lookahead} draft tokens`}${threads ? `, ${threads} thread${threads === '1' ? '' : 's'}` : ''}` }
})
const rows = readFileSync(`${values.data}/qd-heldout.jsonl`, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l))
const groups = qdGroups(rows).filter((g) => g.pairs.length >= 2).slice(0, Number(values.limit))
if (groups.length === 0) throw new Error(`no multi-answer groups in ${values.data}/qd-heldout.jsonl (run ambigqa data build)`)
const lms: LlamaLm[] = []
for (const side of sides) lms.push(await LlamaLm.load(values.model!, { lookahead: side.lookahead, merge: side.merge, threads: side.threads }))
const times: number[][] = sides.map(() => [])
let same = 0
const sameAsFirst = sides.map(() => 0)
let lines = 0
const ask = (lm: LlamaLm, g: (typeof groups)[number]) => lm.lines(qdPrefix(g.question, g.answers, g.evidence), g.pairs.map((p) => qdAnswerLine(p.answer)), 48)
// A warm-up question for each side, not timed.
for (const lm of lms) await ask(lm, groups[0]!)
for (const [n, g] of groups.entries()) {
  const written: string[][] = []
  // Alternate which side goes first, so neither always follows the other's cache state.
  const order = sides.map((_, i) => i)
  if (n % 2 === 1) order.reverse()
  for (const i of order) {
    const start = performance.now()
    written[i] = await ask(lms[i]!, g)
    times[i]!.push(performance.now() - start)
  }
  for (const [j, line] of written[0]!.entries()) {
    lines++
    if (written.every((w) => w[j] === line)) same++
    for (const [i, w] of written.entries()) if (w[j] === line) sameAsFirst[i]!++
  }
}
console.log(`${groups.length} held-out multi-answer questions (${lines} rewrites), ${values.threads} threads, ${values.model}`)
console.log('| decoding | p50 ms | p90 ms | mean ms |')
console.log('|---|---|---|---|')
for (const [i, side] of sides.entries()) {
  const t = times[i]!
  console.log(`| ${side.label} | ${percentile(t, 50).toFixed(0)} | ${percentile(t, 90).toFixed(0)} | ${(t.reduce((a, b) => a + b, 0) / t.length).toFixed(0)} |`)
}
console.log(`rewrites the same on every side: ${same} of ${lines}`)
for (const [i, side] of sides.entries()) if (i > 0) console.log(`  ${side.label}: ${sameAsFirst[i]} of ${lines} the same as ${sides[0]!.label}`)
for (const lm of lms) await lm.close()
