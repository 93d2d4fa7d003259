// Structured logs (JSON lines, pino) on stderr, so stdout stays free for command output.
import { pino, destination, type Logger } from 'pino'

export type { Logger }

export function createLogger(level: string = 'info'): Logger {
  return pino({ level, base: { app: 'ambigqa' } }, destination({ dest: 2, sync: true }))
}

/** A logger that drops everything: tests and library callers that do not care. */
export const silentLogger: Logger = pino({ level: 'silent' })
