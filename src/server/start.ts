// Starts the server on a configured store: Fastify with pino logs and a body limit, the
// ambigqa plugin, and a graceful shutdown that lets requests in flight finish.
import Fastify, { type FastifyInstance } from 'fastify'
import { PassageStore } from '../../retriever/passage-store.js'
import type { Config } from '../config.js'
import type { Logger } from '../log.js'
import { openPipeline } from '../pipeline/open-pipeline.js'
import { ambigqaServer, type ServerLimits } from './app.js'

export interface StartOptions {
  host: string
  port: number
  bodyLimit: number
  limits: Partial<ServerLimits>
  logLevel: string
}

export async function startServer(config: Config, options: StartOptions): Promise<FastifyInstance> {
  const app = Fastify({ logger: { level: options.logLevel }, bodyLimit: options.bodyLimit })
  const pipeline = await openPipeline(config, app.log as unknown as Logger)
  const store = PassageStore.openReadOnly(config.store)
  await app.register(ambigqaServer, { pipeline, store, storeDir: config.store, limits: options.limits })
  app.addHook('onClose', async () => {
    await pipeline.close()
    store.close()
  })
  await app.listen({ host: options.host, port: options.port })
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
