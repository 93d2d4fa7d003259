// bench/retrieval: recall@k, coverage@k and latency on eval-300 for our BM25 and Lucene 8,
// side by side in one run, plus index build time. Prints numbers; passes or fails nothing.
//   npm run bench:retrieval [-- --data ../shared/data]
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { buildIndex } from '../index/build-index.js'
import { PassageStore } from '../retriever/passage-store.js'
import { eval300Questions, eval300Sources } from '../src/eval/eval-300.js'
import { loadIdList, loadQuestions } from '../src/eval/questions.js'
import { retrievalMetrics } from '../src/eval/retrieval-metrics.js'
import { createLogger } from '../src/log.js'
import { DEFAULT_ENCODERS_DIR, DEFAULT_SHARED_DATA, PROJECT_ROOT } from '../src/paths.js'
import { DenseEncoder, ENCODER_NAMES } from '../retriever/dense-encoder.js'
import { buildElasticsearchIndex } from '../index/build-elasticsearch.js'
import { Bm25EsRetriever } from '../retriever/bm25-es-retriever.js'
import { DenseRetriever } from '../retriever/dense-retriever.js'
import { loadVectors } from '../retriever/dense-vectors.js'
import { fuse, type FusionMethod } from '../retriever/hybrid-retriever.js'
import type { Retriever } from '../retriever/retriever.js'
import { percentile } from '../src/eval/evaluate-retriever.js'
import { agreement, runLucene, runOurBm25, type SystemRun } from './bm25-vs-lucene.js'

const KS = [1, 5, 20, 100]
const { values } = parseArgs({ options: { data: { type: 'string', default: DEFAULT_SHARED_DATA }, rebuild: { type: 'boolean', default: false } } })
const out = join(PROJECT_ROOT, 'bench', 'out')
const storeDir = join(out, 'eval-300-store')
mkdirSync(out, { recursive: true })
const log = createLogger('warn')

if (values.rebuild) rmSync(storeDir, { recursive: true, force: true })
const build = await buildIndex({ store: storeDir, sources: eval300Sources(values.data!), onError: 'fail', batchSize: 2000, segmentSize: 200_000, workers: 2, log })
const { questions: questionsFile, ids } = eval300Questions(values.data!)
const questions = loadQuestions(questionsFile, loadIdList(ids))
const texts = questions.map((q) => q.question)

const store = PassageStore.openReadOnly(storeDir)
const textOf = (id: string) => store.byId(id)?.text ?? ''
const runs: SystemRun[] = [runOurBm25(storeDir, texts, 100), await runLucene(storeDir, texts, 100, join(out, 'lucene-eval-300'))]
// BM25 on Elasticsearch when a cluster answers (scripts/elasticsearch up): the same sources into
// an index of its own (resumable, so a second run reuses it).
const esUrl = process.env.AMBIGQA_ELASTICSEARCH_URL ?? 'http://127.0.0.1:9200'
if (await fetch(`${esUrl}/_cluster/health`, { signal: AbortSignal.timeout(3000) }).then((r) => r.ok, () => false)) {
  const es = { url: esUrl, index: 'ambigqa-bench-eval-300' }
  await buildElasticsearchIndex({ es, sources: eval300Sources(values.data!), onError: 'fail', batchSize: 2000, log })
  runs.push({ ...(await runRetriever(new Bm25EsRetriever(es), texts)), system: 'BM25 (Elasticsearch 8.17, english, k1 0.9 b 0.4)' })
} else console.error(`bench/retrieval: no Elasticsearch at ${esUrl}, so no Elasticsearch row (scripts/elasticsearch up)`)

