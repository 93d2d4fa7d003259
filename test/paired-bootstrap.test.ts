import { test } from 'node:test'
import assert from 'node:assert/strict'
import { pairedBootstrap } from '../bench/paired-bootstrap.js'

test('paired bootstrap: no change, a uniform change, and an interval around a mixed one', () => {
  const before = [0, 0.5, 1, 0.25, 0.8]
  assert.deepEqual(pairedBootstrap(before, before), { difference: 0, low: 0, high: 0, changed: 0 })
  const shifted = pairedBootstrap(before, before.map((x) => x + 0.25))
  assert.ok(Math.abs(shifted.difference - 0.25) < 1e-12 && Math.abs(shifted.low - 0.25) < 1e-12 && Math.abs(shifted.high - 0.25) < 1e-12, 'every question moved alike: no doubt')
  assert.equal(shifted.changed, 5)
  // Half the questions gain 1, half lose 1: the mean is 0 and the interval straddles it.
  const a = Array.from({ length: 200 }, () => 0.5)
  const b = a.map((x, i) => x + (i % 2 === 0 ? 0.5 : -0.5))
  const mixed = pairedBootstrap(a, b)
  assert.equal(mixed.difference, 0)
  assert.ok(mixed.low < 0 && mixed.high > 0 && mixed.high - mixed.low < 0.3, `${mixed.low} to ${mixed.high}`)
  assert.deepEqual(pairedBootstrap(a, b), mixed, 'seeded: the same interval every run')
})

test('paired bootstrap: scores of different questions are refused', () => {
  assert.throws(() => pairedBootstrap([1, 2], [1]), /same questions/)
  assert.throws(() => pairedBootstrap([], []), /same questions/)
})
