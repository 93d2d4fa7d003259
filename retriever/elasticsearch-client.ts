// The Elasticsearch client as this project uses it: a short timeout so a down cluster fails fast
// with one clear error, and the next request works once it is back; reads (esRead) retried on
// another node, or once the cluster has settled, within their deadline, so a lost node of a
// cluster with a replica of every shard costs no query.
import { Client, ClusterConnectionPool, errors } from '@elastic/elasticsearch'
import type { TransportRequestOptions } from '@elastic/elasticsearch'
import { AmbigqaError, ERR_ELASTICSEARCH_INDEX, ERR_ELASTICSEARCH_UNAVAILABLE } from '../core/errors.js'

export interface EsOptions {
  /** One node's URL, or the URLs of several nodes of one cluster separated by commas. */
  url: string
  index: string
  requestTimeoutMs?: number
  maxRetries?: number
  /** false: a read is tried once (bench/es-node-loss's peer: the retrievers as they were). */
  retryReads?: boolean
}

/** The node URLs of `url` (one, or several separated by commas). */
export function esNodes(url: string): string[] {
  return url.split(',').map((u) => u.trim()).filter(Boolean)
}

/** What one read (esRead) carries through its attempts, as the request's context. */
interface ReadState {
  /** Nodes (connection ids) that refused, dropped or could not serve an attempt of this read. */
  avoid: Set<string>
  /** The node the latest attempt was sent to. */
  last?: string
}
const READ_STATE = 'ambigqaRead'
type PoolOptions = Parameters<ClusterConnectionPool['getConnection']>[0]

/**
 * The pool of a client of several nodes: ClusterConnectionPool (a node that failed is set aside),
 * with two changes for reads retried on another node. An attempt of a read goes to a node that
 * has not failed that read, while one remains, even when the pool has set every node aside (it
 * would otherwise pick among all, the node that just failed included: a read lost that way at a
 * master's loss, measured). And a node set aside is pinged again after 5 s, every 5 s, not after 1,
 * 2, 4... up to 32 minutes: one that came back is used again at once, so the next node lost
 * leaves the pool with a live one.
 */
class ReadRetryPool extends ClusterConnectionPool {
  constructor(...args: ConstructorParameters<typeof ClusterConnectionPool>) {
    super(...args)
    this.resurrectTimeout = 5_000
    this.resurrectTimeoutCutoff = 0
  }

  override getConnection(opts: PoolOptions) {
    const state = (opts.context as Record<string, ReadState> | null | undefined)?.[READ_STATE]
    if (!state) return super.getConnection(opts)
    const filter = opts.filter
    const chosen = (state.avoid.size > 0 ? super.getConnection({ ...opts, filter: (c) => !state.avoid.has(c.id) && (filter ? filter(c) : true) }) : null) ?? super.getConnection(opts)
    state.last = chosen?.id
    return chosen
  }
}

export function createEsClient(options: EsOptions): Client {
  const nodes = esNodes(options.url)
  return new Client({
    nodes,
    // Several nodes: one that fails to answer is set aside and pinged back every 5 s (ReadRetryPool),
    // so only the requests in flight when it died fail. The client's default pool only lowers a failed
    // node's weight and keeps sending it real queries, each of which fails (16 in 24 s of one
    // node's loss, measured under the test's load). One node keeps the default: it is used dead
    // or alive, so the next request works as soon as it is back.
    ...(nodes.length > 1 ? { ConnectionPool: ReadRetryPool } : {}),
    requestTimeout: options.requestTimeoutMs ?? 30_000,
    maxRetries: options.maxRetries ?? 1,
    sniffOnStart: false,
  })
}

/** Failures of a search's shards that say a node or shard copy is missing, not that the request or index is wrong. */
const SHARDS_UNAVAILABLE = new Set([
  'no_shard_available_action_exception', 'node_not_connected_exception', 'node_disconnected_exception', 'connect_transport_exception',
  'master_not_discovered_exception', 'node_closed_exception',
])

