// Admission at the door, with a promise: a request admitted finishes before its deadline, and one
// that would not, or would make an admitted one miss its own, is refused at once with an overload
// error (HTTP 503, and a Retry-After) rather than left to time out (504).
//
// What a request costs is measured on this machine, per kind of call (an `ask` that rewrites, one
// that does not, a `search`: they differ a thousandfold), as requests finish, so the promise holds
// on any CPU and under any other load: a kind's *service time* is the share of the server a
// request of it used, counted the way processor sharing counts it (a virtual clock that runs at
// 1/n of the wall clock while n requests run, as in fair queueing): 8 asks that run together for 8
// s on two cores cost 1 s each, the server's throughput for them. Each kind keeps RFC 6298's
// running mean of it (gain 1/8) and mean deviation (gain 1/4), and a request is counted as RFC 6298
// bounds a round trip: its mean plus four deviations (the questions of a kind differ: one whose
// three answers are rewritten costs many times one with a single answer), and at least what a
// request of its kind still running has already used (it weighs at once, not a few requests later).
//
// Admission walks the requests in the server (running, then queued, then the newcomer) and gives
// each the time it would finish at: the work of those ahead of it (they run first), its own, and
// of each one behind it that can run beside it as much as its own (they share the server with
// it), times a fifth to spare. This holds whether the server serves them in turn or together.
// The newcomer is refused when it would miss its deadline, or when it would make a request that
// was going to meet its deadline miss it. `concurrency` still bounds how many run at once, `queue`
// how many wait.
// Before a kind has had one request finish, its cost is unknown: one request of that kind runs
// (as a probe) and the others of it are refused until it finishes. A server holding no request at
// all admits any, even one whose estimate exceeds the deadline: refusing it would leave nothing to
// learn from, and the estimate could never come down.
// What it cannot promise: a request that alone costs more than the time to its deadline, while
// others of its kind are cheap, is admitted on its kind's estimate and times out (504); its cost
// is learnt when its work stops (at the abort, or at its end where a stage runs on regardless).
import { ERR_OVERLOADED, type AmbigqaError } from '../../core/errors.js'

interface Entry {
  field: string
  deadline: number
  /** The virtual clock when it started running; undefined while it waits. */
  virtualStart?: number
}
interface Waiting extends Entry { admit: () => void; refuse: (reason: unknown) => void }
/** A kind's service time in ms of the server's whole capacity: running mean and mean deviation. */
export interface Service { mean: number; deviation: number; samples: number }

/** RFC 6298's gains: the newest duration's weight in the mean (1/8) and in the deviation (1/4). */
const MEAN_GAIN = 1 / 8
const DEVIATION_GAIN = 1 / 4
const DEVIATIONS = 4
/** Requests finish in rounds: admit only what finishes with a fifth to spare. */
const MARGIN = 1.2

/** An overload refusal, and when the client may try again (the Retry-After header, in seconds). */
export type Refusal = AmbigqaError & { retryAfterSeconds: number }

const refusal = (why: string, retryAfterMs: number): Refusal =>
  Object.assign(ERR_OVERLOADED(why), { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) })

export class Limiter {
  private readonly running = new Set<Entry>()
  private readonly waiting: Waiting[] = []
  private readonly services = new Map<string, Service>()
  /** Processor-sharing time: advances at 1/n of the clock while n requests run. */
  private virtual = 0
  private virtualAt: number

  /** `now` is a clock in milliseconds (tests pass their own). */
  constructor(readonly concurrency: number, readonly queue: number, private readonly now: () => number = () => performance.now()) {
    this.virtualAt = now()
  }

  get inFlight(): number { return this.running.size + this.waiting.length }

  /**
   * Runs `work` now, or after the requests ahead of it, or refuses it at once (a `Refusal`).
   * `deadline` is in the clock's time; `signal` aborting while it waits takes it out of the queue.
   * What the work cost is learnt when it finishes: from a success, and from a run whose signal
   * aborted (failed, or answered with less: an ask whose rewrites stopped at its deadline) only
   * when it raises the estimate (what a cut run used is less than the whole would have).
   */
  async run<T>(field: string, deadline: number, signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    signal.throwIfAborted()
    this.admit(field, deadline)
    let entry: Entry = { field, deadline }
    if (this.running.size < this.concurrency) {
      this.start(entry)
    } else {
      const waiter: Waiting = { field, deadline, admit: () => {}, refuse: () => {} }
      await new Promise<void>((admit, refuse) => {
        Object.assign(waiter, { admit, refuse })
        this.waiting.push(waiter)
        signal.addEventListener('abort', () => {
          const at = this.waiting.indexOf(waiter)
          if (at >= 0) this.waiting.splice(at, 1)
          refuse(signal.reason)
        }, { once: true })
      })
      entry = waiter
    }
    let succeeded = false
    try {
      const result = await work()
      succeeded = true
      return result
    } finally {
      this.advance()
      const used = this.virtual - entry.virtualStart!
      this.running.delete(entry)
      const known = this.services.get(field)
      if (signal.aborted ? known === undefined || used > known.mean : succeeded) this.learn(field, used)
      // The slot passes straight to the next waiter, so a newcomer cannot take it in between.
      const next = this.waiting.shift()
      if (next) {
        this.start(next)
        next.admit()
      }
    }
  }

