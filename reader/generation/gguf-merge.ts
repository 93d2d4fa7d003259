// A LoRA adapter merged into its GGUF base, once, so that llama.cpp serves one model without an
// adapter: W' = W + (alpha / rank) · B·A for every weight the adapter names, stored as Q8_0 (the
// base's own Q4_K/Q5_0/Q6_K/Q8_0 blocks dequantised first, exactly as llama.cpp dequantises them);
// every other tensor and all the metadata are copied byte for byte. Why: with the adapter applied
// at run time llama.cpp reads a prompt at 515 tokens/s and writes 36 tokens/s on two cores; the
// merged Q8_0 model reads 980 and writes 48, and its batched logits equal its one-step logits
// where the adapter's do not, which keeps prompt-lookup decoding greedy (BENCHMARKS.md, "QD
// latency").
//
// GGUF v3: magic, version, tensor and key-value counts; the key-values; the tensor infos (name,
// dims, type, offset into the data); the data, each tensor at a multiple of general.alignment.
import { closeSync, fstatSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs'

const GGUF_MAGIC = 0x46554747 // "GGUF" little-endian
enum T { F32 = 0, F16 = 1, Q4_0 = 2, Q5_0 = 6, Q8_0 = 8, Q4_K = 12, Q6_K = 14 }
/** Elements per block and bytes per block of the types read here. */
const BLOCK: Record<number, [number, number]> = {
  [T.F32]: [1, 4], [T.F16]: [1, 2], [T.Q4_0]: [32, 18], [T.Q5_0]: [32, 22], [T.Q8_0]: [32, 34], [T.Q4_K]: [256, 144], [T.Q6_K]: [256, 210],
}
/** Bytes of a fixed-size GGUF metadata value, by its type id (8 string and 9 array are read apart). */
const VALUE_BYTES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 }

export interface GgufTensor {
  name: string
  dims: number[]
  type: number
  /** Byte offset in the data section. */
  offset: number
  bytes: number
}

export interface GgufFile {
  path: string
  version: number
  /** The key-value section as it is in the file, and how many keys it holds. */
  kv: Buffer
  kvCount: number
  /** Scalar keys' values (numbers, strings, booleans); arrays are skipped. */
  meta: Map<string, number | string | boolean | bigint>
  tensors: GgufTensor[]
  alignment: number
  /** Where the data section starts in the file. */
  dataStart: number
}

class Cursor {
  pos = 0
  constructor(readonly buf: Buffer) {}
  u32(): number { const v = this.buf.readUInt32LE(this.pos); this.pos += 4; return v }
  u64(): number {
    const v = this.buf.readBigUInt64LE(this.pos); this.pos += 8
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`a GGUF count or size of ${v} is not one this reader takes`)
    return Number(v)
  }
  str(): string {
    const n = this.u64()
    if (this.pos + n > this.buf.length) throw new RangeError('a GGUF string runs past what was read')
    const s = this.buf.toString('utf8', this.pos, this.pos + n)
    this.pos += n
    return s
  }
  value(type: number): number | string | boolean | bigint | undefined {
    if (type === 8) return this.str()
    if (type === 9) {
      const inner = this.u32()
      const n = this.u64()
      if (inner === 8) for (let i = 0; i < n; i++) this.str()
      else if (VALUE_BYTES[inner] !== undefined) this.pos += n * VALUE_BYTES[inner]!
      else throw new Error(`GGUF array of type ${inner} is not one this reader takes`)
      return undefined
    }
    const size = VALUE_BYTES[type]
    if (size === undefined) throw new Error(`GGUF value type ${type} is not one this reader takes`)
    const b = this.buf
    const at = this.pos
    this.pos += size
    switch (type) {
      case 0: return b.readUInt8(at)
      case 1: return b.readInt8(at)
      case 2: return b.readUInt16LE(at)
      case 3: return b.readInt16LE(at)
      case 4: return b.readUInt32LE(at)
      case 5: return b.readInt32LE(at)
      case 6: return b.readFloatLE(at)
      case 7: return b.readUInt8(at) !== 0
      case 10: return b.readBigUInt64LE(at)
      case 11: return b.readBigInt64LE(at)
      default: return b.readDoubleLE(at)
    }
  }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.alloc(length)
  let done = 0
  while (done < length) {
    const n = readSync(fd, buf, done, length - done, position + done)
    if (n === 0) throw new Error(`unexpected end of file at byte ${position + done}`)
    done += n
  }
  return buf
}

