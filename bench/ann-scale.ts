// bench/ann-scale: dense retrieval over the embedded store at scale (issue 38). Builds a SYNTHETIC
// store of N passages (bench/scale's recombined eval-300 passages) whose vectors are copied in,
// not computed: each the REAL e5 vector of the passage its first half came from, plus Gaussian
// noise (bench/vector-index's recipe). Then the ANN index (`index ann`, timed), and in one run:
// recall@10 against exact float32 search, p50/p99 per query on one thread, and the resident
// memory of a process searching it (anonymous and file-backed apart: the graph is mapped), over
// a sweep of search settings; the exact in-memory path beside it where it fits; with --ask N, the
// `ask` p50 at concurrency 1 over this store against the same questions over eval-300's store.
// With --vectors-once, where the vectors are kept once (issue 46): (A) the graph's candidates
// rescored from the store's chunk blobs (a whole blob per candidate, a blob per distinct chunk, or
// `substr` of the blob) beside today's rows file, and what SQLite reads for a `substr`; (B) the
// store's blobs released into the rows file: disk before and after (freed pages, then VACUUM),
// the served ANN p50 and the exact path's load beside what they were before.
// Every resumable step resumes: a killed run picks up where it stopped.
//   npx tsc -p . && node dist/bench/ann-scale.js --passages 1000000 [--ask 30] [--exact] [--sweep] [--vectors-once]
import { execFileSync } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import usearch from 'usearch'
import { loadConfig } from '../core/config.js'
import { createLogger, silentLogger } from '../core/log.js'
import type { Passage } from '../core/passage.js'
import { DEFAULT_ENCODERS_DIR, DEFAULT_SHARED_DATA, PROJECT_ROOT } from '../core/paths.js'
import { buildAnnIndex, usearchIndex } from '../index/dense/ann-index.js'
import { buildIndex } from '../index/build-index.js'
import { writeStoreVectors } from '../index/dense/store-vectors.js'
import { ANN_SEARCH_DEFAULTS, AnnSearch } from '../retriever/ann-search.js'
import { DenseEncoder } from '../retriever/dense-encoder.js'
import { annFiles, chunkReleased, listChunks, loadVectors, readAnnManifest } from '../retriever/dense-vectors.js'
import { PassageStore } from '../retriever/passage-store.js'
import { percentile } from '../src/eval/evaluate-retriever.js'
import { EVAL_300_STORE, eval300Questions } from '../src/eval/eval-300.js'
import { loadIdList, loadQuestions } from '../src/eval/questions.js'
import { openPipeline } from '../src/pipeline/open-pipeline.js'
import { noisyVector, synthesisPlan, synthesize, writeDprTsv } from './synthetic-corpus.js'

const K = 10
const { values } = parseArgs({
  options: {
    passages: { type: 'string', default: '1000000' }, data: { type: 'string', default: DEFAULT_SHARED_DATA },
    model: { type: 'string', default: 'e5-small-v2-int8' }, ask: { type: 'string', default: '0' },
    exact: { type: 'boolean', default: false }, sweep: { type: 'boolean', default: false }, 'vectors-once': { type: 'boolean', default: false },
    child: { type: 'string' }, out: { type: 'string' }, store: { type: 'string' }, queries: { type: 'string' }, settings: { type: 'string' },
  },
})
const MODEL = values.model!
const realStoreDir = join(PROJECT_ROOT, EVAL_300_STORE)

/** This process's resident memory from /proc: all of it, and the part that is mapped files. */
function memory(): { rssMB: number; anonMB: number; fileMB: number; peakMB: number } {
  const status = readFileSync('/proc/self/status', 'utf8')
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024
  return { rssMB: kb('VmRSS'), anonMB: kb('RssAnon'), fileMB: kb('RssFile'), peakMB: kb('VmHWM') }
}

function readQueries(path: string): { dim: number; queries: Float32Array[] } {
  const { dim, data } = JSON.parse(readFileSync(path, 'utf8')) as { dim: number; data: number[][] }
  return { dim, queries: data.map((q) => Float32Array.from(q)) }
}

