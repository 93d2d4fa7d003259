// One node of an Elasticsearch cluster killed -9 under a query load, then brought back: how many
// queries were answered before, during and after the loss (and their p50/p99), and whether the
// index still holds every passage of the store it was built from. Shared by
// test/elasticsearch-cluster.test.ts (a small real corpus) and bench/es-scale.ts (1M SYNTHETIC
// passages), so both run the README's scale-out recipe (scripts/elasticsearch up --nodes 2,
// kill-node, start-node) the same way. Run as a program it is a benchmark of its own, on the real
// demo passages: the retrievers as served (reads retried on the other node within their timeout)
// beside the same retrievers trying each read once, under one load and one kill, first of a node
// that is not the master, then of the master, with a write attempted while each is down. The
// cluster is scripts/elasticsearch's two data nodes and their voting-only tiebreaker (node 3):
// with the master lost, the two left elect the surviving data node.
//   npx tsc -p . && node dist/bench/es-node-loss.js [--passages 5531] [--port 9280] [--loss-seconds 20] [--keep]
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { gunzipSync } from 'node:zlib'
import type { Client } from '@elastic/elasticsearch'
import { AmbigqaError } from '../core/errors.js'
import { silentLogger } from '../core/log.js'
import { DEFAULT_ENCODERS_DIR, PROJECT_ROOT } from '../core/paths.js'
import type { Retriever } from '../core/retriever.js'
import { buildElasticsearchIndex } from '../index/elasticsearch/build-elasticsearch.js'
import { buildIndex } from '../index/build-index.js'
import { encodeElasticsearch } from '../index/dense/encode-elasticsearch.js'
import { encodeStore } from '../index/dense/store-vectors.js'
import { Bm25EsRetriever } from '../retriever/bm25-es-retriever.js'
import { DenseEncoder } from '../retriever/dense-encoder.js'
import { DenseEsRetriever, vectorField } from '../retriever/dense-es-retriever.js'
import { createEsClient } from '../retriever/elasticsearch-client.js'
import { PassageStore } from '../retriever/passage-store.js'

const run = promisify(execFile)
export const ES_SCRIPT = join(PROJECT_ROOT, 'scripts', 'elasticsearch')

/** scripts/elasticsearch for the cluster whose first node listens on `port` (ES_PORT). Async, so a
 * query load in the same process keeps running while a node is killed or started. */
export function esScript(port: number): (...args: string[]) => Promise<string> {
  return async (...args) => {
    const { stderr } = await run(ES_SCRIPT, args, { env: { ...process.env, ES_PORT: String(port) }, timeout: 600_000 })
    return stderr
  }
}

/** The URLs of the nodes of a cluster started by scripts/elasticsearch up --nodes N, as
 * elasticsearch.url takes them (comma-separated): the client then survives any one node's loss. */
export function clusterUrl(port: number, nodes: number): string {
  return Array.from({ length: nodes }, (_, i) => `http://127.0.0.1:${port + i}`).join(',')
}

export interface LoadCounts {
  answered: number
  errors: number
  /** Latency of the answered queries, ms (NaN when none was answered). */
  p50Ms: number
  p99Ms: number
  /** Error codes (AMBIGQA_ERR_*, else the error's name) and how often each was seen. */
  codes: Record<string, number>
  /** The first few errors, each with the second of the run it came at. */
  firstErrors: string[]
  /** Seconds of the run at the first and the last error. */
  errorSpan?: [number, number]
  /** The same, for each retriever by its label. */
  byRetriever: Record<string, { answered: number; errors: number; p50Ms: number; p99Ms: number }>
}

export interface NodeLossReport {
  killedNode: number
  /** Whether the killed node was the elected master. */
  killedMaster: boolean
  /** With the master killed: the node the others elected, and the seconds from the kill until a
   * surviving node named it (absent when none was elected before the killed node restarted). */
  reelection?: { node: number; seconds: number }
  before: LoadCounts
  /** From the kill until the node has rejoined. */
  duringLoss: LoadCounts
  /** From its return until the end of the load. */
  afterReturn: LoadCounts
  /** Passages the index counted while the node was down. */
  countDuringLoss: number
  lossSeconds: number
  /** From the node's restart until the index is green again (every replica recovered). */
  recoverySeconds: number
  /** What `duringLoss` returned. */
  duringLossResult?: unknown
}

