// bench/vector-index: exact flat search (float32, int8) against HNSW (usearch; f32 and i8) on
// REAL e5-small-v2-int8 vectors of the eval-300 passages and the real eval-300 questions:
// recall@10 against exact float32, p50 latency per query, memory, build time. With --synthetic N,
// also on N SYNTHETIC vectors (real passage vectors plus Gaussian noise, renormalised).
//   npx tsc -p . && node dist/bench/vector-index.js [--synthetic 100000]
import { rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import usearch from 'usearch'
import { DenseEncoder } from '../retriever/dense-encoder.js'
import { topByInnerProduct } from '../retriever/dense-retriever.js'
import { loadVectors } from '../retriever/dense-vectors.js'
import { PassageStore } from '../retriever/passage-store.js'
import { percentile } from '../src/eval/evaluate-retriever.js'
import { eval300Questions } from '../src/eval/eval-300.js'
import { loadIdList, loadQuestions } from '../src/eval/questions.js'
import { DEFAULT_ENCODERS_DIR, DEFAULT_SHARED_DATA, PROJECT_ROOT } from '../src/paths.js'
import { seededRandom } from './synthetic-corpus.js'

const MODEL = 'e5-small-v2-int8'
const K = 10
const { values } = parseArgs({ options: { synthetic: { type: 'string' }, data: { type: 'string', default: DEFAULT_SHARED_DATA } } })

const store = PassageStore.openReadOnly(join(PROJECT_ROOT, 'bench', 'out', 'eval-300-store'))
const loaded = loadVectors(store, MODEL)
store.close()
if (!loaded) throw new Error(`encode the eval-300 store first: ambigqa index encode --store bench/out/eval-300-store --model ${MODEL}`)
const { dim } = loaded
// Row 0 is unused in the store layout; drop it (a copy: usearch ignores a subarray's offset).
const real = loaded.vectors.slice(dim)
const { questions: file, ids } = eval300Questions(values.data!)
const encoder = await DenseEncoder.load(MODEL, DEFAULT_ENCODERS_DIR)
const queries = await encoder.encode(loadQuestions(file, loadIdList(ids)).map((q) => q.question), 'query')
await encoder.close()

function synthetic(n: number): Float32Array {
  const random = seededRandom(7)
  const gaussian = () => Math.sqrt(-2 * Math.log(random() || 1e-12)) * Math.cos(2 * Math.PI * random())
  const out = new Float32Array(n * dim)
  const rows = real.length / dim
  for (let i = 0; i < n; i++) {
    const source = (i % rows) * dim
    let norm = 0
    for (let d = 0; d < dim; d++) {
      const v = real[source + d]! + 0.02 * gaussian()
      out[i * dim + d] = v
      norm += v * v
    }
    norm = Math.sqrt(norm)
    for (let d = 0; d < dim; d++) out[i * dim + d]! /= norm
  }
  return out
}

function measure(label: string, vectors: Float32Array): void {
  const n = vectors.length / dim
  // topByInnerProduct skips row 0 (the store layout): prepend an empty row.
  const padded = new Float32Array((n + 1) * dim)
  padded.set(vectors, dim)
  const exact = queries.map((q) => topByInnerProduct(padded, dim, n + 1, q, K).map(([row]) => row - 1))
  const rows: string[] = []
  const report = (name: string, results: number[][], latencies: number[], bytes: number, buildSeconds?: number) => {
    const recall = results.reduce((sum, r, i) => sum + r.filter((id) => exact[i]!.includes(id)).length / K, 0) / results.length
    rows.push(`${name.padEnd(26)} recall@10 ${recall.toFixed(4)}  p50 ${percentile(latencies, 50).toFixed(3).padStart(8)} ms  p99 ${percentile(latencies, 99).toFixed(3).padStart(8)} ms  ` +
      `memory ${(bytes / 2 ** 20).toFixed(0).padStart(5)} MB${buildSeconds !== undefined ? `  build ${buildSeconds.toFixed(1)} s` : ''}`)
  }
  {
    const latencies: number[] = []
    const results = queries.map((q) => {
      const t = performance.now()
      const r = topByInnerProduct(padded, dim, n + 1, q, K).map(([row]) => row - 1)
      latencies.push(performance.now() - t)
      return r
    })
    report('flat exact float32', results, latencies, vectors.byteLength)
  }
  {
    // One scale for all: unit vectors' components lie in [-1, 1].
    const q8 = Int8Array.from(vectors, (v) => Math.round(v * 127))
    const latencies: number[] = []
    const results = queries.map((q) => {
      const t = performance.now()
      const qi = Int8Array.from(q, (v) => Math.round(v * 127))
      const best: [number, number][] = []
      for (let row = 0; row < n; row++) {
        let dot = 0
        const base = row * dim
        for (let d = 0; d < dim; d++) dot += q8[base + d]! * qi[d]!
        best.push([row, dot])
      }
      const r = best.sort((a, b) => b[1] - a[1]).slice(0, K).map(([row]) => row)
      latencies.push(performance.now() - t)
      return r
    })
    report('flat exact int8', results, latencies, q8.byteLength)
  }
  for (const [name, quantization] of [['HNSW f32 (usearch)', usearch.ScalarKind.F32], ['HNSW i8 (usearch)', usearch.ScalarKind.I8]] as const) {
    const index = new usearch.Index({ dimensions: dim, metric: usearch.MetricKind.IP, quantization, connectivity: 16, expansion_add: 128, expansion_search: 64, multi: false })
    const started = performance.now()
    index.add(BigUint64Array.from({ length: n }, (_, i) => BigInt(i)), vectors, 2)
    const build = (performance.now() - started) / 1000
    const latencies: number[] = []
    const results = queries.map((q) => {
      const t = performance.now()
      const r = [...index.search(q, K, 1).keys].map(Number)
      latencies.push(performance.now() - t)
      return r
    })
    // usearch reports no memory figure: the size of its serialised index stands in for it.
    const file = join(tmpdir(), `usearch-${process.pid}.bin`)
    index.save(file)
    report(name, results, latencies, statSync(file).size, build)
    rmSync(file, { force: true })
  }
  console.log(`${label}: ${n.toLocaleString('en-US')} vectors × ${dim}, ${queries.length} real questions, k = ${K}`)
  for (const row of rows) console.log(`  ${row}`)
}

measure(`eval-300 (REAL ${MODEL} passage vectors)`, real)
if (values.synthetic) measure(`SYNTHETIC (real vectors + noise)`, synthetic(Number(values.synthetic)))
