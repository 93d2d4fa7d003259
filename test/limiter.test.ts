// The request limiter's admission on its own clock: what it learns a request costs from the work
// that finishes, and whom it refuses at once because the work in the server would not leave time
// before a deadline. Work here is a promise the test settles while it moves the clock: no timings.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Limiter, type Refusal } from '../src/server/limiter.js'

const never = new AbortController().signal
const tick = () => new Promise((resolve) => setImmediate(resolve))

/** A limiter on a clock the test moves; `take(ms)` is work that takes ms on it alone; `held()` is
 * work that runs until the test calls the release it gets. */
function clocked(concurrency: number, queue = 100) {
  const clock = { t: 0 }
  const limiter = new Limiter(concurrency, queue, () => clock.t)
  const take = (ms: number) => async () => { clock.t += ms }
  const releases: (() => void)[] = []
  const held = () => new Promise<void>((resolve) => { releases.push(resolve) })
  /** Settles the held work in the order it started, letting each finish before the next. */
  const releaseAll = async () => { while (releases.length > 0) { releases.shift()!(); await tick() } }
  return { clock, limiter, take, held, releases, releaseAll }
}

/** How a run ended: 'ran', or the error's code. */
const outcome = (run: Promise<unknown>) => run.then(() => 'ran', (error: Error & { code?: string }) => error.code ?? error.message)

/** Whether a promise has settled by the next turn of the event loop (with the clock not moved). */
async function settledAtOnce(run: Promise<unknown>): Promise<boolean> {
  let settled = false
  run.then(() => { settled = true }, () => { settled = true })
  await tick()
  return settled
}

test('a request\'s cost is its share of the server: two that ran together for 200 ms cost 100 ms each, learnt as they finish', async () => {
  const { clock, limiter, held, releaseAll } = clocked(2)
  assert.equal(limiter.service('ask'), undefined, 'nothing measured yet')
  const both = [limiter.run('ask', Infinity, never, held), limiter.run('search', Infinity, never, held)]
  clock.t += 200
  await releaseAll()
  await Promise.all(both)
  assert.deepEqual(limiter.service('ask'), { mean: 100, deviation: 50, samples: 1 })
  assert.deepEqual(limiter.service('search'), { mean: 100, deviation: 50, samples: 1 })
  // One alone for 100 ms costs what it took: the estimate is learnt from this machine's work.
  await limiter.run('ask', Infinity, never, async () => { clock.t += 100 })
  assert.equal(limiter.service('ask')!.mean, 100)
  assert.equal(limiter.service('ask')!.samples, 2)
  assert.equal(limiter.service('askMany'), undefined, 'each kind learns its own')
})

test('the estimate follows the machine: slower work raises it at once, and one running past it lifts it while it runs', async () => {
  const { clock, limiter, take, held, releaseAll } = clocked(1)
  for (let i = 0; i < 5; i++) await limiter.run('ask', Infinity, never, take(100))
  const steady = limiter.estimate('ask')!
  assert.ok(steady >= 100 && steady < 200, `steady estimate ${steady} ms for 100 ms requests`)
  await limiter.run('ask', Infinity, never, take(1000))
  const after = limiter.estimate('ask')!
  assert.ok(after > 2 * steady, `one 1,000 ms request moves the estimate from ${steady} to ${after} ms`)
  for (let i = 0; i < 20; i++) await limiter.run('ask', Infinity, never, take(1000))
  assert.ok(Math.abs(limiter.service('ask')!.mean - 1000) < 100, 'a machine that stays slower is learnt')
  const slow = limiter.run('ask', Infinity, never, held)
  clock.t += 5000
  assert.ok(limiter.estimate('ask')! >= 5000, 'a request running 5 s says a request of its kind can take that long')
  await releaseAll()
  await slow
})

test('a newcomer the work ahead leaves no time for is refused at once (503 and Retry-After), even with a slot free, and never runs', async () => {
  const { clock, limiter, take, held, releaseAll } = clocked(8)
  for (let i = 0; i < 3; i++) await limiter.run('ask with rewrites', Infinity, never, take(4000))
  // Six asks running on 8 slots: some 24 s of the server's work ahead (counted at 51 s: 6 × 4 s
  // and four deviations each).
  const running = Array.from({ length: 6 }, () => limiter.run('ask with rewrites', clock.t + 120_000, never, held))
  let ran = false
  const refused = limiter.run('ask with rewrites', clock.t + 30_000, never, async () => { ran = true })
  assert.ok(await settledAtOnce(refused), 'refused on arrival, not when work ahead finishes')
  await assert.rejects(refused, (error: Refusal) => {
    assert.equal(error.code, 'AMBIGQA_ERR_OVERLOADED')
    assert.equal(error.statusCode, 503)
    assert.match(error.message, /would not leave this one time to finish before its deadline/)
    assert.ok(error.retryAfterSeconds >= 1, `Retry-After ${error.retryAfterSeconds} s`)
    return true
  })
  assert.equal(ran, false)
  // One whose deadline leaves room comes in, and runs on the free slot.
  const patient = limiter.run('ask with rewrites', clock.t + 120_000, never, async () => 'answered')
  assert.equal(await patient, 'answered')
  await releaseAll()
  await Promise.all(running)
})

