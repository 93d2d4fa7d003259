// bench/vector-index: exact flat search (float32, int8) against HNSW (usearch; f32 and i8) on
// REAL encoder vectors of the eval-300 passages and the real eval-300 questions: recall@10
// against exact float32, p50 latency per query (one thread), memory, build time (two threads);
// HNSW at several search expansions (ef) over one built graph. With --synthetic N[,N...], also on N
// SYNTHETIC vectors (real passage vectors plus Gaussian noise, renormalised).
//   npx tsc -p . && node dist/bench/vector-index.js [--model e5-small-v2-int8] [--synthetic 100000,1000000] [--quantizations f32,i8]
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
import { EVAL_300_STORE, eval300Questions } from '../src/eval/eval-300.js'
import { loadIdList, loadQuestions } from '../src/eval/questions.js'
import { DEFAULT_ENCODERS_DIR, DEFAULT_SHARED_DATA, PROJECT_ROOT } from '../core/paths.js'
import { noisyVector } from './synthetic-corpus.js'

const K = 10
const EFS = [64, 128, 256]
// Plain-JS flat search is the reference up to this size; above it usearch's SIMD exact search is.
const PLAIN_JS_MAX = 100_000
const { values } = parseArgs({
  options: {
    synthetic: { type: 'string' }, data: { type: 'string', default: DEFAULT_SHARED_DATA }, store: { type: 'string', default: join(PROJECT_ROOT, EVAL_300_STORE) },
    model: { type: 'string', default: 'e5-small-v2-int8' }, quantizations: { type: 'string', default: 'f32,i8' },
  },
})
const MODEL = values.model!

const store = PassageStore.openReadOnly(values.store!)
const loaded = loadVectors(store, MODEL)
store.close()
if (!loaded) throw new Error(`encode the eval-300 store first: ambigqa index encode --store ${values.store} --model ${MODEL}`)
const { dim } = loaded
// Row 0 is unused in the store layout; drop it (a copy: usearch ignores a subarray's offset).
const real = loaded.vectors.slice(dim)
const { questions: file, ids } = eval300Questions(values.data!)
const encoder = await DenseEncoder.load(MODEL, DEFAULT_ENCODERS_DIR)
const queries = await encoder.encode(loadQuestions(file, loadIdList(ids)).map((q) => q.question), 'query')
await encoder.close()

function synthetic(n: number): Float32Array {
  const out = new Float32Array(n * dim)
  const rows = real.length / dim
  for (let i = 0; i < n; i++) noisyVector(real, dim, i % rows, i, out.subarray(i * dim, (i + 1) * dim))
  return out
}

function measure(label: string, vectors: Float32Array): void {
  const n = vectors.length / dim
  const batch = new Float32Array(queries.length * dim)
  queries.forEach((q, i) => batch.set(q, i * dim))
  const truth = usearch.exactSearch(vectors, batch, dim, K, usearch.MetricKind.IP, 2) as { keys: BigUint64Array }
  const exact = queries.map((_, i) => [...truth.keys.subarray(i * K, (i + 1) * K)].map(Number))
  const rows: string[] = []
  const report = (name: string, results: number[][], latencies: number[], bytes: number, buildSeconds?: number) => {
    const recall = results.reduce((sum, r, i) => sum + r.filter((id) => exact[i]!.includes(id)).length / K, 0) / results.length
    rows.push(`${name.padEnd(30)} recall@10 ${recall.toFixed(4)}  p50 ${percentile(latencies, 50).toFixed(3).padStart(8)} ms  p99 ${percentile(latencies, 99).toFixed(3).padStart(8)} ms  ` +
      `memory ${(bytes / 2 ** 20).toFixed(0).padStart(5)} MB${buildSeconds !== undefined ? `  build ${buildSeconds.toFixed(1)} s` : ''}`)
  }
  const timed = (search: (q: Float32Array) => number[]) => {
    const latencies: number[] = []
    const results = queries.map((q) => {
      const t = performance.now()
      const r = search(q)
      latencies.push(performance.now() - t)
      return r
    })
    return { results, latencies }
  }
  {
    const { results, latencies } = timed((q) => [...(usearch.exactSearch(vectors, q, dim, K, usearch.MetricKind.IP, 1) as { keys: BigUint64Array }).keys].map(Number))
    report('flat exact float32 (usearch)', results, latencies, vectors.byteLength)
  }
  if (n <= PLAIN_JS_MAX) {
    // topByInnerProduct skips row 0 (the store layout): prepend an empty row.
    const padded = new Float32Array((n + 1) * dim)
    padded.set(vectors, dim)
    const f32 = timed((q) => topByInnerProduct(padded, dim, n + 1, q, K).map(([row]) => row - 1))
    report('flat exact float32, plain JS', f32.results, f32.latencies, vectors.byteLength)
    // One scale for all: unit vectors' components lie in [-1, 1].
    const q8 = Int8Array.from(vectors, (v) => Math.round(v * 127))
    const i8 = timed((q) => {
      const qi = Int8Array.from(q, (v) => Math.round(v * 127))
      const best: [number, number][] = []
      for (let row = 0; row < n; row++) {
        let dot = 0
        const base = row * dim
        for (let d = 0; d < dim; d++) dot += q8[base + d]! * qi[d]!
        best.push([row, dot])
      }
      return best.sort((a, b) => b[1] - a[1]).slice(0, K).map(([row]) => row)
    })
    report('flat exact int8, plain JS', i8.results, i8.latencies, q8.byteLength)
  }
  const kinds = { f32: usearch.ScalarKind.F32, i8: usearch.ScalarKind.I8 } as const
  for (const name of values.quantizations!.split(',') as (keyof typeof kinds)[]) {
    const config = (ef: number) => ({ dimensions: dim, metric: usearch.MetricKind.IP, quantization: kinds[name], connectivity: 16, expansion_add: 128, expansion_search: ef, multi: false })
    const index = new usearch.Index(config(EFS[0]!))
    const started = performance.now()
    index.add(BigUint64Array.from({ length: n }, (_, i) => BigInt(i)), vectors, 2)
    const build = (performance.now() - started) / 1000
    // usearch reports no memory figure: the size of its serialised index stands in for it.
    const file = join(tmpdir(), `usearch-${process.pid}.bin`)
    index.save(file)
    const bytes = statSync(file).size
    for (const ef of EFS) {
      // The search expansion is fixed at construction: the same graph, loaded into an index made with another ef.
      const view = new usearch.Index(config(ef))
      view.load(file)
      const { results, latencies } = timed((q) => [...view.search(q, K, 1).keys].map(Number))
      report(`HNSW ${name} M 16 ef ${ef}`, results, latencies, bytes, ef === EFS[0] ? build : undefined)
    }
    rmSync(file, { force: true })
  }
  console.log(`${label}: ${n.toLocaleString('en-US')} vectors × ${dim}, ${queries.length} real questions, k = ${K}`)
  for (const row of rows) console.log(`  ${row}`)
}

measure(`eval-300 (REAL ${MODEL} passage vectors)`, real)
for (const n of values.synthetic?.split(',').map(Number) ?? []) measure(`SYNTHETIC (real ${MODEL} vectors + noise)`, synthetic(n))
