import type { Command } from 'commander'
import { limitsOf } from '../server/app.js'
import { startServer } from '../server/start.js'
import { contextFor, parseNumber } from './context.js'

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve the GraphQL API (GraphiQL at /graphiql, metrics at /metrics); every flag is also a config key server.* and an AMBIGQA_SERVER_* variable')
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--retriever <name>', 'bm25-sqlite | bm25-es | dense | dense-es | hybrid (default: config "retriever")')
    .option('--host <host>', 'address to listen on (default 127.0.0.1)')
    .option('--port <n>', 'port (default 4000)', parseNumber('--port'))
    .option('--body-limit <bytes>', 'largest request body (default 65536)', parseNumber('--body-limit'))
    .option('--max-question-length <n>', 'longest question in characters (default 1000)', parseNumber('--max-question-length'))
    .option('--max-batch <n>', 'most questions in one askMany (default 32)', parseNumber('--max-batch'))
    .option('--max-k <n>', 'largest search k and ask retrieve / read (default 1000)', parseNumber('--max-k'))
    .option('--max-depth <n>', 'deepest query (default 6)', parseNumber('--max-depth'))
    .option('--max-cost <n>', 'costliest query: ask 50 per question, search 5, other fields 1; at least 50 x --max-batch (default 1700)', parseNumber('--max-cost'))
    .option('--concurrency <n>', 'requests run at once (default 8)', parseNumber('--concurrency'))
    .option('--queue <n>', 'requests waiting before 503 (default 64)', parseNumber('--queue'))
    .option('--timeout-ms <ms>', 'per-request timeout (default 30000)', parseNumber('--timeout-ms'))
    .action(async (opts, command: Command) => {
      const keys = ['host', 'port', 'bodyLimit', 'maxQuestionLength', 'maxBatch', 'maxK', 'maxDepth', 'maxCost', 'concurrency', 'queue', 'timeoutMs'] as const
      const flags = Object.fromEntries(keys.map((key) => [`server.${key}`, opts[key]]))
      const ctx = contextFor(command, { store: opts.store, retriever: opts.retriever, ...flags })
      const { host, port, bodyLimit } = ctx.config.server
      await startServer(ctx.config, { host, port, bodyLimit, logLevel: ctx.config.log.level, limits: limitsOf(ctx.config.server) })
    })
}