function timed<T>(queries: Float32Array[], search: (q: Float32Array) => T, warmup = 50): { results: T[]; p50: number; p99: number } {
  for (let i = 0; i < warmup; i++) search(queries[i % queries.length]!)
  const latencies: number[] = []
  const results = queries.map((q) => {
    const t = performance.now()
    const r = search(q)
    latencies.push(performance.now() - t)
    return r
  })
  return { results, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
}

// A child process per measured path, so each one's memory is its own. It reports through a file:
// process.exit does not wait for a pipe to take a large stdout write (5M's sweep was cut short).
function report(value: unknown): void {
  writeFileSync(values.out!, JSON.stringify(value))
  process.exit(0)
}
if (values.child === 'ann') {
  const store = PassageStore.openReadOnly(values.store!)
  const { queries } = readQueries(values.queries!)
  const settings = JSON.parse(values.settings!) as { expansion: number; candidates: number }[]
  const before = memory()
  const runs = settings.map((s) => {
    const ann = AnnSearch.open(store, MODEL, s)!
    const run = timed(queries, (q) => ann.search(q, K).map(([rowid]) => rowid))
    ann.close()
    return { ...s, ...run }
  })
  report({ runs, before, after: memory() })
}
if (values.child === 'exact') {
  const store = PassageStore.openReadOnly(values.store!)
  const { dim, queries } = readQueries(values.queries!)
  const loaded = loadVectors(store, MODEL)!
  const vectors = loaded.vectors.slice(dim)
  const run = timed(queries, (q) => [...(usearch.exactSearch(vectors, q, dim, K, usearch.MetricKind.IP, 1) as { keys: BigUint64Array }).keys].map((key) => Number(key) + 1))
  report({ runs: [run], after: memory() })
}
if (values.child === 'ask') {
  const questions = JSON.parse(readFileSync(values.queries!, 'utf8')) as string[]
  const config = loadConfig({ flags: { store: values.store, 'log.level': 'warn' } })
  const pipeline = await openPipeline(config, createLogger('warn'))
  const options = { retrieve: config.reader.retrieve, read: config.reader.read, disambiguate: false }
  for (const q of questions.slice(0, 3)) await pipeline.ask(q, options)
  const latencies: number[] = []
  for (const q of questions) {
    const t = performance.now()
    await pipeline.ask(q, options)
    latencies.push(performance.now() - t)
  }
  // Retrieval alone (the question encoded, the index searched, the passages read): the part of
  // `ask` that depends on the store's size; the reader's time depends on what the passages say.
  const retrieval: number[] = []
  for (const q of questions) {
    const t = performance.now()
    await pipeline.stages.retriever.search(`${q} `, config.reader.retrieve)
    retrieval.push(performance.now() - t)
  }
  const retriever = pipeline.stages.retriever.name
  await pipeline.close()
  report({ p50: percentile(latencies, 50), p99: percentile(latencies, 99), retrievalP50: percentile(retrieval, 50), retrievalP99: percentile(retrieval, 99), retriever, after: memory() })
}

if (values.child === 'load') {
  const store = PassageStore.openReadOnly(values.store!)
  const t = performance.now()
  const loaded = loadVectors(store, MODEL)!
  report({ seconds: (performance.now() - t) / 1000, rows: loaded.rows - 1, after: memory() })
}
if (values.child === 'rescore') {
  // The served graph search (ef and candidates as served), then its candidates rescored four ways.
  const store = PassageStore.openReadOnly(values.store!)
  const { dim, queries } = readQueries(values.queries!)
  const files = annFiles(store.dir, MODEL)
  const index = usearchIndex(dim, readAnnManifest(store.dir, MODEL)!, ANN_SEARCH_DEFAULTS.expansion)
  index.view(files.graph)
  const rowBytes = dim * 4
  const fd = openSync(files.rows, 'r')
  const row = new Float32Array(dim)
  const rowU8 = new Uint8Array(row.buffer)
  const firsts = listChunks(store, MODEL).map((c) => c.first)
  const chunkFirst = (rowid: number) => {
    let lo = 0
    let hi = firsts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (firsts[mid]! <= rowid) lo = mid
      else hi = mid - 1
    }
    return firsts[lo]!
  }
  const blobOf = store.db.prepare('SELECT data FROM dense_vectors WHERE model = ? AND first_rowid = ?').pluck()
  const substr = store.db.prepare('SELECT substr(data, ?, ?) FROM dense_vectors WHERE model = ? AND first_rowid = ?').pluck()
  const candidates = (q: Float32Array) => [...(index.search(q, ANN_SEARCH_DEFAULTS.candidates, 1) as { keys: BigUint64Array }).keys].map((key) => Number(key) + 1)
  const dot = (q: Float32Array) => {
    let sum = 0
    for (let d = 0; d < dim; d++) sum += row[d]! * q[d]!
    return sum
  }
  const best = (scored: [number, number][]) => scored.sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, K).map(([rowid]) => rowid)
  const ways: Record<string, (q: Float32Array) => number[]> = {
    'graph only (no rescoring)': (q) => candidates(q).slice(0, K),
    'rows file, pread per candidate (today)': (q) => best(candidates(q).map((rowid) => {
      readSync(fd, rowU8, 0, rowBytes, (rowid - 1) * rowBytes)
      return [rowid, dot(q)]
    })),
    'store blob per candidate': (q) => best(candidates(q).map((rowid) => {
      const first = chunkFirst(rowid)
      const data = blobOf.get(MODEL, first) as Buffer
      rowU8.set(data.subarray((rowid - first) * rowBytes, (rowid - first + 1) * rowBytes))
      return [rowid, dot(q)]
    })),
    'store blob per distinct chunk': (q) => {
      const byChunk = new Map<number, number[]>()
      for (const rowid of candidates(q)) {
        const first = chunkFirst(rowid)
        byChunk.set(first, [...(byChunk.get(first) ?? []), rowid])
      }
      const scored: [number, number][] = []
      for (const [first, rowids] of byChunk) {
        const data = blobOf.get(MODEL, first) as Buffer
        for (const rowid of rowids) {
          rowU8.set(data.subarray((rowid - first) * rowBytes, (rowid - first + 1) * rowBytes))
          scored.push([rowid, dot(q)])
        }
      }
      return best(scored)
    },
    'store substr(data) per candidate': (q) => best(candidates(q).map((rowid) => {
      const first = chunkFirst(rowid)
      rowU8.set(substr.get((rowid - first) * rowBytes + 1, rowBytes, MODEL, first) as Buffer)
      return [rowid, dot(q)]
    })),
  }
  const runs = Object.entries(ways).map(([way, search]) => {
    const r = timed(queries, search, 20)
    return { way, p50: r.p50, p99: r.p99, results: r.results }
  })
  closeSync(fd)
  // What a substr costs against a whole blob, where in the blob the row lies, and what SQLite
  // reads for it: on a connection without the mapping (mmap reads are not read calls) and with a
  // small page cache, /proc/self/io's rchar counts the bytes of every page read.
  const plain = new Database(join(store.dir, 'passages.sqlite'), { readonly: true })
  plain.pragma('mmap_size = 0')
  plain.pragma('cache_size = -256')
  const rchar = () => Number(/^rchar: (\d+)/m.exec(readFileSync('/proc/self/io', 'utf8'))![1])
  const sample = firsts.filter((_, i) => i % Math.max(1, Math.floor(firsts.length / 200)) === 0).slice(0, 200)
  const chunkRows = (listChunks(store, MODEL)[0]!.last - firsts[0]! + 1)
  const probes = {
    'whole blob': plain.prepare('SELECT data FROM dense_vectors WHERE model = ? AND first_rowid = ?').pluck(),
    'substr, first row': plain.prepare(`SELECT substr(data, 1, ${rowBytes}) FROM dense_vectors WHERE model = ? AND first_rowid = ?`).pluck(),
    'substr, last row': plain.prepare(`SELECT substr(data, ${(chunkRows - 1) * rowBytes + 1}, ${rowBytes}) FROM dense_vectors WHERE model = ? AND first_rowid = ?`).pluck(),
    'length(data) only': plain.prepare('SELECT length(data) FROM dense_vectors WHERE model = ? AND first_rowid = ?').pluck(),
  }
  const reads = Object.entries(probes).map(([probe, statement]) => {
    let bytes = 0
    const t = performance.now()
    for (const first of sample) {
      const before = rchar()
      statement.get(MODEL, first)
      bytes += rchar() - before
    }
    return { probe, ms: (performance.now() - t) / sample.length, kbRead: bytes / sample.length / 1024 }
  })
  plain.close()
  report({ runs, reads, chunkRows, sample: sample.length })
}

