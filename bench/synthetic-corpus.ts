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

export function* synthesize(real: readonly Passage[], count: number, seed = 42): Generator<Passage> {
  const random = seededRandom(seed)
  const words = real.map((p) => p.text.split(/\s+/).filter(Boolean))
  for (let i = 0; i < count; i++) {
    const a = Math.floor(random() * real.length)
    const b = Math.floor(random() * real.length)
    const first = words[a]!
    const second = words[b]!
    const text = [...first.slice(0, first.length >> 1), ...second.slice(second.length >> 1)].join(' ')
    yield { id: `syn-${i}`, title: real[a]!.title, text }
  }
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