  /** What a request of `field` has been measured to cost (ms of the whole server), if anything has. */
  service(field: string): Service | undefined {
    const s = this.services.get(field)
    return s && { ...s }
  }

  /** What the limiter has measured so far, per kind (for /metrics). */
  measured(): [string, Service][] {
    return [...this.services].map(([field, s]) => [field, { ...s }])
  }

  /**
   * What a request of `field` is counted at in admission, in ms of the whole server: its mean plus
   * four deviations, or, when more, what one of its kind still running has used so far; undefined
   * until one request of it has finished.
   */
  estimate(field: string): number | undefined {
    const s = this.services.get(field)
    if (s === undefined) return undefined
    this.advance()
    let used = 0
    for (const r of this.running) if (r.field === field) used = Math.max(used, this.virtual - r.virtualStart!)
    return Math.max(s.mean + DEVIATIONS * s.deviation, used)
  }

  private start(entry: Entry): void {
    this.advance()
    entry.virtualStart = this.virtual
    this.running.add(entry)
  }

  private advance(): void {
    const now = this.now()
    if (this.running.size > 0) this.virtual += (now - this.virtualAt) / this.running.size
    this.virtualAt = now
  }

  private learn(field: string, ms: number): void {
    const s = this.services.get(field)
    if (s === undefined) {
      this.services.set(field, { mean: ms, deviation: ms / 2, samples: 1 })
      return
    }
    s.samples++
    s.deviation += DEVIATION_GAIN * (Math.abs(ms - s.mean) - s.deviation)
    s.mean += MEAN_GAIN * (ms - s.mean)
  }

  /** Throws a `Refusal` when a request of `field` with this deadline may not come in. */
  private admit(field: string, deadline: number): void {
    const busy = `${this.running.size} requests running and ${this.waiting.length} queued`
    if (this.running.size >= this.concurrency && this.waiting.length >= this.queue) throw refusal(busy, this.nextFinish())
    // Nothing in the server: always admitted, so that there is always something to learn from.
    if (this.inFlight === 0) return
    const own = this.estimate(field)
    if (own === undefined) {
      // One request of a kind not measured yet runs at a time, until it has finished.
      const probe = [...this.running, ...this.waiting].find((r) => r.field === field)
      if (probe) throw refusal(`${busy}; none of its kind (${field}) has finished yet, so one runs at a time until one has`, this.used(probe))
      return
    }
    this.advance()
    const now = this.now()
    // Each request's remaining work, in the order the server takes them up.
    const estimates = new Map<string, number | undefined>([[field, own]])
    const estimateOf = (f: string) => {
      if (!estimates.has(f)) estimates.set(f, this.estimate(f))
      return estimates.get(f)
    }
    const inServer = [...this.running, ...this.waiting].map((r) => {
      const used = this.used(r)
      const whole = estimateOf(r.field)
      // A probe of a kind not measured yet: as long again as it has run. One near or past its
      // estimate is one of the dear ones of its kind (an ambiguous question, many rewrites): at
      // least half what it has used is still to come. Counted as nearly done, it would go on
      // sharing the server with each newcomer admitted beside it, slower with each.
      const remaining = whole === undefined ? Math.max(used, 1) : Math.max(whole - used, used / 2)
      return { deadline: r.deadline, remaining }
    })
    // When request i finishes: after the work of those ahead of it and its own, and of each of the
    // next ones that can run beside it (fewer than `concurrency` places behind), as much as its own.
    const finish = (queue: { remaining: number }[], i: number) => {
      let work = 0
      const own = queue[i]!.remaining
      for (let j = 0; j < Math.min(queue.length, i + this.concurrency); j++) work += j <= i ? queue[j]!.remaining : Math.min(queue[j]!.remaining, own)
      return now + MARGIN * work
    }
    const withNewcomer = [...inServer, { deadline, remaining: own }]
    const needed = finish(withNewcomer, inServer.length) - now
    const left = `about ${Math.round(needed)} ms of work at this server's measured speed, ${Math.max(0, Math.round(deadline - now))} ms left`
    if (now + needed > deadline) throw refusal(`the ${this.inFlight} requests ahead would not leave this one time to finish before its deadline (${left})`, (now + needed - deadline) / MARGIN)
    // Nor may it make a request admitted before it, which would have met its deadline, miss it.
    let late = 0
    for (let i = 0; i < inServer.length; i++) {
      const { deadline: theirs } = inServer[i]!
      if (finish(inServer, i) <= theirs) late = Math.max(late, finish(withNewcomer, i) - theirs)
    }
    if (late > 0) throw refusal(`${busy}, and this one would make an admitted request miss its deadline (${left})`, late / MARGIN)
  }

  /** What a request has used of the server so far (0 while it waits). */
  private used(r: Entry): number {
    return r.virtualStart === undefined ? 0 : this.virtual - r.virtualStart
  }

  /** About when the first running request finishes, in ms from now (for Retry-After). */
  private nextFinish(): number {
    let soonest = Infinity
    for (const r of this.running) {
      const whole = this.estimate(r.field)
      if (whole !== undefined) soonest = Math.min(soonest, Math.max(whole - this.used(r), 0) * this.running.size)
    }
    return Number.isFinite(soonest) ? soonest : 1000
  }
}