/** Turns a client failure into one AmbigqaError naming the URL, the cause and the fix. */
export function esError(err: unknown, options: EsOptions): AmbigqaError {
  if (err instanceof AmbigqaError) return err
  if (err instanceof errors.ConnectionError || err instanceof errors.TimeoutError || err instanceof errors.NoLivingConnectionsError) {
    return ERR_ELASTICSEARCH_UNAVAILABLE.withCause(err, options.url, err.message)
  }
  if (err instanceof errors.ResponseError) {
    const type = (err.body as { error?: { type?: string; reason?: string; root_cause?: { type?: string; reason?: string | null }[] } } | undefined)?.error
    const causes = type?.root_cause?.map((c) => c.type ?? '') ?? []
    // The cluster is there but cannot serve the index now (a node gone, a master being elected,
    // shards recovering): unavailable, as a down cluster is, and the next request may work.
    if (err.statusCode === 503 || (causes.length > 0 && causes.every((c) => SHARDS_UNAVAILABLE.has(c)))) {
      // A HEAD request's answer (indices.exists) has no body to give a reason.
      const why = type?.root_cause?.map((c) => `${c.type}${c.reason ? `: ${c.reason}` : ''}`).join('; ') || type?.reason || err.message || 'no reason given'
      return ERR_ELASTICSEARCH_UNAVAILABLE.withCause(err, options.url, `it cannot serve index '${options.index}' now, HTTP ${err.statusCode}: ${why}`)
    }
    if (err.statusCode === 404 && type?.type === 'index_not_found_exception') {
      return ERR_ELASTICSEARCH_INDEX.withCause(err, options.url, options.index, 'does not exist', 'Build it with ambigqa index build --backend elasticsearch --es-url ' + options.url)
    }
    return ERR_ELASTICSEARCH_INDEX.withCause(err, options.url, options.index, `request failed with HTTP ${err.statusCode}: ${type?.reason ?? err.message}`, 'Check that the cluster is Elasticsearch 8.x with the english analyzer plugin (scripts/elasticsearch up installs it)')
  }
  return ERR_ELASTICSEARCH_UNAVAILABLE.withCause(err, options.url, err instanceof Error ? err.message : String(err))
}

/** Less than this left before a read's deadline, its error stands: no attempt could finish. */
const MIN_ATTEMPT_MS = 100
/** The first wait before asking a cluster again that said it cannot serve now; doubled each time. */
const FIRST_WAIT_MS = 50
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

/**
 * A read (search, count, get: asking again changes nothing) within `requestTimeoutMs` of its start,
 * each attempt given what is left of it. A node that refused or dropped the connection (killed, or
 * gone with its machine) is set aside by the pool, and the read goes at once to another one, each
 * node tried once: a cluster down everywhere still fails at once. An answer that says the cluster
 * cannot serve the index now (a node just lost, replicas being promoted, a master being elected, a
 * node rejoining: a matter of seconds) is asked again after 50, 100, 200 ms..., of another node
 * while one has not said so. Writes never come here: a bulk batch refused stays refused, with its
 * coded error, and is sent again whole by the build that resumes.
 */
export async function esRead<T>(options: EsOptions, read: (attempt: TransportRequestOptions) => Promise<T>): Promise<T> {
  if (options.retryReads === false) {
    try {
      return await read({})
    } catch (err) {
      throw esError(err, options)
    }
  }
  const nodes = esNodes(options.url).length
  const deadline = performance.now() + (options.requestTimeoutMs ?? 30_000)
  // The nodes that failed this read, for the pool (ReadRetryPool) to send the next attempt elsewhere.
  const state: ReadState = { avoid: new Set() }
  let refused = 0
  let waited = 0
  for (;;) {
    try {
      return await read({ requestTimeout: Math.max(MIN_ATTEMPT_MS, Math.round(deadline - performance.now())), context: { [READ_STATE]: state } })
    } catch (err) {
      const coded = esError(err, options)
      let wait: number | undefined
      if (err instanceof errors.ConnectionError) wait = ++refused < nodes ? 0 : undefined
      else if (err instanceof errors.ResponseError && coded.code === ERR_ELASTICSEARCH_UNAVAILABLE.code) wait = FIRST_WAIT_MS * 2 ** waited++
      if (wait !== undefined && state.last !== undefined) state.avoid.add(state.last)
      if (wait === undefined || performance.now() + wait > deadline - MIN_ATTEMPT_MS) throw coded
      if (wait > 0) await sleep(wait)
    }
  }
}