test('work that would push an admitted request past its deadline is refused, though it has time of its own', async () => {
  const { clock, limiter, take, held, releaseAll } = clocked(4)
  await limiter.run('ask', Infinity, never, take(1000))
  const admitted = limiter.run('ask', clock.t + 5000, never, held)
  // The newcomer has all the time it needs, but sharing the server with it the first would be
  // counted at 2 × 3 s × 1.2 (a mean of 1 s and four deviations of 0.5 s each) and miss its 5 s.
  const newcomer = limiter.run('ask', clock.t + 60_000, never, held)
  assert.ok(await settledAtOnce(newcomer))
  await assert.rejects(newcomer, /would make an admitted request miss its deadline/)
  await releaseAll()
  await admitted
})

test('a request running past its estimate counts half what it has used as still to come: a newcomer beside it that would make it late is refused', async () => {
  const { clock, limiter, take, held, releaseAll } = clocked(4)
  for (let i = 0; i < 8; i++) await limiter.run('ask', Infinity, never, take(1000))
  assert.ok(limiter.estimate('ask')! < 1500)
  const dear = limiter.run('ask', clock.t + 9000, never, held)
  clock.t += 5000
  // 4 s left; alone, the 2.5 s still counted to come fit (× 1.2); shared with a newcomer, they do not.
  const newcomer = limiter.run('ask', clock.t + 30_000, never, held)
  assert.ok(await settledAtOnce(newcomer))
  await assert.rejects(newcomer, /would make an admitted request miss its deadline/)
  await releaseAll()
  await dear
})

test('before one of a kind has finished, one runs at a time and the others are refused at once; an idle server admits anything', async () => {
  const { clock, limiter, held, releaseAll } = clocked(8)
  const probe = limiter.run('ask with rewrites', clock.t + 30_000, never, held)
  const second = limiter.run('ask with rewrites', clock.t + 30_000, never, held)
  assert.ok(await settledAtOnce(second))
  assert.equal(await outcome(second), 'AMBIGQA_ERR_OVERLOADED')
  const otherKind = limiter.run('search', clock.t + 30_000, never, held)
  assert.equal(limiter.inFlight, 2, 'another kind has its own probe')
  clock.t += 60_000
  await releaseAll()
  await Promise.all([probe, otherKind])
  // Its kind now costs more than a deadline, yet alone it runs: refused, it would teach nothing.
  assert.ok(limiter.estimate('ask with rewrites')! > 30_000)
  assert.equal(await outcome(limiter.run('ask with rewrites', clock.t + 30_000, never, async () => { clock.t += 3000 })), 'ran')
})

test('only finished work teaches: a failure that is not an abort is not learnt, an aborted run only when it raises the estimate', async () => {
  const { clock, limiter, take } = clocked(1)
  for (let i = 0; i < 3; i++) await limiter.run('ask', Infinity, never, take(1000))
  const before = limiter.service('ask')!
  await assert.rejects(limiter.run('ask', Infinity, never, async () => { clock.t += 1; throw new Error('bad question') }))
  assert.deepEqual(limiter.service('ask'), before, 'a question refused in 1 ms says nothing of what an ask costs')
  const quickAbort = new AbortController()
  await assert.rejects(limiter.run('ask', Infinity, quickAbort.signal, async () => { clock.t += 10; quickAbort.abort(); throw new Error('aborted') }))
  assert.deepEqual(limiter.service('ask'), before, 'cut short at 10 ms: less than it would have cost')
  const lateAbort = new AbortController()
  await assert.rejects(limiter.run('ask', Infinity, lateAbort.signal, async () => { clock.t += 9000; lateAbort.abort(); throw new Error('timed out') }))
  assert.ok(limiter.service('ask')!.mean > before.mean, 'an abort after 9 s says an ask can cost at least that')
})

test('a run cut at its deadline that still answers (rewrites stopped) teaches as a cut run: only when it raises the estimate', async () => {
  const { clock, limiter, take } = clocked(1)
  for (let i = 0; i < 3; i++) await limiter.run('ask with rewrites', Infinity, never, take(1000))
  const before = limiter.service('ask with rewrites')!
  const early = new AbortController()
  assert.equal(await limiter.run('ask with rewrites', Infinity, early.signal, async () => { clock.t += 10; early.abort(); return 'answers, rewrites stopped' }), 'answers, rewrites stopped')
  assert.deepEqual(limiter.service('ask with rewrites'), before, 'answered with less after 10 ms: not what a whole one costs')
  const late = new AbortController()
  await limiter.run('ask with rewrites', Infinity, late.signal, async () => { clock.t += 9000; late.abort(); return 'answers, rewrites stopped' })
  assert.ok(limiter.service('ask with rewrites')!.mean > before.mean, 'stopped after 9 s: a whole one costs at least that')
})

test('a queued request whose client goes away leaves the queue; the queue\'s bound refuses at once', async () => {
  const { limiter, take, held, releaseAll } = clocked(1, 1)
  await limiter.run('ask', Infinity, never, take(10))
  const running = limiter.run('ask', Infinity, never, held)
  const gone = new AbortController()
  const queued = limiter.run('ask', Infinity, gone.signal, async () => 'ran')
  assert.equal(limiter.inFlight, 2)
  const full = limiter.run('ask', Infinity, never, async () => 'ran')
  assert.ok(await settledAtOnce(full))
  assert.equal(await outcome(full), 'AMBIGQA_ERR_OVERLOADED')
  gone.abort(new Error('the client closed the connection'))
  await assert.rejects(queued, /client closed/)
  assert.equal(limiter.inFlight, 1)
  await releaseAll()
  await running
  assert.equal(limiter.inFlight, 0)
})
