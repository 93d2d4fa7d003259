// The GraphQL server as a fastify plugin: mercurius over schema.graphql, limits, metrics.
import { readFileSync } from 'node:fs'
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import { resolve } from 'node:path'
import type { FastifyInstance } from 'fastify'
import mercurius from 'mercurius'
import client from 'prom-client'
import type { GraphQLResolveInfo } from 'graphql'
import { AmbigqaError, ERR_HOST_NOT_ALLOWED, ERR_TIMEOUT } from '../../core/errors.js'
import type { Pipeline } from '../pipeline/pipeline.js'
import { asStoreError } from '../../retriever/passage-store.js'
import type { PassageSource } from '../../retriever/passage-source.js'
import { askPage } from './ask-page.js'
import { graphiqlPage } from './graphiql.js'
import { standardProbes, type DependencyProbe } from './health.js'
import { allowedHostnames, hostnameOf } from './host-check.js'
import type { JobAccess } from './job-access.js'
import { Jobs, type CoTrainingRunner } from './jobs.js'
import { Limiter, type Refusal } from './limiter.js'
import { disambiguates } from './selection.js'
import { defaultLimits, type ServerLimits } from './limits.js'
import { queryCostRule } from './query-cost.js'
import { queryDepthRule } from './query-depth.js'
import * as fields from './resolvers.js'
import type { Call, ResolverContext } from './resolvers.js'
import { silentLogger, type Logger } from '../../core/log.js'

export type { CoTrainingRunner }

export interface ServerOptions {
  pipeline: Pipeline
  /** Where passage(id) and health read: the store or index the retriever searches. */
  passages: PassageSource
  limits?: Partial<ServerLimits>
  /**
   * Jobs: off unless enabled (then a token and data roots); `indexStore` is where startIndexing
   * builds; `coTraining` runs a co-training config file (the CLI binds it to the server's config).
   */
  jobs?: JobAccess & { indexStore?: string; coTraining?: CoTrainingRunner }
  /** The address the server listens on, and more host names it answers for (the Host header check). */
  host?: string
  allowedHosts?: readonly string[]
  /** What health reports (default: the passages and the reader). */
  dependencies?: DependencyProbe[]
  log?: Logger
}

function toGraphqlError(error: unknown, storeDir: string): unknown {
  error = asStoreError(error, storeDir)
  if (error instanceof AmbigqaError) {
    return new mercurius.ErrorWithProps(error.message, { code: error.code }, error.statusCode)
  }
  return error
}

/**
 * Runs `work` with a deadline counted from the request's arrival (queueing included). At the
 * deadline, or when the client goes away, the work's signal aborts, so the reader drops it instead
 * of computing answers nobody will read while the requests behind it wait. At the deadline the
 * work is told first (the signal's reason is AMBIGQA_ERR_TIMEOUT), and what it answers with in
 * the same turn of the event loop is the reply: question disambiguation answers at once with the
 * rewrites written so far (reader/question-disambiguation.ts). Work still running a turn later is
 * the timeout (504).
 */
async function withDeadline<T>(ms: number, response: ServerResponse | undefined, work: (signal: AbortSignal, deadline: number) => Promise<T>): Promise<T> {
  const deadline = performance.now() + ms
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = ERR_TIMEOUT(ms)
      controller.abort(error)
      // After the microtasks the abort started: a stage that answers with less settles them.
      setImmediate(() => reject(error))
    }, ms)
  })
  const gone = () => { if (!response?.writableFinished) controller.abort(new Error('the client closed the connection')) }
  response?.once('close', gone)
  try {
    return await Promise.race([work(controller.signal, deadline), timeout])
  } finally {
    clearTimeout(timer)
    response?.off('close', gone)
  }
}

