// bench/rerank: answer recall@k and coverage@k on eval-300 for a retriever's top 100 as retrieved
// and after a cross-encoder reorders them, side by side in one run, with the reranker's time per
// question. The retriever is the configured one (the default, dense e5, needs the store's
// vectors: `ambigqa index encode`). Prints numbers; passes or fails nothing.
//   npx tsc -p . && node dist/bench/rerank.js --model models/reranker [--store data/eval-300] [--retriever bm25-sqlite] [--retrieve 100] [--limit n]
import { parseArgs } from 'node:util'
import { CrossEncoderReranker } from '../retriever/cross-encoder-reranker.js'
import { fuse } from '../retriever/hybrid-retriever.js'
import { openRetriever } from '../retriever/open-retriever.js'
import type { RetrievedPassage } from '../core/retriever.js'
import { defaults, loadConfig } from '../core/config.js'
import { EVAL_300_STORE, eval300Questions } from '../src/eval/eval-300.js'
import { percentile } from '../src/eval/evaluate-retriever.js'
import { loadIdList, loadQuestions } from '../src/eval/questions.js'
import { retrievalMetrics } from '../src/eval/retrieval-metrics.js'
import { DEFAULT_SHARED_DATA } from '../core/paths.js'

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'models/reranker' },
    store: { type: 'string', default: EVAL_300_STORE },
    data: { type: 'string', default: DEFAULT_SHARED_DATA },
    retriever: { type: 'string', default: defaults.retriever },
    retrieve: { type: 'string', default: '100' },
    precision: { type: 'string', default: 'int8' },
    'max-tokens': { type: 'string', default: String(defaults.reranker.maxTokens) },
    limit: { type: 'string' },
  },
})
const k = Number(values.retrieve)
const { questions: file, ids } = eval300Questions(values.data!)
const questions = loadQuestions(file, loadIdList(ids)).slice(0, values.limit ? Number(values.limit) : undefined)
const retriever = await openRetriever(loadConfig({ flags: { store: values.store!, retriever: values.retriever! }, env: {} }))
const reranker = await CrossEncoderReranker.load(values.model!, { ...defaults.reranker, precision: values.precision as 'fp32' | 'int8', maxTokens: Number(values['max-tokens']) })

// Besides the reranker's order: its scores interpolated with the retriever's (both min-max
// normalised over the top k, as weighted fusion does), at these weights of the reranker.
const MIX = [0.1, 0.2, 0.3, 0.5]
const asText = (passages: readonly RetrievedPassage[]) => passages.map((p) => `${p.title} ${p.text}`)
const before: string[][] = []
const after: string[][] = []
const mixed: string[][][] = MIX.map(() => [])
const ms: number[] = []
for (const [i, q] of questions.entries()) {
  const passages = await retriever.search(q.question, k)
  before.push(asText(passages))
  const started = performance.now()
  const { reranked } = await reranker.run({ question: q.question, retrieve: passages.length, read: k, passages, timings: { retrievalMs: 0, totalMs: 0 } })
  ms.push(performance.now() - started)
  after.push(asText(reranked))
  MIX.forEach((w, m) => mixed[m]!.push(asText(fuse([passages, reranked], { kind: 'weighted', weights: [1 - w, w] }))))
  if ((i + 1) % 50 === 0) console.error(`bench/rerank: ${i + 1}/${questions.length} questions`)
}
const ks = [1, 5, 10, 20]
const row = (name: string, hits: string[][]) => {
  const m = retrievalMetrics(questions, hits, ks)
  return `| ${name} | ${ks.map((x) => m.recall[x]!.toFixed(1)).join(' | ')} | ${ks.map((x) => m.coverage[x]!.toFixed(1)).join(' | ')} |`
}
console.log(`bench/rerank: ${questions.length} eval-300 questions, ${retriever.name} top ${k} from ${values.store}, reranker ${values.model} (${values.precision}, ${values['max-tokens']} tokens)`)
console.log(`| system | ${ks.map((x) => `R@${x}`).join(' | ')} | ${ks.map((x) => `C@${x}`).join(' | ')} |`)
console.log(`|---|${ks.map(() => '---|---|').join('')}`)
console.log(row(retriever.name, before))
console.log(row(`${retriever.name} top ${k} + cross-encoder`, after))
MIX.forEach((w, m) => console.log(row(`${retriever.name} top ${k}, scores mixed with the cross-encoder's at weight ${w}`, mixed[m]!)))
console.log(`reranking ${k} passages: p50 ${percentile(ms, 50).toFixed(0)} ms, p99 ${percentile(ms, 99).toFixed(0)} ms per question`)
await reranker.close()
await retriever.close()