function tensorBytes(type: number, elements: number, name: string): number {
  const block = BLOCK[type]
  if (!block) throw new Error(`tensor ${name} has GGML type ${type}, which this reader does not take`)
  if (elements % block[0] !== 0) throw new Error(`tensor ${name}: ${elements} elements are not whole blocks of ${block[0]}`)
  return (elements / block[0]) * block[1]
}

/** The header, metadata and tensor infos of a GGUF file (its tensors' data stays on disk). */
export function readGguf(path: string): GgufFile {
  const fd = openSync(path, 'r')
  try {
    // The header of a small model fits in its first megabytes; read more when it does not.
    for (let size = 16 << 20; ; size *= 2) {
      const c = new Cursor(readAt(fd, 0, Math.min(size, fileSize(fd))))
      try {
        if (c.u32() !== GGUF_MAGIC) throw new Error(`${path} is not a GGUF file`)
        const version = c.u32()
        if (version !== 3) throw new Error(`${path} is GGUF version ${version}; this reader takes version 3`)
        const tensorCount = c.u64()
        const kvCount = c.u64()
        const kvStart = c.pos
        const meta = new Map<string, number | string | boolean | bigint>()
        for (let i = 0; i < kvCount; i++) {
          const key = c.str()
          const v = c.value(c.u32())
          if (v !== undefined) meta.set(key, v)
        }
        const kv = Buffer.from(c.buf.subarray(kvStart, c.pos))
        const tensors: GgufTensor[] = []
        for (let i = 0; i < tensorCount; i++) {
          const name = c.str()
          const dims = Array.from({ length: c.u32() }, () => c.u64())
          const type = c.u32()
          const offset = c.u64()
          tensors.push({ name, dims, type, offset, bytes: tensorBytes(type, dims.reduce((a, b) => a * b, 1), name) })
        }
        const alignment = Number(meta.get('general.alignment') ?? 32)
        return { path, version, kv, kvCount, meta, tensors, alignment, dataStart: align(c.pos, alignment) }
      } catch (e) {
        if (e instanceof RangeError && size < fileSize(fd)) continue // the header runs past what was read
        throw e
      }
    }
  } finally {
    closeSync(fd)
  }
}

function fileSize(fd: number): number {
  return fstatSync(fd).size
}

function align(n: number, a: number): number {
  return Math.ceil(n / a) * a
}

// IEEE half precision, both ways (Node 20 has no Float16Array).
const f32 = new Float32Array(1)
const u32 = new Uint32Array(f32.buffer)
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1
  const exp = (h >> 10) & 0x1f
  const frac = h & 0x3ff
  if (exp === 0) return sign * frac * 2 ** -24
  if (exp === 31) return frac ? NaN : sign * Infinity
  return sign * (1 + frac / 1024) * 2 ** (exp - 15)
}
/** Round to nearest even, as numpy's and the C compilers' float→half conversions do. */
export function floatToHalf(v: number): number {
  f32[0] = v
  const x = u32[0]!
  const sign = (x >>> 16) & 0x8000
  const exp = (x >>> 23) & 0xff
  let mant = x & 0x7fffff
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0)
  let e = exp - 127 + 15
  if (e >= 31) return sign | 0x7c00
  if (e <= 0) {
    if (e < -10) return sign
    mant |= 0x800000
    const shift = 14 - e
    const half = 1 << (shift - 1)
    let r = mant >> shift
    const rest = mant & ((1 << shift) - 1)
    if (rest > half || (rest === half && (r & 1))) r++
    return sign | r
  }
  let r = mant >> 13
  const rest = mant & 0x1fff
  if (rest > 0x1000 || (rest === 0x1000 && (r & 1))) r++
  if (r === 0x400) { r = 0; e++ }
  if (e >= 31) return sign | 0x7c00
  return sign | (e << 10) | r
}

