// bench/scale: index size, ingestion rate and query latency at 1M passages, ours against
// Lucene 8 in one run. Ours twice over the same store and questions: block-max evaluation (the
// default) and the MaxScore scorer it replaced, with a check that both return the same top k. The corpus is SYNTHETIC, made from the real eval-300 passages (see
// synthetic-corpus.ts); the questions are the real eval-300 questions.
//   npm run bench:scale [-- --passages 1000000]
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { buildIndex } from '../index/build-index.js'
import type { Passage } from '../core/passage.js'
import { PassageStore } from '../retriever/passage-store.js'
import { eval300Questions, eval300Sources } from '../src/eval/eval-300.js'
import { loadIdList, loadQuestions } from '../src/eval/questions.js'
import { createLogger } from '../core/log.js'
import { DEFAULT_SHARED_DATA, PROJECT_ROOT } from '../core/paths.js'
import { agreement, runLucene, runOurBm25 } from './bm25-vs-lucene.js'
import { synthesize, writeDprTsv } from './synthetic-corpus.js'

const { values } = parseArgs({ options: { data: { type: 'string', default: DEFAULT_SHARED_DATA }, passages: { type: 'string', default: '1000000' } } })
const count = Number(values.passages)
const out = join(PROJECT_ROOT, 'bench', 'out')
mkdirSync(out, { recursive: true })
const log = createLogger('warn')

const realStore = join(out, 'eval-300-store')
await buildIndex({ store: realStore, sources: eval300Sources(values.data!), onError: 'fail', batchSize: 2000, segmentSize: 200_000, workers: 2, log })
const real = PassageStore.openReadOnly(realStore)
const pool = real.db.prepare('SELECT id, title, text FROM passages ORDER BY rowid').all() as Passage[]
real.close()

const tsv = join(out, `synthetic-${count}.tsv`)
if (!existsSync(tsv)) await writeDprTsv(tsv, synthesize(pool, count))
console.log(`SYNTHETIC corpus: ${count.toLocaleString('en-US')} passages recombined from ${pool.length.toLocaleString('en-US')} real eval-300 passages (${(statSync(tsv).size / 2 ** 20).toFixed(0)} MB TSV)`)

const storeDir = join(out, `synthetic-${count}-store`)
rmSync(storeDir, { recursive: true, force: true })
const build = await buildIndex({ store: storeDir, sources: [{ path: tsv }], onError: 'fail', batchSize: 5000, segmentSize: 200_000, workers: 2, log })
console.log(`ours: TSV ingestion + indexing ${build.seconds.toFixed(1)} s = ${Math.round(build.passages / build.seconds).toLocaleString('en-US')} passages/s`)

const { questions: questionsFile, ids } = eval300Questions(values.data!)
const questions = loadQuestions(questionsFile, loadIdList(ids)).map((q) => q.question)
// Block-max first: the passage text pages it reads are then warm for the MaxScore pass, so any
// advantage of order goes to the scorer it is compared against.
const blockMax = runOurBm25(storeDir, questions, 100, 50, 'block-max')
const maxScore = runOurBm25(storeDir, questions, 100, 50, 'maxscore')
const lucene = await runLucene(storeDir, questions, 100, join(out, `lucene-synthetic-${count}`))
const same = blockMax.hits.filter((hits, i) => hits.join() === maxScore.hits[i]!.join() && blockMax.scores[i]!.join() === maxScore.scores[i]!.join()).length
console.log(`block-max and MaxScore: identical top ${100} (ids, order, scores) for ${same} of ${questions.length} questions`)
const agree = agreement(blockMax, lucene, 100)
console.log(`block-max and Lucene: same top 1 for ${agree.top1.toFixed(1)}%, top-100 overlap ${agree.overlap.toFixed(1)}%`)
console.log(`${'system'.padEnd(44)}   p50 ms   p99 ms  rank p50  rank p99  index MB  store MB  index s  passages/s`)
for (const [run, seconds] of [[blockMax, build.seconds], [maxScore, build.seconds], [lucene, lucene.indexSeconds!]] as const) {
  console.log(`${run.system.padEnd(44)}${run.p50.toFixed(2).padStart(9)}${run.p99.toFixed(2).padStart(9)}` +
    `${(run.rankingMs ? run.rankingMs.p50.toFixed(2) : '-').padStart(10)}${(run.rankingMs ? run.rankingMs.p99.toFixed(2) : '-').padStart(10)}` +
    `${(run.indexBytes / 2 ** 20).toFixed(0).padStart(10)}${(run.storeBytes !== undefined ? (run.storeBytes / 2 ** 20).toFixed(0) : '-').padStart(10)}` +
    `${seconds.toFixed(1).padStart(9)}${Math.round(count / seconds).toLocaleString('en-US').padStart(12)}`)
}
console.log(`block-max / Lucene: p50 ${(blockMax.p50 / lucene.p50).toFixed(2)}x (target <= 1.0x), p99 ${(blockMax.p99 / lucene.p99).toFixed(2)}x (target <= 1.5x)`)
