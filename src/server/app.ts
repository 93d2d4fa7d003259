// The GraphQL server as a fastify plugin: mercurius over schema.graphql, limits, metrics.
import { readFileSync } from 'node:fs'
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import { resolve } from 'node:path'
import type { FastifyInstance } from 'fastify'
import mercurius from 'mercurius'
import client from 'prom-client'
import { defaults, type Config } from '../core/config.js'
import {
  AmbigqaError, ERR_BATCH_TOO_LARGE, ERR_HOST_NOT_ALLOWED, ERR_JOBS_DISABLED, ERR_QUERY_TOO_COSTLY, ERR_READER_UNAVAILABLE, ERR_TIMEOUT,
} from '../core/errors.js'
import { checkCount as checkCountIn, checkQuestion as checkQuestionText } from '../pipeline/ask-arguments.js'
import type { AskOptions, Pipeline, RetrieverKind } from '../pipeline/pipeline.js'
import { asStoreError } from '../../retriever/passage-store.js'
import type { PassageSource } from '../../retriever/passage-source.js'
import { graphiqlPage } from './graphiql.js'
import { checkHealth, standardProbes, type DependencyProbe } from './health.js'
import { allowedHostnames, hostnameOf } from './host-check.js'
import { authorizeJob, resolveDataPath, type JobAccess } from './job-access.js'
import { Jobs, type CoTrainingRunner } from './jobs.js'
import { coTrainingConfigFile } from '../training/cotrain-run.js'
import { Limiter } from './limiter.js'
import { askManyCost, queryCostRule } from './query-cost.js'
import { queryDepthRule } from './query-depth.js'
import { silentLogger, type Logger } from '../core/log.js'

export type ServerLimits = Pick<Config['server'], 'maxQuestionLength' | 'maxBatch' | 'maxK' | 'maxDepth' | 'maxCost' | 'concurrency' | 'queue' | 'timeoutMs'>

export const defaultLimits: ServerLimits = {
  maxQuestionLength: defaults.server.maxQuestionLength, maxBatch: defaults.server.maxBatch, maxK: defaults.server.maxK, maxDepth: defaults.server.maxDepth,
  maxCost: defaults.server.maxCost, concurrency: defaults.server.concurrency, queue: defaults.server.queue, timeoutMs: defaults.server.timeoutMs,
}

/** The request limits among the server settings (not the token, hosts or roots). */
export function limitsOf(server: Config['server']): ServerLimits {
  return Object.fromEntries(Object.keys(defaultLimits).map((key) => [key, server[key as keyof ServerLimits]])) as unknown as ServerLimits
}

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

const checkQuestion = (question: string, limits: ServerLimits) => checkQuestionText(question, limits.maxQuestionLength)
const checkCount = (name: string, value: number, limits: ServerLimits) => checkCountIn(name, value, limits.maxK, 'server.maxK')

/**
 * Runs `work` with a deadline counted from the request's arrival (queueing included). At the
 * deadline, or when the client goes away, the work's signal aborts, so the reader drops it instead
 * of computing answers nobody will read while the requests behind it wait.
 */