export interface NodeLossOptions {
  port: number
  client: Client
  index: string
  /** Searched in turn, by `concurrency` loops at once. */
  retrievers: readonly Retriever[]
  /** Each retriever's name in the counts (default: its name). */
  labels?: readonly string[]
  questions: readonly string[]
  k: number
  concurrency: number
  /** Which node: its number, the elected master, or a data node that is not the master. With
   * three master-eligible nodes (two data nodes and scripts/elasticsearch's voting-only one),
   * losing the master leaves two votes of three, which elect another; losing another data node,
   * the master promotes the replicas of its primaries. */
  kill: number | 'master' | 'other'
  /** Load before the kill, while the node is down, and after the index is green again. */
  beforeMs: number
  lossMs: number
  afterMs: number
  /** Run once the node is killed (a write, say), awaited before it is started again. */
  duringLoss?: () => Promise<unknown>
  log?: (line: string) => void
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))
const counts = (): LoadCounts => ({ answered: 0, errors: 0, p50Ms: NaN, p99Ms: NaN, codes: {}, firstErrors: [], byRetriever: {} })

/** The p-th percentile (nearest rank), NaN of nothing. */
export function percentileOf(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

export async function runNodeLoss(o: NodeLossOptions): Promise<NodeLossReport> {
  const es = esScript(o.port)
  const log = o.log ?? (() => undefined)
  const phases = { before: counts(), duringLoss: counts(), afterReturn: counts() }
  const latencies = new Map<string, number[]>()
  const latencyOf = (key: string) => latencies.get(key) ?? latencies.set(key, []).get(key)!
  let phase: keyof typeof phases = 'before'
  let stopped = false
  let next = 0
  const started = performance.now()
  const loop = async () => {
    while (!stopped) {
      const n = next++
      const current = phase
      const r = n % o.retrievers.length
      const label = o.labels?.[r] ?? o.retrievers[r]!.name
      const mine = (phases[current].byRetriever[label] ??= { answered: 0, errors: 0, p50Ms: NaN, p99Ms: NaN })
      const t = performance.now()
      try {
        await o.retrievers[r]!.search(o.questions[n % o.questions.length]!, o.k)
        const ms = performance.now() - t
        phases[current].answered++
        mine.answered++
        latencyOf(current).push(ms)
        latencyOf(`${current}\u0000${label}`).push(ms)
      } catch (err) {
        const code = err instanceof AmbigqaError ? err.code : err instanceof Error ? err.name : 'unknown'
        phases[current].errors++
        mine.errors++
        phases[current].codes[code] = (phases[current].codes[code] ?? 0) + 1
        const at = Math.round(performance.now() - started) / 1000
        if (phases[current].firstErrors.length < 5) phases[current].firstErrors.push(`${at.toFixed(1)} s: ${err instanceof Error ? err.message : String(err)}`)
        phases[current].errorSpan = [phases[current].errorSpan?.[0] ?? at, at]
        // A failed request returns at once (a refused connection): do not spin on it.
        await sleep(50)
      }
    }
  }
  // scripts/elasticsearch names node I of the cluster on port P ambigqa-P-node-I.
  const nodeNumber = (name: string | undefined) => Number(new RegExp(`^ambigqa-${o.port}-node-(\\d+)$`).exec(name ?? '')?.[1])
  const master = (await o.client.cat.master({ format: 'json' })) as unknown as { node: string }[]
  const masterNode = nodeNumber(master[0]?.node)
  if (!Number.isInteger(masterNode)) throw new Error(`no elected master named ambigqa-${o.port}-node-I (got ${JSON.stringify(master)}): is this a cluster of scripts/elasticsearch up --nodes N?`)
  const killNode = o.kill === 'master' ? masterNode : o.kill === 'other' ? (masterNode === 1 ? 2 : 1) : o.kill
  const killedMaster = killNode === masterNode
  const loops = Array.from({ length: o.concurrency }, loop)
  let reelection: NodeLossReport['reelection']
  let watching = killedMaster
  let killedAt = NaN
  // Each surviving node's own view (local), asked every 100 ms, until one names another master.
  const watch = async () => {
    while (watching) {
      try {
        const [seen] = (await o.client.cat.master({ format: 'json', local: true }, { requestTimeout: 1000, maxRetries: 0 })) as unknown as { node: string }[]
        const node = nodeNumber(seen?.node)
        if (Number.isInteger(node) && node !== killNode) {
          reelection = { node, seconds: (performance.now() - killedAt) / 1000 }
          return
        }
      } catch {
        // No master yet, or the request went to the dead node (the pool sets it aside).
      }
      await sleep(100)
    }
  }
  let watcher: Promise<void> = Promise.resolve()
  try {
    await sleep(o.beforeMs)
    phase = 'duringLoss'
    killedAt = performance.now()
    watcher = watch()
    log(await es('kill-node', String(killNode)))
    const [, duringLossResult] = await Promise.all([sleep(o.lossMs), o.duringLoss?.()])
    watching = false
    await watcher
    // Every shard has a copy on the surviving node: the index still counts every passage.
    const countDuringLoss = (await o.client.count({ index: o.index })).count
    const restartedAt = performance.now()
    log(await es('start-node', String(killNode)))
    const lossSeconds = (performance.now() - killedAt) / 1000
    phase = 'afterReturn'
    // Short waits, asked again: the client's own request timeout may be shorter than a recovery.
    // A wait that times out is HTTP 408 with the health as it stands, not an error.
    for (let waited = 0; (await o.client.cluster.health({ index: o.index, wait_for_status: 'green', timeout: '20s' }, { ignore: [408] })).status !== 'green'; waited += 20) {
      if (waited >= 1200) throw new Error(`index ${o.index} not green 20 minutes after node ${killNode} came back`)
    }
    const recoverySeconds = (performance.now() - restartedAt) / 1000
    await sleep(o.afterMs)
    stopped = true
    await Promise.all(loops)
    for (const [name, c] of Object.entries(phases)) {
      c.p50Ms = percentileOf(latencyOf(name), 50)
      c.p99Ms = percentileOf(latencyOf(name), 99)
      for (const [label, mine] of Object.entries(c.byRetriever)) {
        mine.p50Ms = percentileOf(latencyOf(`${name}\u0000${label}`), 50)
        mine.p99Ms = percentileOf(latencyOf(`${name}\u0000${label}`), 99)
      }
    }
    return { killedNode: killNode, killedMaster, ...(reelection ? { reelection } : {}), ...phases, countDuringLoss, lossSeconds, recoverySeconds, ...(o.duringLoss ? { duringLossResult } : {}) }
  } finally {
    stopped = true
    watching = false
    await Promise.all([...loops, watcher])
  }
}

export interface StoreComparison {
  storePassages: number
  indexPassages: number
  /** Passages of the index with the vector field, when one was asked for. */
  indexVectors?: number
  sampled: number
  /** Sampled store passages found in the index under their id with the same title and text. */
  matching: number
}

/** The index against the store it was built from: the passage count, and `sample` passages spread
 * evenly over the store (first and last included) read back by id. */
export async function compareWithStore(client: Client, index: string, storeDir: string, sample: number, vectorField?: string): Promise<StoreComparison> {
  const store = PassageStore.openReadOnly(storeDir)
  try {
    const storePassages = store.count()
    const maxRowid = (store.db.prepare('SELECT max(rowid) AS n FROM passages').get() as { n: number }).n
    const byRowid = store.db.prepare('SELECT id, title, text FROM passages WHERE rowid >= ? ORDER BY rowid LIMIT 1')
    const wanted = new Map<string, { title: string; text: string }>()
    for (let i = 0; i < sample; i++) {
      const row = byRowid.get(1 + Math.round((i * (maxRowid - 1)) / Math.max(1, sample - 1))) as { id: string; title: string; text: string } | undefined
      if (row) wanted.set(row.id, row)
    }
    await client.indices.refresh({ index })
    const indexPassages = (await client.count({ index })).count
    const indexVectors = vectorField ? (await client.count({ index, query: { exists: { field: vectorField } } })).count : undefined
    const got = await client.mget<{ id: string; title: string; text: string }>({ index, ids: [...wanted.keys()], _source: ['id', 'title', 'text'] })
    const matching = got.docs.filter((d) => {
      const want = wanted.get(d._id)
      const source = 'found' in d && d.found ? d._source : undefined
      return want !== undefined && source?.id === d._id && source.title === want.title && source.text === want.text
    }).length
    return { storePassages, indexPassages, ...(indexVectors !== undefined ? { indexVectors } : {}), sampled: wanted.size, matching }
  } finally {
    store.close()
  }
}

/** How a write attempted while a node was down ended. */
export interface WriteAttempt {
  applied: boolean
  /** The coded error of a refused write. */
  code?: string
  message?: string
  seconds: number
}

/** A small source built into the index as `ambigqa index build --backend elasticsearch` writes
 * (its timeout and retries), its ids prefixed: applied whole, or refused with a coded error. */
export async function attemptWrite(es: { url: string; index: string }, source: string, idPrefix: string): Promise<WriteAttempt> {
  const started = performance.now()
  const seconds = () => (performance.now() - started) / 1000
  try {
    await buildElasticsearchIndex({ es: { ...es, requestTimeoutMs: 30_000, maxRetries: 3 }, sources: [{ path: source, idPrefix }], onError: 'fail', batchSize: 2000, log: silentLogger })
    return { applied: true, seconds: seconds() }
  } catch (err) {
    return { applied: false, code: err instanceof AmbigqaError ? err.code : err instanceof Error ? err.name : String(err), message: err instanceof Error ? err.message.slice(0, 300) : String(err), seconds: seconds() }
  }
}

/** Real questions of the kind the demo corpus answers. */
export const NODE_LOSS_QUESTIONS = [
  'who played the doctor in dexter season 1',
  'when did the harry potter movie come out',
  "who sings don't stop believing",
  'when was the first super bowl played',
  'who wrote the declaration of independence',
  'how many episodes are in game of thrones season 8',
]

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main()

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      passages: { type: 'string', default: '5531' },
      port: { type: 'string', default: '9280' },
      'loss-seconds': { type: 'string', default: '20' },
      model: { type: 'string', default: 'e5-small-v2-int8' },
      keep: { type: 'boolean', default: false },
    },
  })
  const say = (line: string) => console.log(line)
  const passages = Number(values.passages)
  const port = Number(values.port)
  const model = values.model!
  const url = clusterUrl(port, 2)
  const index = `ambigqa-node-loss-${passages}`
  const dir = join(PROJECT_ROOT, 'bench', 'out', `es-node-loss-${passages}`)
  mkdirSync(dir, { recursive: true })
  // The first N real demo passages, and the last 50 for the writes (their ids prefixed).
  const lines = gunzipSync(readFileSync(join(PROJECT_ROOT, 'assets', 'demo', 'passages.tsv.gz'))).toString('utf8').trimEnd().split('\n')
  const tsv = join(dir, 'passages.tsv')
  const extra = join(dir, 'extra.tsv')
  if (!existsSync(tsv)) writeFileSync(tsv, `${lines.slice(0, passages + 1).join('\n')}\n`)
  if (!existsSync(extra)) writeFileSync(extra, `${[lines[0], ...lines.slice(-50)].join('\n')}\n`)
  const store = join(dir, 'store')
  await buildIndex({ store, sources: [{ path: tsv }], onError: 'fail', batchSize: 2000, segmentSize: 200_000, workers: 2, log: silentLogger })
  const encoded = await encodeStore({ store, model, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 32, threads: 2, log: silentLogger })
  if (encoded.encoded > 0) say(`store: ${encoded.encoded} passages encoded with ${model} in ${encoded.seconds.toFixed(1)} s`)

  const es = esScript(port)
  const client = createEsClient({ url, index, requestTimeoutMs: 120_000, maxRetries: 3 })
  const retrievers: Retriever[] = []
  try {
    say(await es('up', '--nodes', '2'))
    const esOptions = { url, index, requestTimeoutMs: 600_000, maxRetries: 3 }
    const built = await buildElasticsearchIndex({ es: esOptions, sources: [{ path: tsv }], onError: 'fail', batchSize: 2000, log: silentLogger })
    // The passages written while a node was down have no vectors: removed (by id: this
    // distribution has no delete-by-query), so every passage has its vector (a killed run's too).
    const removeWritten = async () => {
      await client.indices.refresh({ index })
      const ids = (await client.search({ index, size: 10_000, _source: false, query: { prefix: { id: 'loss-' } } })).hits.hits.map((h) => h._id!)
      if (ids.length > 0) await client.bulk({ refresh: true, operations: ids.map((id) => ({ delete: { _index: index, _id: id } })) })
    }
    await removeWritten()
    await encodeElasticsearch({ es: esOptions, model, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 1000, fromStore: store, log: silentLogger })
    await client.cluster.health({ index, wait_for_status: 'green', timeout: '120s' })
    // As a server opens them (5 s timeout, no transport retry), and the same trying each read once.
    const served = { url, index }
    const once = { url, index, retryReads: false }
    retrievers.push(
      new Bm25EsRetriever(served), new DenseEsRetriever(served, await DenseEncoder.shared(model, DEFAULT_ENCODERS_DIR, 1)),
      new Bm25EsRetriever(once), new DenseEsRetriever(once, await DenseEncoder.shared(model, DEFAULT_ENCODERS_DIR, 1)),
    )
    const labels = ['bm25-es, retried', 'dense-es, retried', 'bm25-es, tried once', 'dense-es, tried once']
    for (const r of retrievers) await r.search(NODE_LOSS_QUESTIONS[0]!, 10)
    const losses = []
    for (const kill of ['other', 'master'] as const) {
      const prefix = `loss-${kill}-${Date.now()}-`
      const loss = await runNodeLoss({
        port, client, index, retrievers, labels, questions: NODE_LOSS_QUESTIONS, k: 10, concurrency: 2, kill,
        beforeMs: 10_000, lossMs: Number(values['loss-seconds']) * 1000, afterMs: 10_000,
        duringLoss: () => attemptWrite({ url, index }, extra, prefix), log: (line) => say(line.trim()),
      })
      await client.indices.refresh({ index })
      const written = (await client.count({ index, query: { prefix: { id: prefix } } })).count
      const compared = await compareWithStore(client, index, store, 200, vectorField(model))
      const write = loss.duringLossResult as WriteAttempt
      say(`\nnode ${loss.killedNode}${loss.killedMaster ? ' (the elected master)' : ' (not the elected master)'} killed -9 for ${loss.lossSeconds.toFixed(1)} s (restart included), ` +
        `green ${loss.recoverySeconds.toFixed(1)} s after its restart; load average ${loadavg()[0]!.toFixed(1)}; 2 queries in flight over the four retrievers in turn`)
      say(`${'retriever'.padEnd(22)}${['before', 'while down', 'after its return'].map((h) => h.padStart(30)).join('')}`)
      say(`${''.padEnd(22)}${['answered/errors p50/p99 ms', 'answered/errors p50/p99 ms', 'answered/errors p50/p99 ms'].map((h) => h.padStart(30)).join('')}`)
      for (const label of labels) {
        const cell = (c: LoadCounts) => {
          const m = c.byRetriever[label]
          return (m ? `${m.answered}/${m.errors} ${m.p50Ms.toFixed(1)}/${m.p99Ms.toFixed(1)}` : '-').padStart(30)
        }
        say(`${label.padEnd(22)}${cell(loss.before)}${cell(loss.duringLoss)}${cell(loss.afterReturn)}`)
      }
      if (loss.killedMaster) say(loss.reelection ? `node ${loss.reelection.node} named the elected master ${loss.reelection.seconds.toFixed(1)} s after the kill` : 'no master elected while it was down')
      for (const e of loss.duringLoss.firstErrors) say(`  ${e}`)
      say(`write of 50 passages while down: ${write.applied ? 'applied' : `refused with ${write.code}`} after ${write.seconds.toFixed(1)} s; ${written} of them in the index after recovery`)
      say(`passages counted while down: ${loss.countDuringLoss}; after: index ${compared.indexPassages} (${compared.indexVectors} with vectors), store ${compared.storePassages}; ${compared.matching} of ${compared.sampled} sampled passages identical`)
      await removeWritten()
      losses.push({ ...loss, written, compared })
    }
    writeFileSync(join(PROJECT_ROOT, 'bench', 'out', `es-node-loss-${passages}.json`), `${JSON.stringify({ date: new Date().toISOString(), passages, shards: built.shards, replicas: built.replicas, labels, losses }, null, 2)}\n`)
  } finally {
    for (const r of retrievers) await r.close()
    await client.close()
    if (!values.keep) say(await es('down'))
  }
}
