// What every command gets: validated configuration, a logger, and where to print results.
import type { Command } from 'commander'
import { loadConfig, type Config } from '../../core/config.js'
import { createLogger, type Logger } from '../../core/log.js'

export interface CommandContext {
  config: Config
  log: Logger
  out: (line: string) => void
}

/** Builds the context from the global options (--config, --log-level) plus per-command flags. */
export function contextFor(command: Command, flags: Record<string, unknown> = {}): CommandContext {
  const globals = command.optsWithGlobals() as { config?: string; logLevel?: string; device?: string }
  // --device: every ONNX model of the command on one device (the config can still set each apart).
  const device = globals.device ? { 'reader.device': globals.device, 'reranker.device': globals.device, 'dense.device': globals.device } : {}
  const config = loadConfig({
    ...(globals.config ? { file: globals.config } : {}),
    flags: { ...device, ...flags, ...(globals.logLevel ? { 'log.level': globals.logLevel } : {}) },
  })
  return { config, log: createLogger(config.log.level), out: (line) => process.stdout.write(`${line}\n`) }
}

export function parseNumber(name: string, bounds?: { min: number; max: number }) {
  return (raw: string): number => {
    const value = Number(raw)
    if (raw.trim() === '' || Number.isNaN(value)) throw new Error(`${name} must be a number, got '${raw}'`)
    // Bounded options are counts and sizes: whole numbers within what the job can take.
    if (bounds && (!Number.isInteger(value) || value < bounds.min || value > bounds.max)) throw new Error(`${name} must be a whole number from ${bounds.min} to ${bounds.max}, got '${raw}'`)
    return value
  }
}