function child(mode: string, args: Record<string, string>): Record<string, unknown> {
  const file = join(out, `ann-scale-${mode}-${process.pid}.result.json`)
  const argv = [fileURLToPath(import.meta.url), '--child', mode, '--model', MODEL, '--out', file, ...Object.entries(args).flatMap(([k, v]) => [`--${k}`, v])]
  execFileSync(process.execPath, argv, { stdio: ['ignore', 'inherit', 'inherit'] })
  const result = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
  rmSync(file, { force: true })
  return result
}

const count = Number(values.passages)
if (!Number.isInteger(count) || count < 1000) throw new Error(`--passages must be a whole number ≥ 1000, not ${values.passages}`)
const out = join(PROJECT_ROOT, 'bench', 'out')
mkdirSync(out, { recursive: true })
const log = createLogger('info')

// The real passages and their real vectors, in store order.
const real = PassageStore.openReadOnly(realStoreDir)
const pool = real.db.prepare('SELECT id, title, text FROM passages ORDER BY rowid').all() as Passage[]
const realLoaded = loadVectors(real, MODEL)
real.close()
if (!realLoaded) throw new Error(`encode the eval-300 store first: ambigqa index encode --store ${realStoreDir} --model ${MODEL}`)
const dim = realLoaded.dim
const realVectors = realLoaded.vectors.slice(dim)

