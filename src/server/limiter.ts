// Bounded concurrency: `concurrency` requests run, `queue` more wait, the rest are refused with
// an explicit overload error (HTTP 503).
import { ERR_OVERLOADED } from '../errors.js'

export class Limiter {
  private running = 0
  private readonly waiting: (() => void)[] = []

  constructor(readonly concurrency: number, readonly queue: number) {}

  get inFlight(): number { return this.running + this.waiting.length }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.queue) throw ERR_OVERLOADED(this.concurrency, this.queue)
      await new Promise<void>((resolve) => this.waiting.push(resolve))
    } else {
      this.running++
    }
    try {
      return await work()
    } finally {
      const next = this.waiting.shift()
      if (next) next()
      else this.running--
    }
  }
}
