// The LoRA adapter merged into its GGUF base (reader/generation/gguf-merge.ts): half floats both
// ways, Q8_0 blocks as ggml makes them, and on the real base and the shipped QD adapter a merged
// weight equal to W + (alpha / rank)·B·A within half a Q8_0 step, every other tensor copied.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, openSync, readSync, closeSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { DEFAULT_LM_BASE_DIR, DEFAULT_READER_DIR } from '../core/paths.js'
import { dequantize, floatToHalf, halfToFloat, mergeLora, quantizeQ8_0, readGguf, type GgufFile, type GgufTensor } from '../reader/generation/gguf-merge.js'
import { readLmFolder } from '../reader/generation/llama-lm.js'
import { prerequisite } from './helpers/prerequisite.js'

const folder = join(DEFAULT_READER_DIR, 'qd-lm')
const base = join(DEFAULT_LM_BASE_DIR, readLmFolder(folder).base.file)
const adapter = join(folder, 'adapter.gguf')
const skip = prerequisite(existsSync(base) ? false : `needs the decoder's base model ${base}: run scripts/assets lm-base`)
const dir = mkdtempSync(join(tmpdir(), 'gguf-merge-'))
after(() => rmSync(dir, { recursive: true, force: true }))

test('half floats: exact values both ways, ties to even, subnormals and overflow', () => {
  for (const [v, h] of [[1, 0x3c00], [-2, 0xc000], [0.5, 0x3800], [65504, 0x7bff], [2 ** -24, 0x0001], [0, 0]] as const) {
    assert.equal(floatToHalf(v), h, `${v}`)
    assert.equal(halfToFloat(h), v)
  }
  assert.equal(floatToHalf(1 + 2 ** -11), 0x3c00, 'a tie goes to the even neighbour')
  assert.equal(floatToHalf(1 + 3 * 2 ** -11), 0x3c02)
  assert.equal(floatToHalf(1e6), 0x7c00, 'too big: infinity')
})

test('Q8_0: d = max|x| / 127, values rounded half away from zero, and back within half a step', () => {
  const x = new Float32Array(64).map((_, i) => Math.sin(i) * (i < 32 ? 3 : 0.01))
  x[5] = -3.5
  const q = quantizeQ8_0(x)
  assert.equal(q.length, 2 * 34)
  assert.equal(q.readInt8(2 + 5), -127, 'the largest magnitude maps to ±127')
  const y = dequantize(q, 8, 64)
  for (let b = 0; b < 2; b++) {
    const step = halfToFloat(q.readUInt16LE(34 * b))
    for (let j = 0; j < 32; j++) assert.ok(Math.abs(y[32 * b + j]! - x[32 * b + j]!) <= step / 2 + 1e-3 * step, `value ${32 * b + j}`)
  }
  assert.deepEqual([...dequantize(quantizeQ8_0(new Float32Array(32)), 8, 32)], new Array(32).fill(0), 'an all-zero block')
  assert.throws(() => quantizeQ8_0(new Float32Array(31)), /whole Q8_0 blocks/)
})

function tensorData(f: GgufFile, t: GgufTensor): Buffer {
  const fd = openSync(f.path, 'r')
  try {
    const b = Buffer.alloc(t.bytes)
    readSync(fd, b, 0, t.bytes, f.dataStart + t.offset)
    return b
  } finally {
    closeSync(fd)
  }
}

test('the shipped QD adapter merged into the real base: W + (alpha / rank)·B·A in Q8_0, the rest copied', { skip, timeout: 180_000 }, () => {
  const out = join(dir, 'merged.gguf')
  const merged = mergeLora(base, adapter, out)
  assert.ok(!existsSync(`${out}.part`))
  const [b, a, m] = [readGguf(base), readGguf(adapter), readGguf(out)]
  const loras = new Set(a.tensors.map((t) => t.name))
  const expected = b.tensors.filter((t) => loras.has(`${t.name}.lora_a`))
  assert.ok(expected.length > 0)
  assert.equal(merged, expected.length)
  assert.deepEqual(m.tensors.map((t) => [t.name, t.dims]), b.tensors.map((t) => [t.name, t.dims]))
  assert.deepEqual(m.kv, b.kv, 'the metadata is copied byte for byte')
  for (const [i, t] of m.tensors.entries()) {
    const was = b.tensors[i]!
    if (loras.has(`${t.name}.lora_a`)) assert.equal(t.type, 8, `${t.name} is Q8_0`)
    else {
      assert.equal(t.type, was.type)
      if (t.bytes < 1 << 20) assert.ok(tensorData(m, t).equals(tensorData(b, was)), `${t.name} copied`)
    }
  }
  // One merged weight checked against its own arithmetic, in float64.
  const w = expected.find((t) => t.name === 'blk.3.ffn_down.weight') ?? expected[0]!
  const [inF, outF] = w.dims as [number, number]
  const A = a.tensors.find((t) => t.name === `${w.name}.lora_a`)!
  const B = a.tensors.find((t) => t.name === `${w.name}.lora_b`)!
  const rank = A.dims[1]!
  const scale = Number(a.meta.get('adapter.lora.alpha')) / rank
  const W = dequantize(tensorData(b, w), w.type, inF * outF)
  const Av = dequantize(tensorData(a, A), A.type, inF * rank)
  const Bv = dequantize(tensorData(a, B), B.type, rank * outF)
  const mt = m.tensors.find((t) => t.name === w.name)!
  const raw = tensorData(m, mt)
  const M = dequantize(raw, 8, inF * outF)
  let delta = 0
  for (let o = 0; o < outF; o += 37) {
    for (let k = 0; k < inF; k++) {
      let d = 0
      for (let r = 0; r < rank; r++) d += Bv[o * rank + r]! * Av[r * inF + k]!
      const want = W[o * inF + k]! + scale * d
      const step = halfToFloat(raw.readUInt16LE(34 * Math.floor((o * inF + k) / 32)))
      // Half a step, and d's own rounding to half precision (2^-11 of it, times |q| ≤ 127).
      assert.ok(Math.abs(M[o * inF + k]! - want) <= 0.57 * step + 1e-7, `${w.name}[${o}, ${k}]: ${M[o * inF + k]} against ${want}`)
      delta = Math.max(delta, Math.abs(scale * d))
    }
  }
  assert.ok(delta > 1e-3, 'the adapter changed the weight')
})

test('a file that is not GGUF is refused', () => {
  assert.throws(() => readGguf(join(DEFAULT_READER_DIR, 'qd-lm', 'lm.json')), /not a GGUF file/)
})
