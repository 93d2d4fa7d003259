// Tokenizes the decoder's training and held-out examples (reader/lm-prompt.ts) with the tokenizer
// serving uses (llama.cpp's, from the GGUF itself), so that the trainer on a machine with no
// tokenizer gets exactly the ids serving will feed. Writes one JSON line per example:
//   {id, task: 'qd'|'span', split: 'train'|'heldout', prefix: ids, steps: [{forced: ids, target: ids, text}]}
// where a step's `target` is what the loss is on and `text` its string (the reference for held-out scoring).
//   node dist/src/training/lm-pack.js --gguf BASE.gguf --data data/train --out DIR/examples.jsonl [--limit N]
import { createReadStream, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import type { LlamaModel } from 'node-llama-cpp'
import { openLlama } from '../../reader/generation/llama-lm.js'
import { INPUT_SEPARATOR as SEP } from '../../reader/reader-input.js'
import { pickEvidence, qdAnswerLine, qdPrefix, qdTarget, spanPrefix, spanTarget } from '../../reader/lm-prompt.js'

interface Row { id: string, qid: string, question: string, input: string, target: string, answer?: string, answers?: string[][] }
export interface PackedStep { forced: number[], target: number[], text: string }
export interface PackedExample { id: string, task: 'qd' | 'span', split: 'train' | 'heldout', prefix: number[], steps: PackedStep[] }

async function readRows(path: string, limit: number): Promise<Row[]> {
  const rows: Row[] = []
  for await (const line of createInterface({ input: createReadStream(path) })) {
    if (line.trim() === '') continue
    rows.push(JSON.parse(line) as Row)
    if (rows.length >= limit) break
  }
  return rows
}

/** data.py's inputs keep passages as `title: text` strings after the answer slots. */
function passagesOf(input: string, skip: number): { title: string, text: string }[] {
  return input.split(SEP).slice(skip).map((text) => ({ title: '', text }))
}

/** QD rows (one per disambiguation) → one example per prompt and annotation, rewrites in pair order. */
export function qdGroups(rows: readonly Row[]): { id: string, question: string, answers: string[], evidence: { title: string, text: string }[], pairs: { answer: string, rewrite: string }[] }[] {
  const groups = new Map<string, Row[]>()
  for (const r of rows) {
    const key = r.id.slice(0, r.id.lastIndexOf('.'))
    const g = groups.get(key)
    if (g) g.push(r)
    else groups.set(key, [r])
  }
  const pairIndex = (r: Row): number => Number(r.id.slice(r.id.lastIndexOf('.') + 1))
  return [...groups.entries()].map(([id, g]) => {
    g.sort((a, b) => pairIndex(a) - pairIndex(b))
    const answers: string[] = []
    const add = (a: string): void => { if (a !== '' && !answers.includes(a)) answers.push(a) }
    for (const r of g) add(r.answer ?? r.input.split(SEP)[1] ?? '')
    for (const r of g) for (const o of (r.input.split(SEP)[2] ?? '').split(' <SEP> ')) add(o.trim())
    const evidence = pickEvidence(g.map((r) => passagesOf(r.input, 3)))
    return { id, question: g[0]!.question, answers, evidence, pairs: g.map((r) => ({ answer: r.answer ?? '', rewrite: r.target })) }
  })
}

export async function packExamples(model: LlamaModel, dataDir: string, limit: number): Promise<PackedExample[]> {
  const tok = (s: string): number[] => Array.from(model.tokenize(s))
  const bos = model.tokens.bos
  if (bos === null) throw new Error('lm-pack: the base model has no BOS token')
  const out: PackedExample[] = []
  for (const split of ['train', 'heldout'] as const) {
    for (const g of qdGroups(await readRows(`${dataDir}/qd-${split}.jsonl`, limit))) {
      out.push({
        id: g.id, task: 'qd', split, prefix: [bos, ...tok(qdPrefix(g.question, g.answers, g.evidence))],
        steps: g.pairs.map((p) => ({ forced: tok(qdAnswerLine(p.answer)), target: tok(qdTarget(p.rewrite)), text: p.rewrite })),
      })
    }
    for (const r of await readRows(`${dataDir}/spanseqgen2-${split}.jsonl`, limit)) {
      const answers = (r.answers ?? []).map((aliases) => aliases[0] ?? '').filter((a) => a !== '')
      const evidence = pickEvidence([passagesOf(r.input, 1)])
      out.push({
        id: r.id, task: 'span', split, prefix: [bos, ...tok(spanPrefix(r.question, evidence))],
        steps: [{ forced: [], target: tok(spanTarget(answers)), text: answers.join(' | ') }],
      })
    }
  }
  return out
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: {
    gguf: { type: 'string' }, data: { type: 'string', default: 'data/train' }, out: { type: 'string' },
    limit: { type: 'string', default: String(Number.MAX_SAFE_INTEGER) },
  } })
  if (!values.gguf || !values.out) throw new Error('usage: lm-pack --gguf BASE.gguf --data data/train --out examples.jsonl [--limit N]')
  const llama = await openLlama()
  const model = await llama.loadModel({ modelPath: values.gguf })
  const examples = await packExamples(model, values.data, Number(values.limit))
  mkdirSync(dirname(values.out), { recursive: true })
  writeFileSync(`${values.out}.tmp`, examples.map((e) => JSON.stringify(e)).join('\n') + '\n')
  renameSync(`${values.out}.tmp`, values.out)
  const count = (task: string, split: string): number => examples.filter((e) => e.task === task && e.split === split).length
  console.log(`lm-pack: ${values.out}: qd ${count('qd', 'train')} train / ${count('qd', 'heldout')} held out, span ${count('span', 'train')} / ${count('span', 'heldout')}`)
  await model.dispose()
  await llama.dispose()
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e: unknown) => { console.error(e instanceof Error ? e.message : e); process.exit(1) })
}
