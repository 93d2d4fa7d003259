// The GraphQL server as a fastify plugin: mercurius over schema.graphql, limits, metrics.
import { readFileSync } from 'node:fs'
import type { ServerResponse } from 'node:http'
import { resolve } from 'node:path'
import type { FastifyInstance } from 'fastify'
import mercurius from 'mercurius'
import client from 'prom-client'
import { AmbigqaError, ERR_BATCH_TOO_LARGE, ERR_QUERY_TOO_COSTLY, ERR_QUESTION_INVALID, ERR_READER_UNAVAILABLE, ERR_TIMEOUT } from '../errors.js'
import type { Pipeline } from '../pipeline/pipeline.js'
import type { PassageStore } from '../../retriever/passage-store.js'
import { Jobs } from './jobs.js'
import { Limiter } from './limiter.js'
import { askManyCost, queryCostRule } from './query-cost.js'
import { silentLogger, type Logger } from '../log.js'

export interface ServerLimits {
  maxQuestionLength: number
  maxBatch: number
  maxK: number
  maxDepth: number
  maxCost: number
  concurrency: number
  queue: number
  timeoutMs: number
}

export const defaultLimits: ServerLimits = {
  maxQuestionLength: 1000, maxBatch: 32, maxK: 1000, maxDepth: 6, maxCost: 500, concurrency: 8, queue: 64, timeoutMs: 30_000,
}

export interface ServerOptions {
  pipeline: Pipeline
  store: PassageStore
  storeDir: string
  limits?: Partial<ServerLimits>
  /** Store folder that startIndexing builds into (default: <storeDir>-indexing). */
  indexStore?: string
  log?: Logger
}

function toGraphqlError(error: unknown): unknown {
  if (error instanceof AmbigqaError) {
    return new mercurius.ErrorWithProps(error.message, { code: error.code }, error.statusCode)
  }
  return error
}

function checkQuestion(question: string, limits: ServerLimits): string {
  const trimmed = question.trim()
  if (trimmed.length === 0) throw ERR_QUESTION_INVALID('is empty')
  if (trimmed.length > limits.maxQuestionLength) throw ERR_QUESTION_INVALID(`has ${trimmed.length} characters, more than ${limits.maxQuestionLength}`)
  return trimmed
}

/**
 * Runs `work` with a deadline counted from the request's arrival (queueing included). At the
 * deadline, or when the client goes away, the work's signal aborts, so the reader drops it instead
 * of computing answers nobody will read while the requests behind it wait.
 */
async function withDeadline<T>(ms: number, response: ServerResponse | undefined, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
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
    return await Promise.race([work(controller.signal), timeout])
  } finally {
    clearTimeout(timer)
    response?.off('close', gone)
  }
}

export async function ambigqaServer(app: FastifyInstance, options: ServerOptions): Promise<void> {
  const limits = { ...defaultLimits, ...options.limits }
  const limiter = new Limiter(limits.concurrency, limits.queue)
  const jobs = new Jobs(options.log ?? silentLogger)
  const indexStore = options.indexStore ?? `${options.storeDir}-indexing`
  app.addHook('onClose', async () => { await jobs.drain() })
  const registry = new client.Registry()
  const requests = new client.Counter({ name: 'ambigqa_graphql_requests_total', help: 'GraphQL field calls', labelNames: ['field', 'outcome'], registers: [registry] })
  const latency = new client.Histogram({ name: 'ambigqa_graphql_seconds', help: 'GraphQL field latency', labelNames: ['field'], registers: [registry], buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5] })
  new client.Gauge({ name: 'ambigqa_in_flight', help: 'requests running or queued', registers: [registry], collect() { this.set(limiter.inFlight) } })
  client.collectDefaultMetrics({ register: registry })

  // Every resolver goes through one place: limits, timeout, metrics, errors with codes.
  const guarded = <A, R>(field: string, limited: boolean, body: (args: A, signal: AbortSignal) => Promise<R> | R) =>
    async (_root: unknown, args: A, context?: { reply?: { raw?: ServerResponse } }): Promise<R> => {
      const end = latency.startTimer({ field })
      try {
        const result = await withDeadline(limits.timeoutMs, context?.reply?.raw, async (signal) => {
          const work = async () => {
            signal.throwIfAborted()
            return body(args, signal)
          }
          return limited ? limiter.run(work) : work()
        })
        requests.inc({ field, outcome: 'ok' })
        return result
      } catch (error) {
        requests.inc({ field, outcome: error instanceof AmbigqaError ? error.code : 'error' })
        throw toGraphqlError(error)
      } finally {
        end()
      }
    }

  const passageOut = (p: { id: string; title: string; text: string; score?: number }) => ({ id: p.id, title: p.title, text: p.text, score: p.score ?? null })
  const askOptions = (o?: { retrieve?: number; read?: number }) => ({ retrieve: o?.retrieve ?? 100, read: o?.read ?? 10 })

  const resolvers = {
    Query: {
      search: guarded('search', true, async (args: { question: string; k?: number }) => {
        const question = checkQuestion(args.question, limits)
        const k = args.k ?? 10
        if (k < 1 || k > limits.maxK) throw ERR_QUESTION_INVALID(`asked for k = ${k}; k must be in [1, ${limits.maxK}] and the`)
        const { passages } = await options.pipeline.retrieve(question, k)
        return passages.map(passageOut)
      }),
      passage: guarded('passage', false, (args: { id: string }) => {
        const p = options.store.byId(args.id)
        return p ? passageOut(p) : null
      }),
      health: guarded('health', false, () => ({
        ok: true, store: options.storeDir, passages: options.store.count(), retriever: options.pipeline.stages.retriever.name,
      })),
      ask: guarded('ask', true, async (args: { question: string; options?: { retrieve?: number; read?: number } }, signal) => {
        const question = checkQuestion(args.question, limits)
        return options.pipeline.ask(question, askOptions(args.options), signal)
      }),
      askMany: guarded('askMany', true, async (args: { questions: string[]; options?: { retrieve?: number; read?: number } }, signal) => {
        if (args.questions.length > limits.maxBatch) throw ERR_BATCH_TOO_LARGE(args.questions.length, limits.maxBatch)
        if (askManyCost(args.questions.length) > limits.maxCost) throw ERR_QUERY_TOO_COSTLY(askManyCost(args.questions.length), limits.maxCost)
        const questions = args.questions.map((q) => checkQuestion(q, limits))
        if (!options.pipeline.readerAvailable) throw ERR_READER_UNAVAILABLE('askMany', options.pipeline.stages.readerProblem ?? 'no reader was configured')
        return Promise.all(questions.map((q) => options.pipeline.ask(q, askOptions(args.options), signal)))
      }),
      job: guarded('job', false, (args: { id: string }) => jobs.get(args.id) ?? null),
    },
    Mutation: {
      startIndexing: guarded('startIndexing', false, (args: { source: string; format?: string }) =>
        jobs.startIndexing(args.source, args.format ?? undefined, indexStore)),
      startEvaluation: guarded('startEvaluation', false, () => { throw ERR_READER_UNAVAILABLE('startEvaluation', 'evaluation jobs from the API are not built yet; run `ambigqa eval ambignq`') }),
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
    graphiql: true,
    subscription: true,
    queryDepth: limits.maxDepth,
    validationRules: [queryCostRule(limits.maxCost)],
  })

  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', registry.contentType)
    return registry.metrics()
  })
}
