import type { Command } from 'commander'
import { ASK_COST_PER_QUESTION, defaults } from '../../core/config.js'
import { FIELD_COSTS } from '../server/query-cost.js'
import { limitsOf } from '../server/limits.js'
import { startServer } from '../server/start.js'
import { contextFor, parseNumber } from './context.js'
import { RETRIEVER_CHOICES } from '../../core/kinds.js'

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve the GraphQL API (the ask page at /, GraphiQL at /graphiql, metrics at /metrics); every flag is also a config key server.* and an AMBIGQA_SERVER_* variable')
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--retriever <name>', RETRIEVER_CHOICES)
    .option('--host <host>', `address to listen on (default ${defaults.server.host})`)
    .option('--port <n>', `port (default ${defaults.server.port})`, parseNumber('--port'))
    .option('--body-limit <bytes>', `largest request body (default ${defaults.server.bodyLimit})`, parseNumber('--body-limit'))
    .option('--max-question-length <n>', `longest question in characters (default ${defaults.server.maxQuestionLength})`, parseNumber('--max-question-length'))
    .option('--max-batch <n>', `most questions in one askMany (default ${defaults.server.maxBatch})`, parseNumber('--max-batch'))
    .option('--max-k <n>', `largest search k and ask retrieve / read (default ${defaults.server.maxK})`, parseNumber('--max-k'))
    .option('--max-depth <n>', `deepest query (default ${defaults.server.maxDepth})`, parseNumber('--max-depth'))
    .option('--max-cost <n>', `costliest query: ask ${ASK_COST_PER_QUESTION} per question, search ${FIELD_COSTS.search}, other fields 1; at least ${ASK_COST_PER_QUESTION} x --max-batch (default ${defaults.server.maxCost})`, parseNumber('--max-cost'))
    .option('--concurrency <n>', `requests run at once (default ${defaults.server.concurrency})`, parseNumber('--concurrency'))
    .option('--queue <n>', `requests waiting before 503 (default ${defaults.server.queue})`, parseNumber('--queue'))
    .option('--timeout-ms <ms>', `per-request timeout (default ${defaults.server.timeoutMs})`, parseNumber('--timeout-ms'))
    .action(async (opts, command: Command) => {
      const keys = ['host', 'port', 'bodyLimit', 'maxQuestionLength', 'maxBatch', 'maxK', 'maxDepth', 'maxCost', 'concurrency', 'queue', 'timeoutMs'] as const
      const flags = Object.fromEntries(keys.map((key) => [`server.${key}`, opts[key]]))
      const ctx = contextFor(command, { store: opts.store, retriever: opts.retriever, ...flags })
      const { host, port, bodyLimit } = ctx.config.server
      await startServer(ctx.config, { host, port, bodyLimit, logLevel: ctx.config.log.level, limits: limitsOf(ctx.config.server) })
    })
}