const tsv = join(out, `synthetic-${count}.tsv`)
if (!existsSync(tsv)) await writeDprTsv(tsv, synthesize(pool, count))
const storeDir = join(out, `synthetic-${count}-store`)
let ingestSeconds: number | undefined
const ready = (() => {
  try {
    const s = PassageStore.openReadOnly(storeDir)
    const n = s.count()
    s.close()
    return n === count
  } catch {
    return false
  }
})()
if (!ready) {
  // buildIndex resumes an interrupted build of the same TSV.
  const build = await buildIndex({ store: storeDir, sources: [{ path: tsv }], onError: 'fail', batchSize: 5000, segmentSize: 200_000, workers: 2, log: silentLogger })
  ingestSeconds = build.seconds
}
console.log(`SYNTHETIC store: ${count.toLocaleString('en-US')} passages recombined from ${pool.length.toLocaleString('en-US')} real eval-300 passages` +
  `${ingestSeconds !== undefined ? `, TSV → searchable ${ingestSeconds.toFixed(1)} s` : ' (built before)'}`)

// Vectors copied in: synthetic passage syn-i gets the real vector of the passage its first half came from, plus noise.
const plan = synthesisPlan(pool.length, count)
let t = performance.now()
const copied = await writeStoreVectors({
  // The encoders' own chunk (store-vectors.ts, encode_passages.py): what --vectors-once reads blobs of.
  store: storeDir, model: MODEL, chunkSize: 1024, log,
  label: `copying SYNTHETIC ${MODEL} vectors in`,
  source: async (rows) => rows.map((r) => {
    const i = Number(r.id.slice('syn-'.length))
    const v = new Float32Array(dim)
    noisyVector(realVectors, dim, plan.first[i]!, i, v)
    return v
  }),
})
console.log(`vectors copied in: ${copied.written.toLocaleString('en-US')} in ${((performance.now() - t) / 1000).toFixed(1)} s`)
writeFileSync(`${storeDir}.vectors-done`, `${new Date().toISOString()}\n`)

// --vectors-once measures the store before its vectors are released: the build keeps both copies.
const ann = await buildAnnIndex({ store: storeDir, model: MODEL, threads: 2, log, release: !values['vectors-once'] })
const files = annFiles(storeDir, MODEL)
const graphMB = statSync(files.graph).size / 2 ** 20
const rowsMB = statSync(files.rows).size / 2 ** 20
const storeMB = statSync(join(storeDir, 'passages.sqlite')).size / 2 ** 20
console.log(`ANN index (${ann.manifest.quantization}, M ${ann.manifest.connectivity}, ef_construction ${ann.manifest.expansionAdd}): build ${ann.manifest.seconds.toFixed(1)} s on 2 threads` +
  `${ann.built ? '' : ' (built before)'}${ann.resumedAt > 0 && ann.built ? `, resumed at ${ann.resumedAt}` : ''}; graph ${graphMB.toFixed(0)} MB, float32 rows ${rowsMB.toFixed(0)} MB, store ${storeMB.toFixed(0)} MB`)