/** A tensor's blocks back to float32, as ggml's dequantize_row_* computes them. */
export function dequantize(data: Buffer, type: number, elements: number): Float32Array {
  const y = new Float32Array(elements)
  const h = (at: number) => halfToFloat(data.readUInt16LE(at))
  switch (type) {
    case T.F32:
      for (let i = 0; i < elements; i++) y[i] = data.readFloatLE(4 * i)
      return y
    case T.F16:
      for (let i = 0; i < elements; i++) y[i] = h(2 * i)
      return y
    case T.Q8_0:
      for (let b = 0; b < elements / 32; b++) {
        const at = 34 * b
        const d = h(at)
        for (let j = 0; j < 32; j++) y[32 * b + j] = d * data.readInt8(at + 2 + j)
      }
      return y
    case T.Q5_0:
      for (let b = 0; b < elements / 32; b++) {
        const at = 22 * b
        const d = h(at)
        const qh = data.readUInt32LE(at + 2)
        for (let j = 0; j < 16; j++) {
          const q = data[at + 6 + j]!
          const x0 = ((q & 0x0f) | (((qh >>> j) << 4) & 0x10)) - 16
          const x1 = ((q >> 4) | ((qh >>> (j + 12)) & 0x10)) - 16
          y[32 * b + j] = x0 * d
          y[32 * b + j + 16] = x1 * d
        }
      }
      return y
    case T.Q4_K:
      for (let b = 0; b < elements / 256; b++) {
        const at = 144 * b
        const d = h(at)
        const dmin = h(at + 2)
        const sc = (j: number): [number, number] => {
          const q = (k: number) => data[at + 4 + k]!
          return j < 4 ? [q(j) & 63, q(j + 4) & 63] : [(q(j + 4) & 0xf) | ((q(j - 4) >> 6) << 4), (q(j + 4) >> 4) | ((q(j) >> 6) << 4)]
        }
        let out = 256 * b
        let qs = at + 16
        for (let j = 0, is = 0; j < 256; j += 64, is += 2, qs += 32) {
          const [s1, m1] = sc(is)
          const [s2, m2] = sc(is + 1)
          for (let l = 0; l < 32; l++) y[out++] = d * s1 * (data[qs + l]! & 0xf) - dmin * m1
          for (let l = 0; l < 32; l++) y[out++] = d * s2 * (data[qs + l]! >> 4) - dmin * m2
        }
      }
      return y
    case T.Q6_K:
      for (let b = 0; b < elements / 256; b++) {
        const at = 210 * b
        const d = h(at + 208)
        for (let n = 0; n < 2; n++) {
          const ql = at + 64 * n
          const qh = at + 128 + 32 * n
          const sc = at + 192 + 8 * n
          const out = 256 * b + 128 * n
          for (let l = 0; l < 32; l++) {
            const is = l >> 4
            const hq = data[qh + l]!
            const q1 = ((data[ql + l]! & 0xf) | ((hq & 3) << 4)) - 32
            const q2 = ((data[ql + l + 32]! & 0xf) | (((hq >> 2) & 3) << 4)) - 32
            const q3 = ((data[ql + l]! >> 4) | (((hq >> 4) & 3) << 4)) - 32
            const q4 = ((data[ql + l + 32]! >> 4) | (((hq >> 6) & 3) << 4)) - 32
            y[out + l] = d * data.readInt8(sc + is) * q1
            y[out + l + 32] = d * data.readInt8(sc + is + 2) * q2
            y[out + l + 64] = d * data.readInt8(sc + is + 4) * q3
            y[out + l + 96] = d * data.readInt8(sc + is + 6) * q4
          }
        }
      }
      return y
    default:
      throw new Error(`GGML type ${type} is not one this merge dequantises`)
  }
}

/** ggml's quantize_row_q8_0_ref: per block of 32, d = max|x| / 127 (as half) and q = round(x / d). */
export function quantizeQ8_0(x: Float32Array): Buffer {
  if (x.length % 32 !== 0) throw new Error(`${x.length} values are not whole Q8_0 blocks`)
  const out = Buffer.alloc((x.length / 32) * 34)
  for (let b = 0; b < x.length / 32; b++) {
    let amax = 0
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[32 * b + j]!))
    const d = Math.fround(amax / 127)
    const id = d === 0 ? 0 : Math.fround(1 / d)
    out.writeUInt16LE(floatToHalf(d), 34 * b)
    for (let j = 0; j < 32; j++) {
      const v = Math.fround(x[32 * b + j]! * id)
      out.writeInt8(Math.sign(v) * Math.round(Math.abs(v)), 34 * b + 2 + j) // roundf: half away from zero
    }
  }
  return out
}

/**
 * Writes `base` with `adapter` (a llama.cpp LoRA GGUF: `<weight>.lora_a` [rank × in],
 * `<weight>.lora_b` [out × rank], `adapter.lora.alpha`) merged into it, to `out` (through `part`,
 * renamed when whole). Returns how many weights were merged.
 */
