import type { Command } from 'commander'
import { defaultLimits } from '../server/app.js'
import { startServer } from '../server/start.js'
import { contextFor, parseNumber } from './context.js'

const env = (name: string): number | undefined => (process.env[name] ? Number(process.env[name]) : undefined)

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve the GraphQL API (GraphiQL at /graphiql, metrics at /metrics)')
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--retriever <name>', 'bm25-sqlite | dense | hybrid (default: config "retriever")')
    .option('--host <host>', 'address to listen on (AMBIGQA_SERVER_HOST)', process.env.AMBIGQA_SERVER_HOST ?? '127.0.0.1')
    .option('--port <n>', 'port (AMBIGQA_SERVER_PORT)', parseNumber('--port'), env('AMBIGQA_SERVER_PORT') ?? 4000)
    .option('--body-limit <bytes>', 'largest request body', parseNumber('--body-limit'), env('AMBIGQA_SERVER_BODY_LIMIT') ?? 64 * 1024)
    .option('--max-question-length <n>', 'longest question in characters', parseNumber('--max-question-length'), env('AMBIGQA_SERVER_MAX_QUESTION_LENGTH') ?? defaultLimits.maxQuestionLength)
    .option('--max-batch <n>', 'most questions in one askMany', parseNumber('--max-batch'), env('AMBIGQA_SERVER_MAX_BATCH') ?? defaultLimits.maxBatch)
    .option('--max-depth <n>', 'deepest query', parseNumber('--max-depth'), env('AMBIGQA_SERVER_MAX_DEPTH') ?? defaultLimits.maxDepth)
    .option('--concurrency <n>', 'requests run at once', parseNumber('--concurrency'), env('AMBIGQA_SERVER_CONCURRENCY') ?? defaultLimits.concurrency)
    .option('--queue <n>', 'requests waiting before 503', parseNumber('--queue'), env('AMBIGQA_SERVER_QUEUE') ?? defaultLimits.queue)
    .option('--timeout-ms <ms>', 'per-request timeout', parseNumber('--timeout-ms'), env('AMBIGQA_SERVER_TIMEOUT_MS') ?? defaultLimits.timeoutMs)
    .action(async (opts, command: Command) => {
      const ctx = contextFor(command, { store: opts.store, retriever: opts.retriever })
      await startServer(ctx.config, {
        host: opts.host, port: opts.port, bodyLimit: opts.bodyLimit, logLevel: ctx.config.log.level,
        limits: {
          maxQuestionLength: opts.maxQuestionLength, maxBatch: opts.maxBatch, maxDepth: opts.maxDepth,
          concurrency: opts.concurrency, queue: opts.queue, timeoutMs: opts.timeoutMs,
        },
      })
    })
}
