// Bounded concurrency with admission at the door: `concurrency` requests run, and one more waits
// only when the work ahead of it can be done before its deadline; otherwise, or beyond `queue`
// waiting, it is refused at once with an overload error (HTTP 503) rather than left to time out.
// What the work ahead costs is learnt per field (an average of recent durations): an `ask` and a
// `search` differ a thousandfold.
import { ERR_OVERLOADED } from '../../core/errors.js'

interface Running { field: string; started: number }
interface Waiting { field: string; admit: (slot: Running) => void; refuse: (reason: unknown) => void }

/** Weight of the newest duration in the running average. */
const NEWEST = 0.2
/** Durations vary: admit only what the estimate says will finish with a fifth of it to spare. */
const MARGIN = 1.2

export class Limiter {
  private readonly running = new Set<Running>()
  private readonly waiting: Waiting[] = []
  private readonly averageMs = new Map<string, number>()

  constructor(readonly concurrency: number, readonly queue: number) {}

  get inFlight(): number { return this.running.size + this.waiting.length }

  /**
   * Runs `work` now, or after the requests ahead of it, or refuses it. `deadline` is in
   * performance.now() time; `signal` aborting while it waits takes it out of the queue.
   */
  async run<T>(field: string, deadline: number, signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    let slot: Running
    if (this.running.size < this.concurrency) {
      slot = { field, started: performance.now() }
      this.running.add(slot)
    } else {
      signal.throwIfAborted()
      this.admit(field, deadline)
      slot = await new Promise<Running>((admit, refuse) => {
        const entry: Waiting = { field, admit, refuse }
        this.waiting.push(entry)
        signal.addEventListener('abort', () => {
          const at = this.waiting.indexOf(entry)
          if (at >= 0) this.waiting.splice(at, 1)
          refuse(signal.reason)
        }, { once: true })
      })
    }
    try {
      return await work()
    } finally {
      const ms = performance.now() - slot.started
      const average = this.averageMs.get(field)
      this.averageMs.set(field, average === undefined ? ms : average + NEWEST * (ms - average))
      this.running.delete(slot)
      // The slot passes straight to the next waiter, so a newcomer cannot take it in between.
      const next = this.waiting.shift()
      if (next) {
        const handed = { field: next.field, started: performance.now() }
        this.running.add(handed)
        next.admit(handed)
      }
    }
  }

  /** Throws the overload error when a request of `field` may not wait. */
  private admit(field: string, deadline: number): void {
    if (this.waiting.length >= this.queue) throw ERR_OVERLOADED(`${this.running.size} requests running and ${this.waiting.length} queued`)
    const own = this.averageMs.get(field)
    // Nothing measured yet (a cold start under a burst): wait behind at most one round.
    if (own === undefined) {
      if (this.waiting.length >= this.concurrency) throw ERR_OVERLOADED(`${this.running.size} requests running and ${this.waiting.length} queued, none finished yet`)
      return
    }
    const now = performance.now()
    let ahead = 0
    for (const r of this.running) ahead += Math.max(0, (this.averageMs.get(r.field) ?? own) - (now - r.started))
    for (const w of this.waiting) ahead += this.averageMs.get(w.field) ?? own
    const expected = (ahead / this.concurrency + own) * MARGIN
    if (now + expected > deadline) {
      throw ERR_OVERLOADED(`the ${this.inFlight} requests ahead would not leave this one time to finish before its deadline (about ${Math.round(expected)} ms needed, ${Math.max(0, Math.round(deadline - now))} ms left)`)
    }
  }
}