export function mergeLora(basePath: string, adapterPath: string, out: string, part = `${out}.part`): number {
  const base = readGguf(basePath)
  const adapter = readGguf(adapterPath)
  const alpha = Number(adapter.meta.get('adapter.lora.alpha'))
  if (!Number.isFinite(alpha)) throw new Error(`${adapterPath} has no adapter.lora.alpha: not a llama.cpp LoRA adapter`)
  const loras = new Map(adapter.tensors.map((t) => [t.name, t]))
  const baseFd = openSync(basePath, 'r')
  const adapterFd = openSync(adapterPath, 'r')
  const data = (f: GgufFile, fd: number, t: GgufTensor) => readAt(fd, f.dataStart + t.offset, t.bytes)
  // The new tensor infos: merged weights become Q8_0, and every offset is laid out again.
  const planned = base.tensors.map((t) => {
    const merge = loras.has(`${t.name}.lora_a`)
    const elements = t.dims.reduce((a, b) => a * b, 1)
    return { t, merge, type: merge ? T.Q8_0 : t.type, bytes: merge ? tensorBytes(T.Q8_0, elements, t.name) : t.bytes }
  })
  let offset = 0
  const offsets = planned.map((p) => { const at = offset; offset = align(offset + p.bytes, base.alignment); return at })
  const infos: Buffer[] = planned.map((p, i) => {
    const name = Buffer.from(p.t.name, 'utf8')
    const b = Buffer.alloc(8 + name.length + 4 + 8 * p.t.dims.length + 4 + 8)
    let at = b.writeBigUInt64LE(BigInt(name.length), 0)
    at += name.copy(b, at)
    at = b.writeUInt32LE(p.t.dims.length, at)
    for (const d of p.t.dims) at = b.writeBigUInt64LE(BigInt(d), at)
    at = b.writeUInt32LE(p.type, at)
    b.writeBigUInt64LE(BigInt(offsets[i]!), at)
    return b
  })
  const header = Buffer.alloc(24)
  header.writeUInt32LE(GGUF_MAGIC, 0)
  header.writeUInt32LE(3, 4)
  header.writeBigUInt64LE(BigInt(base.tensors.length), 8)
  header.writeBigUInt64LE(BigInt(base.kvCount), 16)
  const fd = openSync(part, 'w')
  let merged = 0
  try {
    let pos = 0
    const write = (b: Buffer) => { let done = 0; while (done < b.length) done += writeSync(fd, b, done, b.length - done, pos + done); pos += b.length }
    const pad = (to: number) => { if (to > pos) write(Buffer.alloc(to - pos)) }
    write(header)
    write(base.kv)
    for (const b of infos) write(b)
    const dataStart = align(pos, base.alignment)
    pad(dataStart)
    for (const [i, p] of planned.entries()) {
      pad(dataStart + offsets[i]!)
      if (!p.merge) { write(data(base, baseFd, p.t)); continue }
      const a = loras.get(`${p.t.name}.lora_a`)!
      const bt = loras.get(`${p.t.name}.lora_b`)
      if (!bt) throw new Error(`${adapterPath} has ${a.name} without its lora_b`)
      // ggml dims run fastest first: a weight [in, out] is `out` rows of `in`; lora_a [in, rank]
      // is `rank` rows of `in`; lora_b [rank, out] is `out` rows of `rank`.
      const [inF, outF] = p.t.dims as [number, number]
      const rank = a.dims[1]!
      if (a.dims[0] !== inF || bt.dims[0] !== rank || bt.dims[1] !== outF) throw new Error(`${p.t.name}: the adapter's shapes [${a.dims}] and [${bt.dims}] do not fit the weight's [${p.t.dims}]`)
      const w = dequantize(data(base, baseFd, p.t), p.t.type, inF * outF)
      const A = dequantize(data(adapter, adapterFd, a), a.type, inF * rank)
      const B = dequantize(data(adapter, adapterFd, bt), bt.type, rank * outF)
      const scale = alpha / rank
      const row = new Float64Array(inF)
      for (let o = 0; o < outF; o++) {
        row.fill(0)
        for (let r = 0; r < rank; r++) {
          const s = B[o * rank + r]! * scale
          if (s === 0) continue
          for (let k = 0; k < inF; k++) row[k] = row[k]! + s * A[r * inF + k]!
        }
        for (let k = 0; k < inF; k++) w[o * inF + k] = w[o * inF + k]! + row[k]!
      }
      write(quantizeQ8_0(w))
      merged++
    }
    pad(dataStart + offset)
  } catch (e) {
    closeSync(fd)
    rmSync(part, { force: true })
    throw e
  } finally {
    closeSync(baseFd)
    closeSync(adapterFd)
  }
  closeSync(fd)
  renameSync(part, out)
  return merged
}