// Dense rows for every encoder whose vectors the store holds (`ambigqa index encode`), and
// fusions of BM25 with each: RRF, and weighted fusion over a grid of alpha (the BM25 weight).
// The grid is chosen on eval-300 itself, so the best hybrid row is an optimistic estimate.
const bm25Run = runs[0]!
for (const model of ENCODER_NAMES.filter((name) => loadVectors(store, name) !== null)) {
  const dense = await runRetriever(new DenseRetriever(PassageStore.openReadOnly(storeDir), await DenseEncoder.load(model, DEFAULT_ENCODERS_DIR)), texts)
  runs.push(dense)
  const fusions: [string, FusionMethod][] = [['rrf k=60', { kind: 'rrf', k: 60 }], ...[0.2, 0.3, 0.4, 0.5, 0.6].map((a): [string, FusionMethod] => [`weighted alpha=${a}`, { kind: 'weighted', weights: [a, 1 - a] }])]
  for (const [label, method] of fusions) {
    const hits = bm25Run.hits.map((ids, i) => fuse([ids.map((id, r) => ({ id, title: '', text: '', score: bm25Run.scores[i]![r]! })), dense.hits[i]!.map((id, r) => ({ id, title: '', text: '', score: dense.scores[i]![r]! }))], method).slice(0, 100).map((p) => p.id))
    runs.push({ system: `hybrid bm25+${model} ${label}`, hits, scores: [], latenciesMs: [], p50: bm25Run.p50 + dense.p50, p99: bm25Run.p99 + dense.p99, indexBytes: NaN })
  }
}
const rows = runs.map((run) => ({ run, metrics: retrievalMetrics(questions, run.hits.map((ids) => ids.map(textOf)), KS) }))
store.close()

async function runRetriever(retriever: Retriever, questions: readonly string[], warmup = 20): Promise<SystemRun> {
  for (const q of questions.slice(0, warmup)) await retriever.search(q, 100)
  const hits: string[][] = []
  const scores: number[][] = []
  const latenciesMs: number[] = []
  for (const q of questions) {
    const started = performance.now()
    const found = await retriever.search(q, 100)
    latenciesMs.push(performance.now() - started)
    hits.push(found.map((p) => p.id))
    scores.push(found.map((p) => p.score))
  }
  await retriever.close()
  return { system: retriever.name, hits, scores, latenciesMs, p50: percentile(latenciesMs, 50), p99: percentile(latenciesMs, 99), indexBytes: NaN }
}

const fmt = (x: number) => x.toFixed(1).padStart(6)
console.log(`eval-300: ${questions.length} questions, ${build.passages.toLocaleString('en-US')} passages; ` +
  `our build ${build.seconds.toFixed(1)} s (${build.added > 0 ? Math.round(build.added / build.seconds) + ' passages/s' : 'store reused; --rebuild to time it'})`)
console.log(`${'system'.padEnd(52)}${KS.map((k) => `  R@${k}`.padStart(6)).join('')}${KS.map((k) => `  C@${k}`.padStart(6)).join('')}   p50 ms   p99 ms  index MB  store MB  index s`)
for (const { run, metrics } of rows) {
  console.log(`${run.system.padEnd(52)}${KS.map((k) => fmt(metrics.recall[k]!)).join('')}${KS.map((k) => fmt(metrics.coverage[k]!)).join('')}` +
    `${run.p50.toFixed(2).padStart(9)}${run.p99.toFixed(2).padStart(9)}${(run.indexBytes / 2 ** 20).toFixed(1).padStart(10)}${(run.storeBytes !== undefined ? (run.storeBytes / 2 ** 20).toFixed(1) : '-').padStart(10)}` +
    `${(run.indexSeconds ?? (build.added > 0 ? build.seconds : NaN)).toFixed(1).padStart(9)}`)
}
console.log('hybrid latency: the sum of its two retrievers\' (they could run concurrently)')
const agree = agreement(runs[0]!, runs[1]!, 20)
console.log(`agreement with Lucene: same top-1 ${agree.top1.toFixed(1)}%, top-20 overlap ${agree.overlap.toFixed(1)}%`)
writeFileSync(join(out, 'retrieval.json'), JSON.stringify({ date: new Date().toISOString(), build, rows: rows.map(({ run, metrics }) => ({ system: run.system, metrics, p50: run.p50, p99: run.p99, indexBytes: run.indexBytes })), agreement: agree }, null, 2))
