// bench/retrieval: recall@k, coverage@k and latency on eval-300 for our BM25 and Lucene 8,
// side by side in one run, plus index build time. Prints numbers; passes or fails nothing.
//   npm run bench:retrieval [-- --data ../shared/data] [--store data/eval-300] [--rebuild]
// The store is the eval-300 one every other command uses (`ambigqa bench corpus`), so the vectors
// of `ambigqa index encode --store data/eval-300` serve here too.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { buildIndex } from '../index/build-index.js'
import { PassageStore } from '../retriever/passage-store.js'
import { EVAL_300_STORE, eval300Questions, eval300Sources } from '../src/eval/eval-300.js'
import { loadIdList, loadQuestions } from '../src/eval/questions.js'
import { corpusCeiling, retrievalMetrics } from '../src/eval/retrieval-metrics.js'
import { createLogger } from '../core/log.js'
import { DEFAULT_ENCODERS_DIR, DEFAULT_SHARED_DATA, PROJECT_ROOT } from '../core/paths.js'
import { DenseEncoder, ENCODER_NAMES } from '../retriever/dense-encoder.js'
import { buildElasticsearchIndex } from '../index/elasticsearch/build-elasticsearch.js'
import { encodeElasticsearch } from '../index/dense/encode-elasticsearch.js'
import { Bm25EsRetriever } from '../retriever/bm25-es-retriever.js'
import { DenseEsRetriever } from '../retriever/dense-es-retriever.js'
import { DenseRetriever } from '../retriever/dense-retriever.js'
import { loadVectors } from '../retriever/dense-vectors.js'
import { fuse, type FusionMethod } from '../retriever/hybrid-retriever.js'
import type { Retriever } from '../core/retriever.js'
import { percentile } from '../src/eval/evaluate-retriever.js'
import { agreement, runLucene, runOurBm25, type SystemRun } from './bm25-vs-lucene.js'

const KS = [1, 5, 20, 100]
const { values } = parseArgs({ options: { data: { type: 'string', default: DEFAULT_SHARED_DATA }, store: { type: 'string', default: join(PROJECT_ROOT, EVAL_300_STORE) }, rebuild: { type: 'boolean', default: false } } })
const out = join(PROJECT_ROOT, 'bench', 'out')
const storeDir = values.store!
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
// kNN rows too, for each encoder whose vectors the store holds (copied into the index, not re-encoded).
const esUrl = process.env.AMBIGQA_ELASTICSEARCH_URL ?? 'http://127.0.0.1:9200'
const encoded = ENCODER_NAMES.filter((name) => loadVectors(store, name) !== null)
const esRuns: SystemRun[] = []
if (await fetch(`${esUrl}/_cluster/health`, { signal: AbortSignal.timeout(3000) }).then((r) => r.ok, () => false)) {
  const es = { url: esUrl, index: 'ambigqa-bench-eval-300' }
  await buildElasticsearchIndex({ es, sources: eval300Sources(values.data!), onError: 'fail', batchSize: 2000, log })
  runs.push({ ...(await runRetriever(new Bm25EsRetriever(es), texts)), system: 'BM25 (Elasticsearch 8.17, english, k1 0.9 b 0.4)' })
  for (const model of encoded) {
    await encodeElasticsearch({ es, model, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 500, fromStore: storeDir, log })
    esRuns.push({ ...(await runRetriever(new DenseEsRetriever(es, await DenseEncoder.load(model, DEFAULT_ENCODERS_DIR)), texts)), system: `kNN ${model} (Elasticsearch HNSW, 200 candidates)` })
  }
} else console.error(`bench/retrieval: no Elasticsearch at ${esUrl}, so no Elasticsearch rows (scripts/elasticsearch up)`)

// Dense rows for every encoder whose vectors the store holds (`ambigqa index encode`), and
// fusions of BM25 with each: RRF, and weighted fusion over a grid of alpha (the BM25 weight).
// The grid is chosen on eval-300 itself, so the best hybrid row is an optimistic estimate.
const bm25Run = runs[0]!
const asPassages = (run: SystemRun, i: number) => run.hits[i]!.map((id, r) => ({ id, title: '', text: '', score: run.scores[i]![r]! }))
const fusedRun = (system: string, sources: SystemRun[], method: FusionMethod): SystemRun => ({
  system, hits: texts.map((_, i) => fuse(sources.map((run) => asPassages(run, i)), method).slice(0, 100).map((p) => p.id)),
  scores: [], latenciesMs: [], p50: sources.reduce((t, r) => t + r.p50, 0), p99: sources.reduce((t, r) => t + r.p99, 0), indexBytes: NaN,
})
const denseRuns: SystemRun[] = []
for (const model of encoded) {
  const dense = await runRetriever(new DenseRetriever(PassageStore.openReadOnly(storeDir), await DenseEncoder.load(model, DEFAULT_ENCODERS_DIR)), texts)
  runs.push(dense)
  denseRuns.push(dense)
  const fusions: [string, FusionMethod][] = [['rrf k=60', { kind: 'rrf', k: 60 }], ...[0.2, 0.3, 0.4, 0.5, 0.6].map((a): [string, FusionMethod] => [`weighted alpha=${a}`, { kind: 'weighted', weights: [a, 1 - a] }])]
  for (const [label, method] of fusions) runs.push(fusedRun(`hybrid bm25+${model} ${label}`, [bm25Run, dense], method))
}
// BM25 with every encoder at once, and the encoders without BM25.
if (denseRuns.length >= 2) {
  const all = [bm25Run, ...denseRuns]
  runs.push(fusedRun(`hybrid bm25+${denseRuns.length} dense rrf k=60`, all, { kind: 'rrf', k: 60 }))
  runs.push(fusedRun(`hybrid bm25+${denseRuns.length} dense weighted equal`, all, { kind: 'weighted', weights: all.map(() => 1 / all.length) }))
  runs.push(fusedRun(`hybrid ${denseRuns.length} dense rrf k=60`, denseRuns, { kind: 'rrf', k: 60 }))
}
runs.push(...esRuns)
const rows = runs.map((run) => ({ run, metrics: retrievalMetrics(questions, run.hits.map((ids) => ids.map(textOf)), KS) }))
// What a perfect retriever would reach with every passage of the corpus: the goals' ceiling.
const ceiling = corpusCeiling(questions, (store.db.prepare('SELECT text FROM passages').pluck().iterate() as Iterable<string>))
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
console.log(`every passage of the corpus (the ceiling of any retriever): recall ${ceiling.recall.toFixed(1)}, coverage ${ceiling.coverage.toFixed(1)}`)
console.log('hybrid latency: the sum of its two retrievers\' (they could run concurrently)')
const agree = agreement(runs[0]!, runs[1]!, 20)
console.log(`agreement with Lucene: same top-1 ${agree.top1.toFixed(1)}%, top-20 overlap ${agree.overlap.toFixed(1)}%`)
writeFileSync(join(out, 'retrieval.json'), JSON.stringify({ date: new Date().toISOString(), build, ceiling, rows: rows.map(({ run, metrics }) => ({ system: run.system, metrics, p50: run.p50, p99: run.p99, indexBytes: run.indexBytes })), agreement: agree }, null, 2))