export async function ambigqaServer(app: FastifyInstance, options: ServerOptions): Promise<void> {
  const limits = { ...defaultLimits, ...options.limits }
  const limiter = new Limiter(limits.concurrency, limits.queue)
  const log = options.log ?? silentLogger
  const jobs = new Jobs(log)
  const probes = options.dependencies ?? standardProbes(options.passages, options.pipeline)
  const hosts = allowedHostnames(options.host, options.allowedHosts ?? [])
  app.addHook('onClose', async () => { await jobs.drain() })
  app.addHook('onRequest', async (request, reply) => {
    const host = request.headers.host
    if (host === undefined || !hosts.has(hostnameOf(host))) {
      const error = ERR_HOST_NOT_ALLOWED(host ?? '')
      // Both shapes: plain for /health and /metrics, GraphQL's for /graphql clients.
      return reply.code(error.statusCode).send({ code: error.code, message: error.message, errors: [{ message: error.message, extensions: { code: error.code } }] })
    }
  })
  const registry = new client.Registry()
  const requests = new client.Counter({ name: 'ambigqa_graphql_requests_total', help: 'GraphQL field calls', labelNames: ['field', 'outcome'], registers: [registry] })
  const latency = new client.Histogram({ name: 'ambigqa_graphql_seconds', help: 'GraphQL field latency', labelNames: ['field'], registers: [registry], buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5] })
  new client.Gauge({ name: 'ambigqa_in_flight', help: 'requests running or queued', registers: [registry], collect() { this.set(limiter.inFlight) } })
  new client.Gauge({
    name: 'ambigqa_limiter_service_seconds', help: 'what the limiter measured a request of each kind to cost: its share of the server\'s time (mean, mean deviation)', labelNames: ['kind', 'stat'], registers: [registry],
    collect() { for (const [kind, s] of limiter.measured()) { this.set({ kind, stat: 'mean' }, s.mean / 1000); this.set({ kind, stat: 'deviation' }, s.deviation / 1000) } },
  })
  client.collectDefaultMetrics({ register: registry })

  const ctx: ResolverContext = {
    pipeline: options.pipeline, passages: options.passages, limits, jobs, probes,
    access: options.jobs ?? { enabled: false, authToken: '', dataRoots: [] },
    indexStore: options.jobs?.indexStore ?? `${options.passages.name}-indexing`,
    ...(options.jobs?.coTraining ? { coTraining: options.jobs.coTraining } : {}),
  }
  // Every field goes through one place: limits, timeout, metrics, errors with codes. `limit`: how the
  // limiter counts the field's calls: not at all, as the field, or with the calls that run question
  // disambiguation apart (it makes them cost several times the others, and one estimate for a mix
  // of both would refuse the cheap ones and admit too many dear ones). Whether a call runs it is
  // decided here once and handed to both the limiter and the resolver.
  const guarded = <A, R>(field: string, limit: 'none' | 'field' | 'rewrites apart', body: (ctx: ResolverContext, args: A, call: Call) => Promise<R> | R) =>
    async (_root: unknown, args: A, context?: { reply?: { raw?: ServerResponse; request?: { headers: IncomingHttpHeaders }; header?: (name: string, value: string) => unknown } }, info?: GraphQLResolveInfo): Promise<R> => {
      const end = latency.startTimer({ field })
      try {
        const disambiguate = disambiguates(info)
        const result = await withDeadline(limits.timeoutMs, context?.reply?.raw, async (signal, deadline) => {
          const work = async () => {
            signal.throwIfAborted()
            return body(ctx, args, { signal, headers: context?.reply?.request?.headers ?? {}, disambiguate })
          }
          if (limit === 'none') return work()
          return limiter.run(limit === 'rewrites apart' && disambiguate ? `${field} with rewrites` : field, deadline, signal, work)
        })
        requests.inc({ field, outcome: 'ok' })
        if (!Array.isArray(result)) return result
        // The items of a list that failed on their own (askMany's questions), coded as a field's error is.
        return result.map((item: unknown) => {
          if (!(item instanceof Error)) return item
          const coded = asStoreError(item, options.passages.name)
          requests.inc({ field, outcome: coded instanceof AmbigqaError ? coded.code : 'error' })
          return toGraphqlError(coded, options.passages.name)
        }) as R
      } catch (error) {
        const coded = asStoreError(error, options.passages.name)
        requests.inc({ field, outcome: coded instanceof AmbigqaError ? coded.code : 'error' })
        // A refusal at the door says when the limiter expects room (HTTP 503 with Retry-After).
        const retryAfter = (coded as Partial<Refusal>).retryAfterSeconds
        if (retryAfter !== undefined) context?.reply?.header?.('retry-after', String(retryAfter))
        throw toGraphqlError(coded, options.passages.name)
      } finally {
        end()
      }
    }

  const resolvers = {
    Query: {
      search: guarded('search', 'field', fields.search),
      passage: guarded('passage', 'none', fields.passage),
      health: guarded('health', 'none', fields.health),
      ask: guarded('ask', 'rewrites apart', fields.ask),
      askMany: guarded('askMany', 'rewrites apart', fields.askMany),
      job: guarded('job', 'none', fields.job),
    },
    Mutation: {
      startIndexing: guarded('startIndexing', 'field', fields.startIndexing),
      startCoTraining: guarded('startCoTraining', 'field', fields.startCoTraining),
      startEvaluation: guarded('startEvaluation', 'field', fields.startEvaluation),
    },
    AnswerSet: { found: fields.found },
    Answer: { rewriteStopped: fields.rewriteStopped },
    Subscription: {
      jobProgress: { subscribe: (_root: unknown, args: { id: string }) => fields.jobProgress(ctx, args), resolve: (job: unknown) => job },
    },
  }

  await app.register(mercurius, {
    schema: readFileSync(resolve(import.meta.dirname, '../../../schema.graphql'), 'utf8'),
    resolvers: resolvers as never,
    // Our own page (graphiql.ts): mercurius's loads React and GraphiQL from a CDN.
    graphiql: false,
    subscription: true,
    // Our depth rule (query-depth.ts) instead of mercurius's queryDepth, which refuses introspection.
    validationRules: [queryDepthRule(limits.maxDepth), queryCostRule(limits.maxCost)],
  })

  await app.register(graphiqlPage)
  // The page for people (assets/page), which asks /graphql like any client.
  await app.register(askPage)
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', registry.contentType)
    return registry.metrics()
  })
  // For a load balancer: live while the process answers; ready when every required dependency is up.
  app.get('/health/live', async () => ({ live: true }))
  app.get('/health/ready', async (_request, reply) => {
    const report = await fields.health(ctx)
    reply.code(report.ok ? 200 : 503)
    return report
  })
}
