// A SYNTHETIC corpus for scale measurements, made from real passages: synthetic passage i joins
// the first half of one real passage with the second half of another (seeded choice), so term
// statistics stay those of Wikipedia text. Labelled synthetic wherever it is reported.
import { createWriteStream } from 'node:fs'
import { once } from 'node:events'
import type { Passage } from '../core/passage.js'

/** xorshift32: a tiny seeded generator, so the corpus is the same on every machine. */
export function seededRandom(seed: number): () => number {
  let x = seed >>> 0 || 1
  return () => {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x / 2 ** 32
  }
}

/** Which real passages synthetic passage i is made from: the first half of `first[i]`, the
 * second half of `second[i]` (seeded, so the same on every machine). */
export function synthesisPlan(realCount: number, count: number, seed = 42): { first: Int32Array; second: Int32Array } {
  const random = seededRandom(seed)
  const first = new Int32Array(count)
  const second = new Int32Array(count)
  for (let i = 0; i < count; i++) {
    first[i] = Math.floor(random() * realCount)
    second[i] = Math.floor(random() * realCount)
  }
  return { first, second }
}

export function* synthesize(real: readonly Passage[], count: number, seed = 42): Generator<Passage> {
  const { first, second } = synthesisPlan(real.length, count, seed)
  const words = real.map((p) => p.text.split(/\s+/).filter(Boolean))
  for (let i = 0; i < count; i++) {
    const a = words[first[i]!]!
    const b = words[second[i]!]!
    const text = [...a.slice(0, a.length >> 1), ...b.slice(b.length >> 1)].join(' ')
    yield { id: `syn-${i}`, title: real[first[i]!]!.title, text }
  }
}

/** A SYNTHETIC vector: the real vector `source` (unit length) plus Gaussian noise of `sigma` per
 * component, renormalised; the noise is seeded by `seed`, so any row can be made again alone.
 * `real` holds the real vectors row by row; `into` receives the new one. */
export function noisyVector(real: Float32Array, dim: number, source: number, seed: number, into: Float32Array, sigma = 0.02): void {
  // Neighbouring small seeds start xorshift in neighbouring, poorly mixed states: scramble first.
  const random = seededRandom(Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) >>> 0)
  for (let i = 0; i < 4; i++) random()
  const gaussian = () => Math.sqrt(-2 * Math.log(random() || 1e-12)) * Math.cos(2 * Math.PI * random())
  let norm = 0
  for (let d = 0; d < dim; d++) {
    const v = real[source * dim + d]! + sigma * gaussian()
    into[d] = v
    norm += v * v
  }
  norm = Math.sqrt(norm)
  for (let d = 0; d < dim; d++) into[d]! /= norm
}

/** Writes passages as a DPR TSV (quoting fields that hold quotes or tabs). */
export async function writeDprTsv(path: string, passages: Iterable<Passage>): Promise<number> {
  const out = createWriteStream(path)
  const quote = (s: string) => (/["\t\n]/.test(s) ? `"${s.replace(/[\t\n]/g, ' ').replace(/"/g, '""')}"` : s)
  let n = 0
  out.write('id\ttext\ttitle\n')
  for (const p of passages) {
    if (!out.write(`${p.id}\t${quote(p.text)}\t${quote(p.title)}\n`)) await once(out, 'drain')
    n++
  }
  out.end()
  await once(out, 'finish')
  return n
}
