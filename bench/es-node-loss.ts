// One node of an Elasticsearch cluster killed -9 under a query load, then brought back: how many
// queries were answered before, during and after the loss, and whether the index still holds
// every passage of the store it was built from. Shared by test/elasticsearch-cluster.test.ts (a
// small real corpus) and bench/es-scale.ts (1M SYNTHETIC passages), so both run the README's
// scale-out recipe (scripts/elasticsearch up --nodes 2, kill-node, start-node) the same way.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Client } from '@elastic/elasticsearch'
import { AmbigqaError } from '../core/errors.js'
import { PROJECT_ROOT } from '../core/paths.js'
import type { Retriever } from '../core/retriever.js'
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
  /** Error codes (AMBIGQA_ERR_*, else the error's name) and how often each was seen. */
  codes: Record<string, number>
  /** The first few errors, each with the second of the run it came at. */
  firstErrors: string[]
  /** Seconds of the run at the first and the last error. */
  errorSpan?: [number, number]
}

export interface NodeLossReport {
  killedNode: number
  /** Whether the killed node was the elected master (with two master-eligible nodes, only one votes). */
  killedMaster: boolean
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
}

export interface NodeLossOptions {
  port: number
  client: Client
  index: string
  /** Searched in turn, by `concurrency` loops at once. */
  retrievers: readonly Retriever[]
  questions: readonly string[]
  k: number
  concurrency: number
  /** Which node: its number, the elected master, or another one. With two master-eligible nodes
   * only the master votes: losing it leaves no master (searches go on, writes wait), losing the
   * other promotes the replicas of its primaries. */
  kill: number | 'master' | 'other'
  /** Load before the kill, while the node is down, and after the index is green again. */
  beforeMs: number
  lossMs: number
  afterMs: number
  log?: (line: string) => void
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))
const counts = (): LoadCounts => ({ answered: 0, errors: 0, codes: {}, firstErrors: [] })

export async function runNodeLoss(o: NodeLossOptions): Promise<NodeLossReport> {
  const es = esScript(o.port)
  const log = o.log ?? (() => undefined)
  const phases = { before: counts(), duringLoss: counts(), afterReturn: counts() }
  let phase: keyof typeof phases = 'before'
  let stopped = false
  let next = 0
  const started = performance.now()
  const loop = async () => {
    while (!stopped) {
      const n = next++
      const current = phase
      try {
        await o.retrievers[n % o.retrievers.length]!.search(o.questions[n % o.questions.length]!, o.k)
        phases[current].answered++
      } catch (err) {
        const code = err instanceof AmbigqaError ? err.code : err instanceof Error ? err.name : 'unknown'
        phases[current].errors++
        phases[current].codes[code] = (phases[current].codes[code] ?? 0) + 1
        const at = Math.round(performance.now() - started) / 1000
        if (phases[current].firstErrors.length < 5) phases[current].firstErrors.push(`${at.toFixed(1)} s: ${err instanceof Error ? err.message : String(err)}`)
        phases[current].errorSpan = [phases[current].errorSpan?.[0] ?? at, at]
        // A failed request returns at once (a refused connection): do not spin on it.
        await sleep(50)
      }
    }
  }
  const master = (await o.client.cat.master({ format: 'json' })) as unknown as { node: string }[]
  // scripts/elasticsearch names node I of the cluster on port P ambigqa-P-node-I.
  const masterNode = Number(new RegExp(`^ambigqa-${o.port}-node-(\\d+)$`).exec(master[0]?.node ?? '')?.[1])
  if (!Number.isInteger(masterNode)) throw new Error(`no elected master named ambigqa-${o.port}-node-I (got ${JSON.stringify(master)}): is this a cluster of scripts/elasticsearch up --nodes N?`)
  const killNode = o.kill === 'master' ? masterNode : o.kill === 'other' ? (masterNode === 1 ? 2 : 1) : o.kill
  const killedMaster = killNode === masterNode
  const loops = Array.from({ length: o.concurrency }, loop)
  try {
    await sleep(o.beforeMs)
    phase = 'duringLoss'
    const killedAt = performance.now()
    log(await es('kill-node', String(killNode)))
    await sleep(o.lossMs)
    // Every shard has a copy on the surviving node: the index still counts every passage.
    const countDuringLoss = (await o.client.count({ index: o.index })).count
    const restartedAt = performance.now()
    log(await es('start-node', String(killNode)))
    const lossSeconds = (performance.now() - killedAt) / 1000
    phase = 'afterReturn'
    // Short waits, asked again: the client's own request timeout may be shorter than a recovery.
    for (let waited = 0; (await o.client.cluster.health({ index: o.index, wait_for_status: 'green', timeout: '20s' })).status !== 'green'; waited += 20) {
      if (waited >= 1200) throw new Error(`index ${o.index} not green 20 minutes after node ${killNode} came back`)
    }
    const recoverySeconds = (performance.now() - restartedAt) / 1000
    await sleep(o.afterMs)
    return { killedNode: killNode, killedMaster, ...phases, countDuringLoss, lossSeconds, recoverySeconds }
  } finally {
    stopped = true
    await Promise.all(loops)
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