// The real eval-300 questions.
const { questions: questionsFile, ids } = eval300Questions(values.data!)
const questions = loadQuestions(questionsFile, loadIdList(ids)).map((q) => q.question)
const encoder = await DenseEncoder.load(MODEL, DEFAULT_ENCODERS_DIR)
const queries = await encoder.encode(questions, 'query')
await encoder.close()
const queriesFile = join(out, `ann-scale-queries-${process.pid}.json`)
writeFileSync(queriesFile, JSON.stringify({ dim, data: queries.map((q) => Array.from(q)) }))

// Exact float32 truth, a block of rows at a time from the rows file (memory stays bounded at 5M).
t = performance.now()
const truth: [number, number][][] = queries.map(() => [])
{
  const blockRows = 262_144
  const batch = new Float32Array(queries.length * dim)
  queries.forEach((q, i) => batch.set(q, i * dim))
  const block = new Float32Array(blockRows * dim)
  const fd = openSync(files.rows, 'r')
  for (let first = 0; first < ann.rows; first += blockRows) {
    const n = Math.min(blockRows, ann.rows - first)
    const bytes = new Uint8Array(block.buffer, 0, n * dim * 4)
    for (let done = 0; done < bytes.length;) done += readSync(fd, bytes, done, bytes.length - done, first * dim * 4 + done)
    const found = usearch.exactSearch(n === blockRows ? block : block.slice(0, n * dim), batch, dim, Math.min(K, n), usearch.MetricKind.IP, 2) as { keys: BigUint64Array; distances: Float32Array; counts: BigUint64Array }
    const per = Math.min(K, n)
    queries.forEach((_, q) => {
      for (let j = 0; j < per; j++) truth[q]!.push([first + Number(found.keys[q * per + j]!) + 1, 1 - found.distances[q * per + j]!])
      truth[q]!.sort((a, b) => b[1] - a[1] || a[0] - b[0])
      truth[q]!.length = Math.min(truth[q]!.length, K)
    })
  }
  closeSync(fd)
}
console.log(`exact float32 truth for ${queries.length} questions in ${((performance.now() - t) / 1000).toFixed(1)} s (blocks of 262,144 rows, 2 threads)`)
const recall = (results: number[][]) => results.reduce((sum, r, i) => sum + r.filter((id) => truth[i]!.some(([row]) => row === id)).length / K, 0) / results.length

const settings = values.sweep
  ? [64, 128, 256, 512, 1024].flatMap((expansion) => [10, 50, 100, 200].map((candidates) => ({ expansion, candidates })))
  : [ANN_SEARCH_DEFAULTS]
const annRun = child('ann', { store: storeDir, queries: queriesFile, settings: JSON.stringify(settings) }) as {
  runs: { expansion: number; candidates: number; results: number[][]; p50: number; p99: number }[]; after: ReturnType<typeof memory>
}
console.log(`${count.toLocaleString('en-US')} SYNTHETIC vectors × ${dim}, ${queries.length} real eval-300 questions, k = ${K}, one thread per query, after 50 warm-up queries`)
console.log(`${'path'.padEnd(58)} recall@10   p50 ms   p99 ms`)
for (const r of annRun.runs) {
  console.log(`${`ANN ${ann.manifest.quantization} ef ${r.expansion}, ${r.candidates} candidates rescored f32`.padEnd(58)}${recall(r.results).toFixed(4).padStart(9)}${r.p50.toFixed(3).padStart(9)}${r.p99.toFixed(3).padStart(9)}`)
}
// Memory from a process that opens the index once with the served settings, as a server does
// (each sweep setting maps the graph again, so the sweep's own figure counts it once per setting).
const served = (child('ann', { store: storeDir, queries: queriesFile, settings: JSON.stringify([ANN_SEARCH_DEFAULTS]) }) as typeof annRun).after
console.log(`ANN search process memory (the served settings: ef ${ANN_SEARCH_DEFAULTS.expansion}, ${ANN_SEARCH_DEFAULTS.candidates} candidates): RSS ${served.rssMB.toFixed(0)} MB = ` +
  `${served.anonMB.toFixed(0)} MB anonymous + ${served.fileMB.toFixed(0)} MB mapped file pages (the graph, the store's mapped pages, node and its libraries; peak ${served.peakMB.toFixed(0)} MB)`)
