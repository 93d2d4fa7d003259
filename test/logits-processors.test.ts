// The logits processors on their own: the forced end at max length wins over a span constraint
// that forbids it (a row with every token at -Infinity has no distribution: NaN log-probs).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { builtinGenerationDefaults } from '../reader/generation/generation-options.js'
import { logSoftmax, processScores } from '../reader/generation/logits-processors.js'

const options = { ...builtinGenerationDefaults, forcedEosTokenId: 2 }

test('a constraint keeps only its tokens', () => {
  const scores = new Float32Array([1, 2, 3, 4])
  processScores(scores, [0], { options, maxLength: 10, eosTokenIds: [2], constraint: () => [1, 3] })
  assert.deepEqual([...scores], [-Infinity, 2, -Infinity, 4])
})

test('at max length the forced end wins over a constraint that excludes it', () => {
  const scores = new Float32Array([1, 2, 3, 4])
  processScores(scores, [0, 5, 6], { options, maxLength: 4, eosTokenIds: [2], constraint: () => [1, 3] })
  logSoftmax(scores)
  assert.equal(scores[2], 0)
  assert.ok([...scores].every((s) => !Number.isNaN(s)))
})
