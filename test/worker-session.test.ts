// The extractive reader's model runs in a worker thread (core/worker-session.ts) so that
// onnxruntime's synchronous run does not hold the server's event loop. Against the shipped int8
// reader: the same logits as a session on the main thread, a release that waits for the runs in
// flight, and runs after it that fail with a code instead of waiting forever.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import ort from '../core/onnx-runtime.js'
import { createSession, defaultSessionOptions } from '../core/onnx-session.js'
import { DEFAULT_READER_DIR } from '../core/paths.js'
import { WorkerSession } from '../core/worker-session.js'
import { prerequisite } from './helpers/prerequisite.js'

const model = join(DEFAULT_READER_DIR, 'extractive', 'model_quantized.onnx')
const skip = prerequisite(existsSync(model) ? false : `no shipped extractive reader at ${model} (scripts/train-defaults builds it)`)

/** Two rows of different lengths, the second padded, as the reader batches them. */
function feeds(): Record<string, ort.Tensor> {
  const rows = [[101, 2040, 2626, 4302, 102, 4302, 10693, 2003, 1037, 2186, 102], [101, 2043, 102, 1996, 2143, 102]]
  const length = rows[0]!.length
  const ids = new BigInt64Array(2 * length)
  const mask = new BigInt64Array(2 * length)
  rows.forEach((row, r) => row.forEach((t, j) => { ids[r * length + j] = BigInt(t); mask[r * length + j] = 1n }))
  return { input_ids: new ort.Tensor('int64', ids, [2, length]), attention_mask: new ort.Tensor('int64', mask, [2, length]), token_type_ids: new ort.Tensor('int64', new BigInt64Array(2 * length), [2, length]) }
}

test('a session in a worker gives the main-thread session\'s outputs, bit for bit', { skip }, async () => {
  const here = await createSession(model, defaultSessionOptions)
  const there = await WorkerSession.create(model, defaultSessionOptions)
  try {
    assert.deepEqual([...there.outputNames], [...here.outputNames])
    const want = await here.run(feeds())
    const got = await there.run(feeds())
    assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort())
    for (const name of Object.keys(want)) {
      assert.deepEqual(got[name]!.dims, want[name]!.dims, name)
      assert.ok((want[name]!.data as Float32Array).length > 0, name)
      assert.deepEqual(got[name]!.data, want[name]!.data, name)
    }
  } finally {
    await here.release()
    await there.release()
  }
})

test('release lets the runs already sent finish (stopping onnxruntime mid-run aborts the process); later runs fail with AMBIGQA_ERR_INTERNAL', { skip }, async () => {
  const session = await WorkerSession.create(model, defaultSessionOptions)
  const waiting = session.run(feeds())
  await session.release()
  const outputs = await waiting
  assert.ok((outputs.start_logits!.data as Float32Array).length > 0)
  await assert.rejects(session.run(feeds()), { code: 'AMBIGQA_ERR_INTERNAL', message: /released/ })
  await session.release()
})

test('a model file that is not a model fails at load, and the worker is gone', { skip }, async () => {
  await assert.rejects(WorkerSession.create(join(DEFAULT_READER_DIR, 'extractive', 'tokenizer.json'), defaultSessionOptions), /protobuf|model|parse|load/i)
})
