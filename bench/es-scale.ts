// bench/es-scale: Elasticsearch at 1M SYNTHETIC passages on two nodes (scripts/elasticsearch up
// --nodes 2: loopback, 1 GB heap each, and a voting-only third; 2 shards, 1 replica each), in one
// run: indexing time (the
// BM25 index built, then the store's e5 vectors copied in with --from-store), kNN recall@10
// against exact float32 search over the store's vectors and kNN p50/p99 (the queries pre-encoded,
// as bench/ann-scale measures the embedded ANN index), BM25 p50/p99 beside the embedded store's
// BM25 on the same real eval-300 questions, then one node killed -9 under a query load: queries
// answered and errors while it is down, and once it is back, the passage count and a sample of
// passages against the store. The store is bench/ann-scale's (SYNTHETIC passages and vectors);
// this waits for it (<store>.vectors-done). Each step resumes: a killed run picks up the index.
//   npx tsc -p . && node dist/bench/es-scale.js [--store bench/out/synthetic-1000000-store] [--cpu-lock /tmp/ambigqa-cpu.lock]
import { createWriteStream, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { once } from 'node:events'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import usearch from 'usearch'
import { createLogger } from '../core/log.js'
import { DEFAULT_ENCODERS_DIR, DEFAULT_SHARED_DATA, PROJECT_ROOT } from '../core/paths.js'
import type { Retriever } from '../core/retriever.js'
import { buildElasticsearchIndex } from '../index/elasticsearch/build-elasticsearch.js'
import { encodeElasticsearch } from '../index/dense/encode-elasticsearch.js'
import { Bm25EsRetriever } from '../retriever/bm25-es-retriever.js'
import { DenseEncoder } from '../retriever/dense-encoder.js'
import { DenseEsRetriever, vectorField } from '../retriever/dense-es-retriever.js'
import { loadVectors } from '../retriever/dense-vectors.js'
import { createEsClient } from '../retriever/elasticsearch-client.js'
import { PassageStore } from '../retriever/passage-store.js'
import { percentile } from '../src/eval/evaluate-retriever.js'
import { eval300Questions } from '../src/eval/eval-300.js'
import { loadIdList, loadQuestions } from '../src/eval/questions.js'
import { runOurBm25 } from './bm25-vs-lucene.js'
import { holdCpuLock } from './cpu-lock.js'
import { clusterUrl, compareWithStore, esScript, runNodeLoss } from './es-node-loss.js'

const K = 10
const { values } = parseArgs({
  options: {
    store: { type: 'string', default: join(PROJECT_ROOT, 'bench', 'out', 'synthetic-1000000-store') },
    data: { type: 'string', default: DEFAULT_SHARED_DATA },
    model: { type: 'string', default: 'e5-small-v2-int8' },
    port: { type: 'string', default: '9270' },
    index: { type: 'string', default: 'ambigqa-scale' },
    'cpu-lock': { type: 'string' },
    'num-candidates': { type: 'string', default: '100,200,500' },
    'loss-seconds': { type: 'string', default: '30' },
    sample: { type: 'string', default: '1000' },
    'force-merge': { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
  },
})
const MODEL = values.model!
const storeDir = values.store!
const PORT = Number(values.port)
const url = clusterUrl(PORT, 2)
const index = values.index!
const log = createLogger('info')
const say = (line: string) => console.log(line)
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

// The store is made by bench/ann-scale, which marks it ready once its vectors are in.
while (!existsSync(`${storeDir}.vectors-done`)) {
  say(`waiting for ${storeDir}.vectors-done`)
  await sleep(60_000)
}
const release = values['cpu-lock'] ? await holdCpuLock(values['cpu-lock'], say) : async () => undefined
const es = esScript(PORT)
const client = createEsClient({ url, index, requestTimeoutMs: 600_000, maxRetries: 3 })
const opened: Retriever[] = []
try {
  say(await es('up', '--nodes', '2'))
  const store = PassageStore.openReadOnly(storeDir)
  const passages = store.count()
  store.close()

  // The index reads sources, not stores: the store's passages as JSON Lines, exactly (no quoting).
  const source = `${storeDir}.passages.jsonl`
  if (!existsSync(source)) {
    const s = PassageStore.openReadOnly(storeDir)
    const out = createWriteStream(`${source}.part`)
    for (const p of s.db.prepare('SELECT id, title, text FROM passages ORDER BY rowid').iterate() as Iterable<{ id: string; title: string; text: string }>) {
      if (!out.write(`${JSON.stringify({ id: p.id, title: p.title, text: p.text })}\n`)) await once(out, 'drain')
    }
    out.end()
    await once(out, 'finish')
    s.close()
    renameSync(`${source}.part`, source)
  }

  const esOptions = { url, index, requestTimeoutMs: 600_000, maxRetries: 3 }
  const built = await buildElasticsearchIndex({ es: esOptions, sources: [{ path: source, format: 'jsonl' }], onError: 'fail', batchSize: 5000, log })
  say(`BM25 index: ${built.passages.toLocaleString('en-US')} passages, ${built.sent.toLocaleString('en-US')} sent in this run, ${built.seconds.toFixed(1)} s; ${built.shards} shards, ${built.replicas} replica each`)
  const encoded = await encodeElasticsearch({ es: esOptions, model: MODEL, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 1000, fromStore: storeDir, log })
  say(`vectors copied from the store: ${encoded.encoded.toLocaleString('en-US')} in this run, ${encoded.seconds.toFixed(1)} s`)
  await client.cluster.health({ index, wait_for_status: 'green', timeout: '600s' })
  // The real eval-300 questions, encoded once: latencies below are the searches alone.
  const { questions: questionsFile, ids } = eval300Questions(values.data!)
  const questions = loadQuestions(questionsFile, loadIdList(ids)).map((q) => q.question)
  const encoder = await DenseEncoder.load(MODEL, DEFAULT_ENCODERS_DIR)
  const vectors = await encoder.encode(questions, 'query')
  await encoder.close()
  const byQuestion = new Map(questions.map((q, i) => [q, vectors[i]!]))
  // DenseEsRetriever as served, its encoder replaced by the questions' vectors.
  const preEncoded = { name: MODEL, encode: async (texts: readonly string[]) => texts.map((t) => byQuestion.get(t)!), close: async () => undefined } as unknown as DenseEncoder
  const truth = exactTopK(storeDir, vectors)
  const ours = runOurBm25(storeDir, questions, K, questions.length)

  const candidates = values['num-candidates']!.split(',').map(Number)
  const denseAt = new Map(candidates.map((n) => [n, new DenseEsRetriever({ url, index }, preEncoded, n)]))
  const bm25Es = new Bm25EsRetriever({ url, index })
  opened.push(...denseAt.values(), bm25Es)
  const timed = async (retriever: Retriever) => {
    for (const q of questions) await retriever.search(q, K)
    const latencies: number[] = []
    const hits: string[][] = []
    for (const q of questions) {
      const t = performance.now()
      hits.push((await retriever.search(q, K)).map((p) => p.id))
      latencies.push(performance.now() - t)
    }
    return { hits, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
  }
  const overlap = (a: string[][], b: string[][]) => a.reduce((sum, hits, i) => sum + hits.filter((id) => b[i]!.includes(id)).length / K, 0) / a.length

  /** kNN and BM25 on the index as it stands, once Lucene's merges have settled. */
  const measure = async (label: string) => {
    for (let i = 0; i < 720; i++) {
      const merging = (await client.indices.stats({ index, metric: 'merge' }))._all.total?.merges?.current ?? 0
      if (merging === 0) break
      await sleep(5000)
    }
    const [info] = (await client.cat.indices({ index, format: 'json', bytes: 'mb' })) as unknown as { 'store.size': string; 'pri.store.size': string; 'docs.deleted': string }[]
    const segments = ((await client.cat.segments({ index, format: 'json' })) as unknown as { prirep: string }[]).filter((x) => x.prirep === 'p').length
    const layout = { primaryMB: Number(info!['pri.store.size']), totalMB: Number(info!['store.size']), segments, deleted: Number(info!['docs.deleted']) }
    const knn: { numCandidates: number; recall: number; p50: number; p99: number }[] = []
    for (const [numCandidates, dense] of denseAt) {
      const run = await timed(dense)
      knn.push({ numCandidates, recall: overlap(run.hits, truth), p50: run.p50, p99: run.p99 })
    }
    const bm25 = await timed(bm25Es)
    // Other work on the machine shows here: two cores serve both nodes and this process.
    const load = loadavg()[0]!
    say(`\n${label} (load average over the last minute ${load.toFixed(2)}): ${layout.primaryMB} MB primaries, ${layout.totalMB} MB with replicas; ${segments} primary segments; ${layout.deleted.toLocaleString('en-US')} deleted documents not merged away`)
    say(`${passages.toLocaleString('en-US')} SYNTHETIC passages, ${questions.length} real eval-300 questions, k = ${K}, one query at a time after a warm-up pass; 2 nodes, 1 GB heap each, ${built.shards} shards, ${built.replicas} replica`)
    say(`${'path'.padEnd(66)} recall@10   p50 ms   p99 ms`)
    const row = (name: string, recall: string, p50: number, p99: number) => say(`${name.padEnd(66)}${recall.padStart(10)}${p50.toFixed(2).padStart(9)}${p99.toFixed(2).padStart(9)}`)
    for (const r of knn) row(`ES kNN (HNSW M 16, ef_construction 100), num_candidates ${r.numCandidates} per shard`, r.recall.toFixed(4), r.p50, r.p99)
    row('ES BM25 (most_fields over title and text)', '-', bm25.p50, bm25.p99)
    row(`embedded store: ${ours.system}`, '-', ours.p50, ours.p99)
    say(`BM25 top-10 overlap, ES against the embedded store: ${(100 * overlap(bm25.hits, ours.hits)).toFixed(1)}%`)
    return { label, load, layout, knn, bm25: { es: { p50: bm25.p50, p99: bm25.p99 }, embedded: { system: ours.system, p50: ours.p50, p99: ours.p99 }, overlap: overlap(bm25.hits, ours.hits) } }
  }
  const measured = [await measure('as built')]
  let mergeSeconds: number | undefined
  if (values['force-merge']) {
    const t = performance.now()
    // As a task, polled: a merge of 1M vectors outlasts any one request's timeout.
    const { task } = await client.indices.forcemerge({ index, max_num_segments: 1, wait_for_completion: false })
    while (!(await client.tasks.get({ task_id: String(task) })).completed) await sleep(10_000)
    mergeSeconds = (performance.now() - t) / 1000
    await client.indices.refresh({ index })
    say(`\nforce merge to one segment per shard: ${mergeSeconds.toFixed(1)} s`)
    measured.push(await measure('force-merged'))
  }

  // A node killed -9 under load, BM25 and kNN (the server's num_candidates, 100) in turn, two
  // queries in flight: first one that is not the elected master (its primaries' replicas are
  // promoted), then the master (the other data node and the voting-only third elect a new one).
  const served = denseAt.get(100) ?? denseAt.values().next().value!
  const lossMs = Number(values['loss-seconds']) * 1000
  const losses = []
  for (const kill of ['other', 'master'] as const) {
    const loss = await runNodeLoss({ port: PORT, client, index, retrievers: [bm25Es, served], questions, k: K, concurrency: 2, kill, beforeMs: 10_000, lossMs, afterMs: 10_000, log: (line) => say(line.trim()) })
    const compared = await compareWithStore(client, index, storeDir, Number(values.sample), vectorField(MODEL))
    const phase = (name: string, c: typeof loss.before) => `${name}: ${c.answered} answered, ${c.errors} errors${c.errors > 0 ? ` (${Object.entries(c.codes).map(([k, v]) => `${k} ×${v}`).join(', ')})` : ''}`
    say(`\nnode ${loss.killedNode}${loss.killedMaster ? ' (the elected master)' : ' (not the elected master)'} killed -9 under load (BM25 and kNN in turn, 2 in flight):`)
    say(`  ${phase('before', loss.before)}`)
    say(`  ${phase(`while down (${loss.lossSeconds.toFixed(1)} s, restart included)`, loss.duringLoss)}`)
    say(`  ${phase('after its return', loss.afterReturn)}`)
    for (const e of loss.duringLoss.firstErrors) say(`    ${e}`)
    say(`  passages counted while it was down: ${loss.countDuringLoss.toLocaleString('en-US')}; back to green ${loss.recoverySeconds.toFixed(1)} s after its restart`)
    say(`  after: index ${compared.indexPassages.toLocaleString('en-US')} passages (${compared.indexVectors?.toLocaleString('en-US')} with vectors), store ${compared.storePassages.toLocaleString('en-US')}; ` +
      `${compared.matching} of ${compared.sampled} sampled passages identical`)
    losses.push({ ...loss, compared })
  }
  say(`indexing: BM25 ${built.seconds.toFixed(1)} s + vectors ${encoded.seconds.toFixed(1)} s${mergeSeconds !== undefined ? ` + force merge ${mergeSeconds.toFixed(1)} s` : ''} (this run's share; a resumed run counts only what it did)`)

  const out = join(PROJECT_ROOT, 'bench', 'out')
  mkdirSync(out, { recursive: true })
  writeFileSync(join(out, `es-scale-${passages}.json`), `${JSON.stringify({
    date: new Date().toISOString(), passages, synthetic: true, nodes: 2, heap: '1g', shards: built.shards, replicas: built.replicas,
    indexing: { bm25Seconds: built.seconds, vectorSeconds: encoded.seconds, mergeSeconds }, measured, losses,
  }, null, 2)}\n`)
} finally {
  for (const r of opened) await r.close()
  await client.close()
  if (!values.keep) say(await es('down'))
  await release()
}

/** The exact float32 top K over the store's vectors for each query, as passage ids. */
function exactTopK(dir: string, queries: readonly Float32Array[]): string[][] {
  const s = PassageStore.openReadOnly(dir)
  try {
    const loaded = loadVectors(s, MODEL)
    if (!loaded) throw new Error(`${dir} lacks its ${MODEL} vectors`)
    const { dim } = loaded
    // Row 0 is unused in the store layout; usearch ignores a subarray's offset, hence a copy.
    const rows = loaded.vectors.slice(dim)
    const batch = new Float32Array(queries.length * dim)
    queries.forEach((v, i) => batch.set(v, i * dim))
    const found = usearch.exactSearch(rows, batch, dim, K, usearch.MetricKind.IP, 2) as { keys: BigUint64Array }
    const idOf = s.db.prepare('SELECT id FROM passages WHERE rowid = ?').pluck()
    return queries.map((_, q) => [...found.keys.subarray(q * K, (q + 1) * K)].map((key) => idOf.get(Number(key) + 1) as string))
  } finally {
    s.close()
  }
}