if (values.exact) {
  const exact = child('exact', { store: storeDir, queries: queriesFile }) as { runs: { results: number[][]; p50: number; p99: number }[]; after: ReturnType<typeof memory> }
  const e = exact.runs[0]!
  console.log(`${'exact f32 in memory (usearch SIMD), the path without an index'.padEnd(58)}${recall(e.results).toFixed(4).padStart(9)}${e.p50.toFixed(3).padStart(9)}${e.p99.toFixed(3).padStart(9)}`)
  console.log(`exact search process memory: RSS ${exact.after.rssMB.toFixed(0)} MB (anonymous ${exact.after.anonMB.toFixed(0)} MB, peak ${exact.after.peakMB.toFixed(0)} MB)`)
}
if (values['vectors-once']) await vectorsOnce()
rmSync(queriesFile, { force: true })

async function vectorsOnce(): Promise<void> {
  const storeFile = join(storeDir, 'passages.sqlite')
  const disk = () => {
    const s = PassageStore.openReadOnly(storeDir)
    const pages = s.db.pragma('page_size', { simple: true }) as number
    const free = (s.db.pragma('freelist_count', { simple: true }) as number) * pages
    const released = listChunks(s, MODEL).filter((c) => chunkReleased(c, storeDir, MODEL)).length
    s.close()
    const size = (f: string) => (existsSync(f) ? statSync(f).size : 0)
    const annBytes = readdirSync(files.dir).reduce((sum, f) => sum + size(join(files.dir, f)), 0)
    return { store: size(storeFile) + size(`${storeFile}-wal`), free, ann: annBytes, rows: size(files.rows), graph: size(files.graph), released }
  }
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MB`
  const line = (label: string, d: ReturnType<typeof disk>) => console.log(`  ${label.padEnd(44)} store ${mb(d.store).padStart(8)} (free pages ${mb(d.free)})  ann/ ${mb(d.ann).padStart(8)} (rows ${mb(d.rows)}, graph ${mb(d.graph)})  total ${mb(d.store + d.ann).padStart(8)}  ${(((d.store + d.ann) / count)).toFixed(0)} B/passage`)
  const before = disk()
  type Rescore = { runs: { way: string; p50: number; p99: number; results: number[][] }[]; reads: { probe: string; ms: number; kbRead: number }[]; chunkRows: number; sample: number }
  type Load = { seconds: number; rows: number; after: ReturnType<typeof memory> }
  console.log(`\nvectors kept once (--vectors-once), ${count.toLocaleString('en-US')} SYNTHETIC vectors × ${dim}, chunks of the encoders' 1,024 rows:`)
  if (before.released === 0) {
    const a = child('rescore', { store: storeDir, queries: queriesFile }) as Rescore
    const today = a.runs[1]!.results
    console.log(`(A) the served graph search (ef ${ANN_SEARCH_DEFAULTS.expansion}), its ${ANN_SEARCH_DEFAULTS.candidates} candidates rescored in float32 from:`)
    console.log(`  ${'rescored from'.padEnd(44)} recall@10   p50 ms   p99 ms   top-10 as today's`)
    for (const r of a.runs) {
      const same = r.results.filter((ids, i) => ids.join() === today[i]!.join()).length
      console.log(`  ${r.way.padEnd(44)}${recall(r.results).toFixed(4).padStart(9)}${r.p50.toFixed(3).padStart(9)}${r.p99.toFixed(3).padStart(9)}   ${same}/${r.results.length}`)
    }
    console.log(`  what SQLite reads per call (${a.sample} chunks of ${a.chunkRows} rows; a connection without mmap, 256 KB page cache; /proc/self/io rchar):`)
    for (const r of a.reads) console.log(`    ${r.probe.padEnd(20)} ${r.ms.toFixed(3).padStart(8)} ms  ${r.kbRead.toFixed(0).padStart(7)} KB read`)
  } else {
    console.log(`(A) not measured: ${before.released} chunks of this store are released already (build a fresh store to measure them from blobs)`)
  }
  const served = () => (child('ann', { store: storeDir, queries: queriesFile, settings: JSON.stringify([ANN_SEARCH_DEFAULTS]) }) as typeof annRun).runs[0]!
  const annBefore = served()
  const loadBefore = child('load', { store: storeDir }) as Load
  let t = performance.now()
  const built = await buildAnnIndex({ store: storeDir, model: MODEL, threads: 2, log: silentLogger })
  const releaseSeconds = (performance.now() - t) / 1000
  const released = disk()
  t = performance.now()
  const vacuum = PassageStore.openForUpdate(storeDir)
  vacuum.db.exec('VACUUM')
  vacuum.close()
  const vacuumSeconds = (performance.now() - t) / 1000
  const after = disk()
  const annAfter = served()
  const loadAfter = child('load', { store: storeDir }) as Load
  const same = annAfter.results.filter((ids, i) => ids.join() === annBefore.results[i]!.join()).length
  console.log(`(B) the store's blobs released into the ANN rows file (${built.released.chunks.toLocaleString('en-US')} chunks, ${built.released.rows.toLocaleString('en-US')} vectors in ${releaseSeconds.toFixed(1)} s: each read back from the file and compared), then VACUUM (${vacuumSeconds.toFixed(1)} s):`)
  line('before: both copies (today)', before)
  line('released, before VACUUM (freed pages reused)', released)
  line('released, after VACUUM', after)
  console.log(`  served ANN search (ef ${ANN_SEARCH_DEFAULTS.expansion}, ${ANN_SEARCH_DEFAULTS.candidates} rescored from the rows file): p50 ${annBefore.p50.toFixed(3)} / p99 ${annBefore.p99.toFixed(3)} ms before, ` +
    `${annAfter.p50.toFixed(3)} / ${annAfter.p99.toFixed(3)} ms after; top-10 identical for ${same}/${annAfter.results.length} questions`)
  console.log(`  exact path's load (loadVectors, ${loadAfter.rows.toLocaleString('en-US')} vectors): ${loadBefore.seconds.toFixed(1)} s from the blobs, ${loadAfter.seconds.toFixed(1)} s from the rows file (SHA-256 of every released chunk checked)`)
  const perPassage = (d: ReturnType<typeof disk>) => (d.store + d.ann) / count
  console.log(`  21M passages at ${dim} dims from these bytes per passage: ${(perPassage(before) * 21e6 / 1e9).toFixed(1)} GB with both copies, ` +
    `${(perPassage(after) * 21e6 / 1e9).toFixed(1)} GB kept once (store ${(after.store / count * 21e6 / 1e9).toFixed(1)} + rows ${(after.rows / count * 21e6 / 1e9).toFixed(1)} + graph ${(after.graph / count * 21e6 / 1e9).toFixed(1)} GB)`)
}

