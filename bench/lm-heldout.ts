// bench/lm-heldout: scores rewrites the trainer generated for the QD held-out split (train side,
// train/splits/qd-heldout.txt) with the official metric, gold answers given. `generated-<run>.jsonl`
// holds base-vocabulary token ids (train_lm_adapter's `generate`, greedy as serving decodes); they
// are turned back to text with the base model's own tokenizer. `--serve FOLDER` generates them
// instead as serving does (llama.cpp, the folder's GGUF adapter) from the same prompts. Where
// settings are chosen: never eval-300.
//   node dist/bench/lm-heldout.js --gguf models/base/gemma-3-270m-q4_k_m.gguf --data data/train RUN_DIR/generated-*.jsonl
//   node dist/bench/lm-heldout.js --serve assets/models/qd-lm [--lookahead N: reader.qdLookahead's default; 0: one token a step] [--unmerged: the adapter applied at run time, whatever lm.json says] [--limit N]
import { readFileSync } from 'node:fs'
import { basename } from 'node:path'
import { parseArgs } from 'node:util'
import type { Token } from 'node-llama-cpp'
import { generatedLine, qdAnswerLine, qdPrefix } from '../reader/lm-prompt.js'
import { defaults } from '../core/config.js'
import { LlamaLm, openLlama } from '../reader/generation/llama-lm.js'
import { qdGroups } from '../src/training/lm-pack.js'
import { checkedRewrites } from '../reader/question-disambiguator.js'
import { rewriteFaults, supportedWords, type RewriteFault } from '../reader/rewrite-check.js'
import { scoreAmbigNq, type AmbigNqRecord, type PredictedQaPair } from '../src/eval/score-ambignq.js'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { serve: { type: 'string', multiple: true, default: [] }, gguf: { type: 'string', default: 'models/base/gemma-3-270m-q4_k_m.gguf' }, data: { type: 'string', default: 'data/train' }, show: { type: 'string', default: '0' }, lookahead: { type: 'string', default: String(defaults.reader.qdLookahead) }, unmerged: { type: 'boolean', default: false }, limit: { type: 'string' } },
})
const rows = readFileSync(`${values.data}/qd-heldout.jsonl`, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l))
const groups = new Map(qdGroups(rows).map((g) => [g.id, g]))
// --limit n: the first n multi-answer groups served (a quick check; the split's numbers want all)
const limit = values.limit ? Number(values.limit) : Infinity
const llama = await openLlama()
const model = await llama.loadModel({ modelPath: values.gguf! })
const pct = (x: number) => (100 * x).toFixed(1)
console.log('| run | questions (multi) | F1 EDIT-F1 multi | F1 BLEU-4 multi | rewrites keeping every prompt word % | returned (every check): EDIT-F1 / BLEU-4 / rewritten % | returned (no word-from-nowhere check): EDIT-F1 / BLEU-4 / rewritten % | gold rewrites with a word from nowhere % |')
console.log('|---|---|---|---|---|---|---|---|')
/** Each multi-answer group's generated lines, as serving writes them. */
async function served(dir: string): Promise<{ id: string, lines: string[] }[]> {
  const lm = await LlamaLm.load(dir, { lookahead: Number(values.lookahead), ...(values.unmerged ? { merge: false } : {}) })
  const out: { id: string, lines: string[] }[] = []
  for (const g of groups.values()) {
    if (g.pairs.length < 2) continue
    if (out.length >= limit) break
    out.push({ id: g.id, lines: await lm.lines(qdPrefix(g.question, g.answers, g.evidence), g.pairs.map((p) => qdAnswerLine(p.answer)), 48) })
  }
  await lm.close()
  return out
}

/** The trainer's generated ids, back to text with the base's tokenizer. */
function generated(file: string): { id: string, lines: string[] }[] {
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as { id: string, generated: number[][] })
    .map((g) => ({ id: g.id, lines: g.generated.map((ids) => model.detokenize(ids as unknown as Token[])) }))
}

for (const file of [...positionals, ...values.serve!]) {
  const gen = values.serve!.includes(file) ? await served(file) : generated(file)
  const records: AmbigNqRecord[] = []
  const predictions: Record<string, PredictedQaPair[]> = {}
  let kept = 0
  let total = 0
  for (const g of gen) {
    const group = groups.get(g.id)
    if (!group || group.pairs.length < 2) continue
    records.push({ id: g.id, question: group.question, annotations: [{ type: 'multipleQAs', qaPairs: group.pairs.map((p) => ({ question: p.rewrite, answer: [p.answer] })) }] })
    predictions[g.id] = group.pairs.map((p, i) => {
      const question = generatedLine(g.lines[i] ?? '')
      const words = new Set(question.toLowerCase().match(/\w+/gu) ?? [])
      total++
      if ((group.question.toLowerCase().match(/\w+/gu) ?? []).every((w) => words.has(w))) kept++
      return { question, answer: p.answer }
    })
  }
  // What the server would return: the proposals through the rewrite checks, with and without the
  // word-from-nowhere check (the evidence is the prompt's own), and how often AmbigNQ's own rewrites
  // would fail that check against the same evidence.
  const checked = (ignore: readonly RewriteFault[]) => {
    const out: Record<string, PredictedQaPair[]> = {}
    let rewritten = 0
    for (const r of records) {
      const g = groups.get(r.id)!
      const item = { question: g.question, answers: g.pairs.map((p) => p.answer), passages: g.evidence.map((e, i) => ({ id: String(i), title: e.title, text: e.text, score: 1 })) }
      const list = checkedRewrites(item, predictions[r.id]!.map((p) => [p.question]), ignore)
      rewritten += list.filter((x) => x.rewritten).length
      out[r.id] = list.map((x, i) => ({ question: x.question, answer: g.pairs[i]!.answer }))
    }
    const mm = scoreAmbigNq(records, out).metrics
    return `${pct(mm['F1 edit-f1']!.multi)} / ${pct(mm['F1 bleu4']!.multi)} / ${pct(rewritten / total)}`
  }
  let goldFails = 0
  for (const r of records) {
    const g = groups.get(r.id)!
    const supported = supportedWords([g.question, ...g.answers, ...g.evidence.map((e) => e.text)])
    for (const p of g.pairs) if (rewriteFaults(g.question, p.rewrite, supported).includes('unsupported-word')) goldFails++
  }
  const m = scoreAmbigNq(records, predictions).metrics
  console.log(`| ${basename(file)} | ${records.length} | ${pct(m['F1 edit-f1']!.multi)} | ${pct(m['F1 bleu4']!.multi)} | ${pct(kept / total)} | ${checked([])} | ${checked(['unsupported-word'])} | ${pct(goldFails / total)} |`)
  for (const r of records.slice(0, Number(values.show))) {
    const a = r.annotations[0]
    if (a?.type !== 'multipleQAs') continue
    a.qaPairs.forEach((p, i) => console.log(`  ${r.question} → ${predictions[r.id]![i]!.question}   [gold: ${p.question}]`))
  }
}
await model.dispose()
await llama.dispose()
