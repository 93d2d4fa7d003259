// The request limiter's admission on its own clock: what it expects a request to cost, and whom
// it refuses at the door because the work ahead would not leave time before the deadline.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Limiter } from '../src/server/limiter.js'

const never = new AbortController().signal

/** A limiter on a clock the test moves; `take(ms)` is work that takes ms on it. */
function clocked(concurrency: number) {
  const clock = { t: 0 }
  const limiter = new Limiter(concurrency, 100, () => clock.t)
  const take = (ms: number) => async () => { clock.t += ms }
  return { clock, limiter, take }
}

test('a request much slower than the ones before raises the estimate at once, not a few requests later', async () => {
  const { limiter, take } = clocked(1)
  assert.equal(limiter.estimate('ask'), undefined, 'nothing measured yet')
  for (let i = 0; i < 5; i++) await limiter.run('ask', Infinity, never, take(100))
  const steady = limiter.estimate('ask')!
  assert.ok(steady >= 100 && steady < 200, `steady estimate ${steady} ms for 100 ms requests`)
  await limiter.run('ask', Infinity, never, take(1000))
  // A running average weighting the newest by a fifth said 280 ms here.
  assert.ok(limiter.estimate('ask')! >= 1000, `estimate ${limiter.estimate('ask')} ms after a 1,000 ms request`)
  assert.ok(limiter.estimate('search') === undefined, 'each field learns its own')
})

test('a request running past the estimate makes it at least that long: a newcomer that cannot finish in time is refused', async () => {
  const { clock, limiter, take } = clocked(1)
  await limiter.run('ask', Infinity, never, take(100))
  let finish = () => {}
  const slow = limiter.run('ask', Infinity, never, () => new Promise<void>((resolve) => { finish = resolve }))
  clock.t += 5000
  assert.ok(limiter.estimate('ask')! >= 5000)
  await assert.rejects(limiter.run('ask', clock.t + 3000, never, take(100)), (error: Error & { code?: string }) => {
    assert.equal(error.code, 'AMBIGQA_ERR_OVERLOADED')
    assert.match(error.message, /would not leave this one time to finish before its deadline/)
    return true
  })
  // One whose deadline leaves room waits its turn and runs.
  let ran = false
  const patient = limiter.run('ask', clock.t + 60_000, never, async () => { ran = true })
  assert.equal(limiter.inFlight, 2)
  finish()
  await Promise.all([slow, patient])
  assert.ok(ran)
  assert.equal(limiter.inFlight, 0)
})

test('until a whole round has finished the estimate is unknown, and a burst waits behind at most one round', async () => {
  const { limiter, take } = clocked(2)
  await limiter.run('ask', Infinity, never, take(100))
  assert.equal(limiter.estimate('ask'), undefined, 'one of two: the first to finish ran alone')
  const release: (() => void)[] = []
  const held = () => new Promise<void>((resolve) => { release.push(resolve) })
  const burst = Array.from({ length: 6 }, () => limiter.run('ask', Infinity, never, held).then(() => 'ran', (error: Error & { code?: string }) => error.code))
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(limiter.inFlight, 4, 'two running, two waiting')
  while (release.length > 0 || limiter.inFlight > 0) { release.shift()?.(); await new Promise((resolve) => setImmediate(resolve)) }
  assert.deepEqual((await Promise.all(burst)).sort(), ['AMBIGQA_ERR_OVERLOADED', 'AMBIGQA_ERR_OVERLOADED', 'ran', 'ran', 'ran', 'ran'])
  assert.ok(limiter.estimate('ask') !== undefined, 'a round measured')
})
