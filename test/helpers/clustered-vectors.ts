// Vectors copied into a store, not computed: the ANN index and the store's vector keeping are
// about vectors, and these need no encoder. Rows fall in 50 clusters, as passages about the same
// subject do, so neighbours are close calls. Seeded: the same seed gives the same vectors.
import type { VectorSource } from '../../index/dense/store-vectors.js'
import { seededRandom } from '../../bench/synthetic-corpus.js'

export function gaussian(random: () => number): () => number {
  return () => Math.sqrt(-2 * Math.log(random() || 1e-12)) * Math.cos(2 * Math.PI * random())
}

export function unit(v: ArrayLike<number>): Float32Array {
  const out = Float32Array.from(v)
  const norm = Math.hypot(...out)
  return out.map((x) => x / norm)
}

/** A unit vector of `dim` Gaussian components, from `seed`. */
export function randomUnit(seed: number, dim: number): Float32Array {
  return unit(Array.from({ length: dim }, gaussian(seededRandom(seed))))
}

/** Row r: its cluster's centre (r mod 50) plus noise of its own, the noise drawn from `seed`. */
export function clustered(seed: number, dim: number): VectorSource {
  const centres = Array.from({ length: 50 }, (_, c) => randomUnit(1000 + c, dim))
  return async (rows) => rows.map((r) => {
    const noise = gaussian(seededRandom(seed * 100_003 + r.rowid))
    return unit(Array.from(centres[r.rowid % 50]!, (v) => v + 0.3 * noise()))
  })
}