const askCount = Number(values.ask)
if (askCount > 0) {
  const askFile = join(out, `ann-scale-ask-${process.pid}.json`)
  writeFileSync(askFile, JSON.stringify(questions.slice(0, askCount)))
  type Ask = { p50: number; p99: number; retrievalP50: number; retrievalP99: number; retriever: string; after: ReturnType<typeof memory> }
  const small = child('ask', { store: realStoreDir, queries: askFile }) as Ask
  const large = child('ask', { store: storeDir, queries: askFile }) as Ask
  rmSync(askFile, { force: true })
  console.log(`ask, concurrency 1, the first ${askCount} eval-300 questions (default pipeline, no rewrites), one process each:`)
  for (const [label, r] of [['eval-300 store (33k REAL passages)', small], [`SYNTHETIC ${count.toLocaleString('en-US')} store`, large]] as const) {
    console.log(`  ${label.padEnd(36)} p50 ${r.p50.toFixed(0).padStart(6)} ms  p99 ${r.p99.toFixed(0).padStart(6)} ms  retrieval alone p50 ${r.retrievalP50.toFixed(1)} ms p99 ${r.retrievalP99.toFixed(1)} ms  RSS ${r.after.rssMB.toFixed(0)} MB (anonymous ${r.after.anonMB.toFixed(0)}, mapped files ${r.after.fileMB.toFixed(0)})  ${r.retriever}`)
  }
  console.log(`  ask p50 ratio ${(large.p50 / small.p50).toFixed(2)}x (target ≤ 1.2x); retrieval alone ${(large.retrievalP50 / small.retrievalP50).toFixed(2)}x`)
}
