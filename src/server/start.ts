// Starts the server on a configured store: Fastify with pino logs and a body limit, the
// ambigqa plugin, and a graceful shutdown that lets requests in flight finish.
// A damaged SQLite store stops the start (AMBIGQA_ERR_STORE_CORRUPT); an Elasticsearch that
// cannot be reached does not: the server starts not ready, says so in its log, answers 503 on
// /health/ready and the searches that need it, and becomes ready when the cluster is back.
import Fastify, { type FastifyInstance } from 'fastify'
import { EsPassageSource, SqlitePassageSource, type PassageSource } from '../../retriever/passage-source.js'
import { asStoreError, PassageStore } from '../../retriever/passage-store.js'
import { checkStore } from '../../index/store-check.js'
import type { Config } from '../../core/config.js'
import { ERR_STORE_CORRUPT } from '../../core/errors.js'
import { RETRIEVER_BACKENDS } from '../../core/kinds.js'
import type { Logger } from '../../core/log.js'
import { openPipeline } from '../pipeline/open-pipeline.js'
import { runCoTraining } from '../training/cotrain-run.js'
import { ambigqaServer } from './app.js'
import type { ServerLimits } from './limits.js'
import { checkHealth, standardProbes, type DependencyProbe } from './health.js'

export interface StartOptions {
  host: string
  port: number
  bodyLimit: number
  limits: Partial<ServerLimits>
  logLevel: string
}

/** The backends the configured retriever reads: the SQLite store, Elasticsearch, or both (hybrid). */
export function backendsOf(config: Config): { sqlite: boolean; elasticsearch: boolean } {
  const kinds = config.retriever === 'hybrid' ? config.hybrid.retrievers : [config.retriever]
  return { sqlite: kinds.some((k) => RETRIEVER_BACKENDS[k] === 'sqlite'), elasticsearch: kinds.some((k) => RETRIEVER_BACKENDS[k] === 'elasticsearch') }
}

/** Opens the store and runs the quick check (store-check.ts), logging its time. */
export function openCheckedStore(dir: string, log: Logger): PassageStore {
  const store = PassageStore.openReadOnly(dir)
  const check = checkStore(store, 'quick')
  log.info({ store: store.dir, ms: Math.round(check.ms * 10) / 10 }, 'store check')
  if (!check.ok) {
    store.close()
    throw ERR_STORE_CORRUPT(store.dir, check.problems.join('; '))
  }
  return store
}

export async function startServer(config: Config, options: StartOptions): Promise<FastifyInstance> {
  const app = Fastify({ logger: { level: options.logLevel }, bodyLimit: options.bodyLimit })
  const log = app.log as unknown as Logger
  const backends = backendsOf(config)
  const es = backends.elasticsearch ? new EsPassageSource(config.elasticsearch) : undefined
  const passages: PassageSource = backends.sqlite ? new SqlitePassageSource(openCheckedStore(config.store, log)) : es!
  let pipeline
  try {
    pipeline = await openPipeline(config, log)
  } catch (err) {
    await passages.close()
    if (es && passages !== es) await es.close()
    throw asStoreError(err, config.store)
  }
  const probes: DependencyProbe[] = standardProbes(passages, pipeline)
  // Hybrid over the SQLite store and Elasticsearch: the cluster is a dependency of its own.
  if (es && passages !== es) probes.splice(1, 0, { name: 'elasticsearch', required: true, check: async () => `${es.name}: ${await es.count()} passages` })
  await app.register(ambigqaServer, {
    pipeline, passages, limits: options.limits, log, dependencies: probes,
    jobs: { enabled: config.server.jobs, authToken: config.server.authToken, dataRoots: config.server.dataRoots, indexStore: `${config.store}-indexing`,
      // The run's evaluations read this server's configuration (store, retriever, reader settings).
      coTraining: async (file, onProgress, signal) => {
        const results = await runCoTraining(file, { config, log, signal, onProgress })
        return `co-training done: ${results.evals.map((e) => `${e.name} F1 answer ${(100 * e.f1All).toFixed(1)}`).join(', ') || 'no evaluation'}`
      } },
    host: options.host, allowedHosts: config.server.allowedHosts,
  })
  app.addHook('onClose', async () => {
    await pipeline.close()
    await passages.close()
    if (es && passages !== es) await es.close()
  })
  await app.listen({ host: options.host, port: options.port })
  const health = await checkHealth(probes)
  const down = health.dependencies.filter((d) => d.state === 'DOWN')
  if (!health.ok) app.log.warn({ down }, `not ready: ${down.filter((d) => d.required).map((d) => `${d.name} is down (${d.detail})`).join('; ')}. /health/ready answers 503 until it is up`)
  let closing = false
  const shutdown = (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down: finishing requests in flight')
    app.close().then(() => process.exit(0), (error) => { app.log.error(error); process.exit(1) })
  }
  process.once('SIGINT', () => shutdown('SIGINT'))
  process.once('SIGTERM', () => shutdown('SIGTERM'))
  return app
}
