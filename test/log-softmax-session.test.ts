// The beam search's log_softmax in onnxruntime (reader/generation/log-softmax-session.ts): the
// graph written by hand loads, computes what the JS loop computes, and a row's values do not
// depend on the rows beside it (batched rewrites stay each question's own).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { logSoftmax } from '../reader/generation/logits-processors.js'
import { LogSoftmaxSession } from '../reader/generation/log-softmax-session.js'

test('log_softmax in onnxruntime equals the JS loop to float32 precision, row by row, alone or batched', async () => {
  const vocab = 30523
  let seed = 7
  const random = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31 }
  const rows = Array.from({ length: 5 }, () => Float32Array.from({ length: vocab }, () => random() * 30 - 15))
  const session = await LogSoftmaxSession.create(2)
  try {
    const batched = await session.run(Float32Array.from(rows.flatMap((r) => [...r])), rows.length)
    assert.equal(batched.length, rows.length * vocab)
    for (const [i, row] of rows.entries()) {
      const expected = row.slice()
      logSoftmax(expected)
      const alone = await session.run(row.slice(), 1)
      const inBatch = batched.subarray(i * vocab, (i + 1) * vocab)
      assert.deepEqual(alone, inBatch.slice(), `row ${i}: the same values alone and batched`)
      let worst = 0
      for (let v = 0; v < vocab; v++) worst = Math.max(worst, Math.abs(alone[v]! - expected[v]!))
      assert.ok(worst < 1e-4, `row ${i}: at most ${worst} from the JS log_softmax`)
      let mass = 0
      for (let v = 0; v < vocab; v++) mass += Math.exp(alone[v]!)
      assert.ok(Math.abs(mass - 1) < 1e-4, `row ${i}: probabilities sum to ${mass}`)
    }
  } finally {
    await session.release()
  }
})
