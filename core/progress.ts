// Progress of long jobs: a live line on a terminal, a structured log line every few seconds
// otherwise (CI logs, files), both with the rate and, when the size is known, the ETA.
import type { Logger } from './log.js'

export interface ProgressOptions {
  label: string
  unit: string
  log: Logger
  /** Fraction done in [0, 1] when the job's size is known (bytes read of a file, say). */
  fraction?: () => number | undefined
  stream?: NodeJS.WriteStream
  intervalMs?: number
  /** Decimals of the rate: 0 for passages (thousands a second), more for slow units (questions). */
  rateDecimals?: number
  /** Further fields of each log line (the job's total, what a resumed run skipped). */
  fields?: Record<string, unknown>
}

export class Progress {
  private readonly started = Date.now()
  private last = 0
  private count = 0
  private readonly options: ProgressOptions
  private readonly tty: boolean

  constructor(options: ProgressOptions) {
    this.options = options
    this.tty = Boolean((options.stream ?? process.stderr).isTTY)
  }

  update(count: number): void {
    this.count = count
    const now = Date.now()
    if (now - this.last < (this.options.intervalMs ?? (this.tty ? 200 : 5000))) return
    this.last = now
    this.render(false)
  }

  done(count: number = this.count): void {
    this.count = count
    this.render(true)
  }

  private render(final: boolean): void {
    const seconds = Math.max((Date.now() - this.started) / 1000, 1e-3)
    const rate = this.count / seconds
    const decimals = this.options.rateDecimals ?? 0
    const fraction = this.options.fraction?.()
    const eta = fraction && fraction > 0 && !final ? (seconds * (1 - fraction)) / fraction : undefined
    if (this.tty) {
      const parts = [
        `${this.options.label}: ${this.count.toLocaleString('en-US')} ${this.options.unit}`,
        `${rate.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals })}/s`,
        fraction !== undefined ? `${bar(fraction)} ${(fraction * 100).toFixed(1)}%` : '',
        eta !== undefined ? `ETA ${formatDuration(eta)}` : final ? `in ${formatDuration(seconds)}` : '',
      ]
      ;(this.options.stream ?? process.stderr).write(`\r\x1b[K${parts.filter(Boolean).join('  ')}${final ? '\n' : ''}`)
    } else {
      this.options.log.info(
        { job: this.options.label, [this.options.unit]: this.count, ...this.options.fields, perSecond: Number(rate.toFixed(decimals)), fraction, etaSeconds: eta && Math.round(eta) },
        final ? `${this.options.label} finished` : `${this.options.label} progress`,
      )
    }
  }
}

function bar(fraction: number, width = 20): string {
  const filled = Math.round(Math.min(Math.max(fraction, 0), 1) * width)
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`
}

export function formatDuration(seconds: number): string {
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)}s`
  const m = Math.floor(seconds / 60)
  if (m < 60) return `${m}m${Math.round(seconds % 60)}s`
  return `${Math.floor(m / 60)}h${m % 60}m`
}
