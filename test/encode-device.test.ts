// `index encode --device cuda`'s PyTorch path (index/dense/encode-on-device.ts, run here on the
// CPU: the same code a GPU runs, tensors on another device) writes the vectors the ONNX path
// (retriever/dense-vectors.ts) writes: issue 26's bar is cosine >= 0.999 for every passage checked.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import test from 'node:test'
import { gunzipSync } from 'node:zlib'
import { buildIndex } from '../index/build-index.js'
import { silentLogger } from '../core/log.js'
import { DEFAULT_ENCODERS_DIR } from '../core/paths.js'
import { encodeStore } from '../index/dense/store-vectors.js'
import { loadVectors } from '../retriever/dense-vectors.js'
import { PassageStore } from '../retriever/passage-store.js'
import { encodeStoreInPython, parseEncodeDevice } from '../index/dense/encode-on-device.js'
import { prerequisite } from './helpers/prerequisite.js'
import { pythonMissing } from './helpers/reader-fixture.js'

const MODEL = 'e5-small-v2'
const skip = prerequisite(existsSync(join(DEFAULT_ENCODERS_DIR, MODEL, 'model.onnx')) ? false : `needs models/encoders/${MODEL}: run scripts/assets ${MODEL}`) ||
  pythonMissing('index encode --device cuda (PyTorch)')

/** A store of the first n demo passages (a fixed sample of real ones). */
async function demoStore(dir: string, n: number): Promise<string> {
  const lines = gunzipSync(readFileSync(resolve(process.cwd(), 'assets/demo/passages.tsv.gz'))).toString('utf8').split('\n')
  const tsv = join(dir, 'sample.tsv')
  writeFileSync(tsv, `${lines.slice(0, n + 1).join('\n')}\n`)
  const store = join(dir, `store-${Math.random().toString(36).slice(2)}`)
  await buildIndex({ store, sources: [{ path: tsv }], onError: 'fail', batchSize: 1000, segmentSize: 1000, workers: 1, log: silentLogger })
  return store
}

function vectorsOf(store: string): { dim: number; vectors: Float32Array; rows: number } {
  const s = PassageStore.openReadOnly(store)
  try {
    const v = loadVectors(s, MODEL)
    assert.ok(v, `${store} is not fully encoded`)
    return v
  } finally {
    s.close()
  }
}

test('index encode on the PyTorch path writes the ONNX path\'s vectors: cosine >= 0.999 for every passage', { skip, timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'encode-device-'))
  const [viaOnnx, viaTorch] = [await demoStore(dir, 40), await demoStore(dir, 40)]
  const onnx = await encodeStore({ store: viaOnnx, model: MODEL, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 16, chunkSize: 16, log: silentLogger })
  const torch = await encodeStoreInPython({ store: viaTorch, model: MODEL, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 16, chunkSize: 16, device: 'cpu', log: silentLogger })
  assert.equal(onnx.encoded, 40)
  assert.equal(torch.encoded, 40)
  const a = vectorsOf(viaOnnx)
  const b = vectorsOf(viaTorch)
  assert.equal(a.dim, 384)
  assert.equal(b.dim, a.dim)
  assert.equal(b.rows, a.rows)
  const cosines: number[] = []
  for (let row = 1; row < a.rows; row++) {
    let dot = 0
    for (let d = 0; d < a.dim; d++) dot += a.vectors[row * a.dim + d]! * b.vectors[row * b.dim + d]!
    cosines.push(dot)
  }
  assert.equal(cosines.length, 40)
  assert.ok(Math.min(...cosines) >= 0.999, `worst cosine ${Math.min(...cosines)}`)
  // Encoded again, nothing is left to do: both paths resume from the same table.
  const again = await encodeStoreInPython({ store: viaOnnx, model: MODEL, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 16, chunkSize: 16, device: 'cpu', log: silentLogger })
  assert.equal(again.encoded, 0)
})

test('index encode --device: cpu or cuda, anything else a usage error', () => {
  assert.equal(parseEncodeDevice('cpu'), 'cpu')
  assert.equal(parseEncodeDevice('cuda'), 'cuda')
  assert.throws(() => parseEncodeDevice('auto'), /AMBIGQA_ERR_USAGE|is not a device/)
})