async function withDeadline<T>(ms: number, response: ServerResponse | undefined, work: (signal: AbortSignal, deadline: number) => Promise<T>): Promise<T> {
  const deadline = performance.now() + ms
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = ERR_TIMEOUT(ms)
      controller.abort(error)
      reject(error)
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
  const access: JobAccess = options.jobs ?? { enabled: false, authToken: '', dataRoots: [] }
  const indexStore = options.jobs?.indexStore ?? `${options.passages.name}-indexing`
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
  client.collectDefaultMetrics({ register: registry })

  interface Call { signal: AbortSignal; headers: IncomingHttpHeaders }
  // Every resolver goes through one place: limits, timeout, metrics, errors with codes.
  const guarded = <A, R>(field: string, limited: boolean, body: (args: A, call: Call) => Promise<R> | R) =>
    async (_root: unknown, args: A, context?: { reply?: { raw?: ServerResponse; request?: { headers: IncomingHttpHeaders } } }): Promise<R> => {
      const end = latency.startTimer({ field })
      try {
        const result = await withDeadline(limits.timeoutMs, context?.reply?.raw, async (signal, deadline) => {
          const work = async () => {
            signal.throwIfAborted()
            return body(args, { signal, headers: context?.reply?.request?.headers ?? {} })
          }
          return limited ? limiter.run(field, deadline, signal, work) : work()
        })
        requests.inc({ field, outcome: 'ok' })
        return result
      } catch (error) {
        const coded = asStoreError(error, options.passages.name)
        requests.inc({ field, outcome: coded instanceof AmbigqaError ? coded.code : 'error' })
        throw toGraphqlError(coded, options.passages.name)
      } finally {
        end()
      }
    }

  type RetrieverName = 'BM25_SQLITE' | 'BM25_ES' | 'DENSE' | 'DENSE_ES' | 'HYBRID'
  // The schema's enum names the configuration's retriever kinds (BM25_SQLITE is bm25-sqlite).
  const kindOf = (name?: RetrieverName | null): RetrieverKind | undefined => (name ? (name.toLowerCase().replace(/_/g, '-') as RetrieverKind) : undefined)
  type AskOptionsInput = { retrieve?: number | null; read?: number | null; retriever?: RetrieverName | null }
  const passageOut = (p: { id: string; title: string; text: string; score?: number }) => ({ id: p.id, title: p.title, text: p.text, score: p.score ?? null })
  // The configured reader.retrieve and reader.read, cut to maxK so a server with a lower limit still accepts them.
  const askOptions = (o?: AskOptionsInput | null): AskOptions => {
    const retriever = kindOf(o?.retriever)
    return {
      retrieve: checkCount('options.retrieve', o?.retrieve ?? Math.min(options.pipeline.defaultRetrieve, limits.maxK), limits),
      read: checkCount('options.read', o?.read ?? Math.min(options.pipeline.defaultRead, limits.maxK), limits),
      ...(retriever ? { retriever } : {}),
    }
  }
  const health = async () => {
    const report = await checkHealth(probes)
    const passages = await options.passages.count().catch(() => null)
    return { ...report, store: options.passages.name, passages, retriever: options.pipeline.stages.retriever.name }
  }

  const resolvers = {
    Query: {
      search: guarded('search', true, async (args: { question: string; k?: number | null; retriever?: RetrieverName | null }) => {
        const question = checkQuestion(args.question, limits)
        const k = checkCount('k', args.k ?? 10, limits)
        const { passages } = await options.pipeline.retrieve(question, k, kindOf(args.retriever))
        return passages.map(passageOut)
      }),
      passage: guarded('passage', false, async (args: { id: string }) => {
        const p = await options.passages.byId(args.id)
        return p ? passageOut(p) : null
      }),
      health: guarded('health', false, health),
      ask: guarded('ask', true, async (args: { question: string; options?: AskOptionsInput | null }, { signal }) => {
        const question = checkQuestion(args.question, limits)
        return options.pipeline.ask(question, askOptions(args.options), signal)
      }),
      askMany: guarded('askMany', true, async (args: { questions: string[]; options?: AskOptionsInput | null }, { signal }) => {
        if (args.questions.length > limits.maxBatch) throw ERR_BATCH_TOO_LARGE(args.questions.length, limits.maxBatch)
        if (askManyCost(args.questions.length) > limits.maxCost) throw ERR_QUERY_TOO_COSTLY(askManyCost(args.questions.length), limits.maxCost)
        const questions = args.questions.map((q) => checkQuestion(q, limits))
        const settings = askOptions(args.options)
        if (!options.pipeline.readerAvailable) throw ERR_READER_UNAVAILABLE('askMany', options.pipeline.stages.readerProblem ?? 'no reader was configured')
        return Promise.all(questions.map((q) => options.pipeline.ask(q, settings, signal)))
      }),
      job: guarded('job', false, (args: { id: string }) => jobs.get(args.id) ?? null),
    },
    Mutation: {
      startIndexing: guarded('startIndexing', true, (args: { source: string; format?: string | null }, { headers }) => {
        authorizeJob('startIndexing', access, headers.authorization)
        const source = resolveDataPath(args.source, access)
        return jobs.startIndexing(source, args.source, args.format ?? undefined, indexStore)
      }),
      startCoTraining: guarded('startCoTraining', true, (args: { config: string }, { headers }) => {
        authorizeJob('startCoTraining', access, headers.authorization)
        const run = options.jobs?.coTraining
        if (!run) throw ERR_JOBS_DISABLED('startCoTraining')
        return jobs.startCoTraining(coTrainingConfigFile(args.config), args.config, run)
      }),
      startEvaluation: guarded('startEvaluation', true, (args: { data: string; ids?: string | null }, { headers }) => {
        authorizeJob('startEvaluation', access, headers.authorization)
        resolveDataPath(args.data, access)
        if (args.ids) resolveDataPath(args.ids, access)
        throw ERR_READER_UNAVAILABLE('startEvaluation', 'evaluation jobs from the API are not built yet; run `ambigqa eval ambignq`')
      }),
    },
    AnswerSet: {
      found: (set: { answers: unknown[] }) => set.answers.length > 0,
    },
    Subscription: {
      jobProgress: {
        subscribe: (_root: unknown, args: { id: string }) => jobs.watch(args.id),
        resolve: (job: unknown) => job,
      },
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
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', registry.contentType)
    return registry.metrics()
  })
  // For a load balancer: live while the process answers; ready when every required dependency is up.
  app.get('/health/live', async () => ({ live: true }))
  app.get('/health/ready', async (_request, reply) => {
    const report = await health()
    reply.code(report.ok ? 200 : 503)
    return report
  })
}
