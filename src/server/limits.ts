// The request limits among the server settings (not the token, hosts or roots), read by the
// server and by the resolvers.
import { defaults, type Config } from '../../core/config.js'

export type ServerLimits = Pick<Config['server'], 'maxQuestionLength' | 'maxBatch' | 'maxK' | 'maxDepth' | 'maxCost' | 'concurrency' | 'queue' | 'timeoutMs'>

export const defaultLimits: ServerLimits = {
  maxQuestionLength: defaults.server.maxQuestionLength, maxBatch: defaults.server.maxBatch, maxK: defaults.server.maxK, maxDepth: defaults.server.maxDepth,
  maxCost: defaults.server.maxCost, concurrency: defaults.server.concurrency, queue: defaults.server.queue, timeoutMs: defaults.server.timeoutMs,
}

/** The request limits among the server settings (not the token, hosts or roots). */
export function limitsOf(server: Config['server']): ServerLimits {
  return Object.fromEntries(Object.keys(defaultLimits).map((key) => [key, server[key as keyof ServerLimits]])) as unknown as ServerLimits
}
