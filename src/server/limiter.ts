// Bounded concurrency with admission at the door: `concurrency` requests run, and one more waits
// only when the work ahead of it can be done before its deadline; otherwise, or beyond `queue`
// waiting, it is refused at once with an overload error (HTTP 503) rather than left to time out.
// What the work ahead costs is learnt per field (an `ask` and a `search` differ a thousandfold),
// the way TCP learns a retransmission timeout (RFC 6298): a running mean of recent durations plus
// four times their running mean deviation, so that a load that slows every request (a server
// busy refusing thousands of others) raises the estimate at once instead of a few requests later.
// And the longest a request of a field has been running is a floor under its estimate.
import { ERR_OVERLOADED } from '../../core/errors.js'

interface Running { field: string; started: number }
interface Waiting { field: string; admit: (slot: Running) => void; refuse: (reason: unknown) => void }
interface Duration { mean: number; deviation: number; samples: number }

/** RFC 6298's gains: the newest duration's weight in the mean (1/8) and in the deviation (1/4). */
const MEAN_GAIN = 1 / 8
const DEVIATION_GAIN = 1 / 4
const DEVIATIONS = 4
/** Durations vary and requests finish in rounds: admit only what the estimate says will finish
 * with a fifth of it to spare. */
const MARGIN = 1.2

export class Limiter {
  private readonly running = new Set<Running>()
  private readonly waiting: Waiting[] = []
  private readonly durations = new Map<string, Duration>()

  /** `now` is a clock in milliseconds (tests pass their own). */
  constructor(readonly concurrency: number, readonly queue: number, private readonly now: () => number = () => performance.now()) {}

  get inFlight(): number { return this.running.size + this.waiting.length }

  /**
   * Runs `work` now, or after the requests ahead of it, or refuses it. `deadline` is in the
   * clock's time; `signal` aborting while it waits takes it out of the queue.
   */
  async run<T>(field: string, deadline: number, signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    let slot: Running
    if (this.running.size < this.concurrency) {
      slot = { field, started: this.now() }
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
      this.learn(field, this.now() - slot.started)
      this.running.delete(slot)
      // The slot passes straight to the next waiter, so a newcomer cannot take it in between.
      const next = this.waiting.shift()
      if (next) {
        const handed = { field: next.field, started: this.now() }
        this.running.add(handed)
        next.admit(handed)
      }
    }
  }

  /**
   * How long a request of `field` is expected to take at most, in ms; undefined until a round of
   * `concurrency` requests has finished: the first to finish ran before the others had started,
   * and a burst admitted on its duration waited far longer than it said.
   */
  estimate(field: string): number | undefined {
    const d = this.durations.get(field)
    if (d === undefined || d.samples < this.concurrency) return undefined
    const now = this.now()
    let overrun = 0
    for (const r of this.running) if (r.field === field) overrun = Math.max(overrun, now - r.started)
    return Math.max(d.mean + DEVIATIONS * d.deviation, overrun)
  }

  private learn(field: string, ms: number): void {
    const d = this.durations.get(field)
    if (d === undefined) {
      this.durations.set(field, { mean: ms, deviation: ms / 2, samples: 1 })
      return
    }
    d.samples++
    d.deviation += DEVIATION_GAIN * (Math.abs(ms - d.mean) - d.deviation)
    d.mean += MEAN_GAIN * (ms - d.mean)
  }

  /** Throws the overload error when a request of `field` may not wait. */
  private admit(field: string, deadline: number): void {
    if (this.waiting.length >= this.queue) throw ERR_OVERLOADED(`${this.running.size} requests running and ${this.waiting.length} queued`)
    const own = this.estimate(field)
    // Not a round measured yet (a cold start under a burst): wait behind at most one round.
    if (own === undefined) {
      if (this.waiting.length >= this.concurrency) throw ERR_OVERLOADED(`${this.running.size} requests running and ${this.waiting.length} queued, too few finished yet to tell how long they take`)
      return
    }
    const now = this.now()
    const cost = new Map<string, number>([[field, own]])
    const costOf = (f: string) => {
      if (!cost.has(f)) cost.set(f, this.estimate(f) ?? own)
      return cost.get(f)!
    }
    let ahead = 0
    for (const r of this.running) ahead += Math.max(0, costOf(r.field) - (now - r.started))
    for (const w of this.waiting) ahead += costOf(w.field)
    const expected = (ahead / this.concurrency + own) * MARGIN
    if (now + expected > deadline) {
      throw ERR_OVERLOADED(`the ${this.inFlight} requests ahead would not leave this one time to finish before its deadline (about ${Math.round(expected)} ms needed, ${Math.max(0, Math.round(deadline - now))} ms left)`)
    }
  }
}
