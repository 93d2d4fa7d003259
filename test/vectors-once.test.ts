// A store's dense vectors kept once (issue 46): an ANN build releases the store's blobs into its
// float32 rows file, which is then their one copy. Real SQLite, the real demo store (5,531
// passages) with clustered vectors copied in (test/helpers/clustered-vectors.ts), the real usearch
// graph, the real CLI for the kill -9. What must hold: every reader answers as before the release;
// a rebuild with other settings, new passages appended and encoded, a rolled-back append and a
// re-encoded chunk all keep the released vectors; a rows file missing, short or other is a coded
// error, never zero vectors; and a kill -9 between publishing the index and releasing leaves every
// vector in one place at least, and the next command releases them.
import assert from 'node:assert/strict'
import { copyFileSync, existsSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'node:test'
import { gunzipSync } from 'node:zlib'
import Database from 'better-sqlite3'
import { silentLogger } from '../core/log.js'
import { DEFAULT_ENCODERS_DIR } from '../core/paths.js'
import { rollbackStore } from '../index/append.js'
import { buildIndex } from '../index/build-index.js'
import { buildAnnIndex } from '../index/dense/ann-index.js'
import { encodeStoreInPython } from '../index/dense/encode-on-device.js'
import { writeStoreVectors } from '../index/dense/store-vectors.js'
import { AnnSearch } from '../retriever/ann-search.js'
import { topByInnerProduct } from '../retriever/dense-retriever.js'
import { annFiles, chunkReleased, listChunks, loadVectors, RELEASED_BYTES, vectorsStamp } from '../retriever/dense-vectors.js'
import { PassageStore } from '../retriever/passage-store.js'
import { clustered, randomUnit } from './helpers/clustered-vectors.js'
import { buildDemoStore, DEMO_CORPUS } from './helpers/demo-store.js'
import { prerequisite } from './helpers/prerequisite.js'
import { pythonMissing } from './helpers/reader-fixture.js'
import { runCli, runCliKilledAt } from './helpers/run-cli.js'

const MODEL = 'e5-small-v2-int8'
const DIM = 32
const DEMO_PASSAGES = 5531
const QUERIES = Array.from({ length: 20 }, (_, i) => randomUnit(500 + i, DIM))

async function storeWithVectors(): Promise<string> {
  const store = await buildDemoStore('vectors-once-')
  await writeStoreVectors({ store, model: MODEL, source: clustered(1, DIM), chunkSize: 500, log: silentLogger })
  return store
}

function read<T>(store: string, f: (s: PassageStore) => T): T {
  const s = PassageStore.openReadOnly(store)
  try {
    return f(s)
  } finally {
    s.close()
  }
}

/** What each chunk holds: 'blob' (its vectors) or 'released' (a marker; the rows file holds them). */
const chunkStates = (store: string) => read(store, (s) => listChunks(s, MODEL).map((c) => (chunkReleased(c, store, MODEL) ? 'released' : 'blob')))
const vectors = (store: string) => read(store, (s) => loadVectors(s, MODEL)!)
const annHits = (store: string) => read(store, (s) => {
  const ann = AnnSearch.open(s, MODEL)!
  try {
    return QUERIES.map((q) => ann.search(q, 10))
  } finally {
    ann.close()
  }
})
const exactHits = (store: string) => {
  const v = vectors(store)
  return QUERIES.map((q) => topByInnerProduct(v.vectors, v.dim, v.rows, q, 10))
}
/** Bytes of vector data the store's table holds (markers count RELEASED_BYTES each). */
const storedBytes = (store: string) => read(store, (s) => (s.db.prepare('SELECT sum(length(data)) AS n FROM dense_vectors WHERE model = ?').get(MODEL) as { n: number }).n)

function assertRecall(store: string, hits: [number, number][][]): void {
  const exact = exactHits(store)
  let found = 0
  hits.forEach((h, i) => {
    assert.equal(h.length, 10)
    found += h.filter(([row]) => exact[i]!.some(([r]) => r === row)).length
  })
  assert.ok(found / (hits.length * 10) >= 0.95, `recall@10 ${found / (hits.length * 10)}`)
}

const code = (expected: string, ...parts: RegExp[]) => (err: Error & { code?: string }) =>
  err.code === expected && parts.every((p) => p.test(err.message))

test('an ANN build releases the store\'s vectors into its rows file: exact and ANN search answer as before, and a rebuild with other settings keeps them', { timeout: 180_000 }, async () => {
  const store = await storeWithVectors()
  const built = await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger, release: false })
  assert.equal(built.released.rows, 0)
  assert.ok(chunkStates(store).every((s) => s === 'blob'), 'release: false keeps both copies')
  const before = { vectors: vectors(store), ann: annHits(store), exact: exactHits(store), stamp: read(store, (s) => vectorsStamp(s, MODEL)), bytes: storedBytes(store) }
  assert.equal(before.bytes, DEMO_PASSAGES * DIM * 4)
  assert.ok(before.exact.every((h) => h.length === 10))

  // Up to date: the same command only releases (as it does after a build killed before releasing).
  const released = await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger })
  assert.equal(released.built, false)
  assert.deepEqual(released.released, { chunks: 12, rows: DEMO_PASSAGES, kept: 0 })
  assert.deepEqual(chunkStates(store), Array(12).fill('released'))
  assert.equal(storedBytes(store), 12 * RELEASED_BYTES, 'the store keeps a marker per chunk, no vector')
  assert.equal(statSync(annFiles(store, MODEL).rows).size, DEMO_PASSAGES * DIM * 4)
  assert.equal(read(store, (s) => vectorsStamp(s, MODEL)), before.stamp, 'a release leaves the vectors\' stamp: the index stays current')
  assert.deepEqual(vectors(store), before.vectors, 'every vector read back as it was')
  assert.deepEqual(annHits(store), before.ann, 'ANN results identical')
  assert.deepEqual(exactHits(store), before.exact, 'exact results identical')
  assert.deepEqual((await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger })).released.rows, 0, 'nothing left to release')

  // Other settings: the graph is rebuilt from the rows file, which is kept (never deleted or rewritten).
  const rows = annFiles(store, MODEL).rows
  const inode = statSync(rows).ino
  const other = await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger, connectivity: 8, expansionAdd: 64 })
  assert.equal(other.built, true)
  assert.equal(other.manifest.connectivity, 8)
  assert.equal(statSync(rows).ino, inode, 'the same rows file')
  assert.deepEqual(chunkStates(store), Array(12).fill('released'))
  assert.deepEqual(vectors(store), before.vectors)
  assertRecall(store, annHits(store))
})

test('after a release: a rolled-back append changes nothing; new passages appended and encoded are indexed and released; a re-encoded chunk replaces its rows; kill -9 in the rebuild loses nothing', { timeout: 300_000 }, async () => {
  const store = await storeWithVectors()
  await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger })
  assert.deepEqual(chunkStates(store), Array(12).fill('released'))
  const before = { vectors: vectors(store), ann: annHits(store) }
  const dir = mkdtempSync(join(tmpdir(), 'vectors-once-sources-'))
  const passages = (from: number, n: number) => Array.from({ length: n }, (_, i) => `new-${from + i}\tpassage ${from + i} on subject ${(from + i) % 17}, the ${i}th of its kind\tNew ${from + i}`)

  // An append stopped by a bad line, then rolled back: the store's vectors and index are as they were.
  const bad = passages(0, 1500)
  bad[1200] = 'new-1200\tbroken row'
  writeFileSync(join(dir, 'bad.tsv'), `id\ttext\ttitle\n${bad.join('\n')}\n`)
  await assert.rejects(buildIndex({ store, sources: [{ path: join(dir, 'bad.tsv') }], onError: 'fail', batchSize: 100, segmentSize: 10000, workers: 1, log: silentLogger }), /AMBIGQA_ERR_SOURCE_MALFORMED|expected 3 tab-separated fields/)
  assert.equal(rollbackStore(store, silentLogger).undone, 'append')
  assert.deepEqual(vectors(store), before.vectors)
  assert.deepEqual(annHits(store), before.ann)

  // 700 new passages appended and encoded: the index is stale until rebuilt; the released vectors
  // and the new blobs read together meanwhile.
  writeFileSync(join(dir, 'good.tsv'), `id\ttext\ttitle\n${passages(0, 700).join('\n')}\n`)
  await buildIndex({ store, sources: [{ path: join(dir, 'good.tsv') }], onError: 'fail', batchSize: 100, segmentSize: 10000, workers: 1, log: silentLogger })
  await writeStoreVectors({ store, model: MODEL, source: clustered(1, DIM), chunkSize: 500, log: silentLogger })
  assert.deepEqual(chunkStates(store), [...Array(12).fill('released'), 'blob', 'blob'])
  const appended = vectors(store)
  assert.equal(appended.rows, DEMO_PASSAGES + 700 + 1)
  assert.deepEqual(appended.vectors.subarray(0, before.vectors.vectors.length), before.vectors.vectors, 'released rows as they were')
  assert.ok(appended.vectors.subarray((DEMO_PASSAGES + 1) * DIM).some((x) => x !== 0), 'the new rows read from their blobs')
  assert.throws(() => read(store, (s) => AnnSearch.open(s, MODEL)), code('AMBIGQA_ERR_ANN_INDEX', /older vectors/))

  // The rebuild, killed with -9 at its first checkpoint: the released rows and the new blobs both hold.
  const args = ['index', 'ann', '--store', store, '--model', MODEL, '--threads', '1', '--batch-rows', '50', '--checkpoint-seconds', '0']
  const killed = await runCliKilledAt(args, 'ANN build checkpoint saved', { AMBIGQA_LOG_LEVEL: 'info' })
  assert.equal(killed.signal, 'SIGKILL', `the build ended before a checkpoint: ${killed.stderr.slice(-400)}`)
  assert.deepEqual(vectors(store), appended, 'a killed rebuild loses no vector')
  const resumed = await runCli(args)
  assert.equal(resumed.code, 0, resumed.stderr)
  assert.match(resumed.stdout, /ANN index of 6,231 e5-small-v2-int8 vectors .* built .*resumed at/)
  assert.match(resumed.stdout, /^700 e5-small-v2-int8 vectors released from the store: the ANN rows file is their one copy$/m)
  assert.deepEqual(chunkStates(store), Array(14).fill('released'))
  assert.deepEqual(vectors(store), appended)
  assertRecall(store, annHits(store))

  // A re-encode of the last chunk (deleted, written again with other vectors): its rows in the file
  // are rewritten from the new blob and released again; every other row stays.
  const update = PassageStore.openForUpdate(store)
  update.db.prepare('DELETE FROM dense_vectors WHERE model = ? AND first_rowid = (SELECT max(first_rowid) FROM dense_vectors WHERE model = ?)').run(MODEL, MODEL)
  update.close()
  await writeStoreVectors({ store, model: MODEL, source: clustered(2, DIM), chunkSize: 500, log: silentLogger })
  const reencoded = vectors(store)
  const lastFirst = read(store, (s) => listChunks(s, MODEL).at(-1)!.first)
  assert.deepEqual(reencoded.vectors.subarray(0, lastFirst * DIM), appended.vectors.subarray(0, lastFirst * DIM))
  assert.notDeepEqual(reencoded.vectors.subarray(lastFirst * DIM), appended.vectors.subarray(lastFirst * DIM))
  const rebuilt = await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger })
  assert.equal(rebuilt.built, true)
  assert.equal(rebuilt.released.chunks, 1)
  assert.deepEqual(chunkStates(store), Array(14).fill('released'))
  assert.deepEqual(vectors(store), reencoded, 'the file holds the re-encoded rows now')
  assertRecall(store, annHits(store))
})

test('a rows file missing, cut short or other than released is AMBIGQA_ERR_VECTORS_FILE for every reader, never zero vectors', { timeout: 180_000 }, async () => {
  const store = await storeWithVectors()
  await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger })
  const good = vectors(store)
  const rows = annFiles(store, MODEL).rows
  const saved = `${rows}.saved`
  copyFileSync(rows, saved)
  const everyReaderRefuses = async (what: RegExp) => {
    assert.throws(() => vectors(store), code('AMBIGQA_ERR_VECTORS_FILE', what, /their one copy/))
    assert.throws(() => read(store, (s) => AnnSearch.open(s, MODEL)), code('AMBIGQA_ERR_VECTORS_FILE', what))
    // A rebuild (other settings) checks the released rows before it removes anything: refused.
    await assert.rejects(buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger, connectivity: 8 }), code('AMBIGQA_ERR_VECTORS_FILE', what))
  }

  truncateSync(rows, statSync(rows).size - DIM * 4)
  await everyReaderRefuses(/shorter than/)

  copyFileSync(saved, rows)
  // One float of the last chunk changed: the rows are not the ones released.
  const fd = openSync(rows, 'r+')
  writeSync(fd, Buffer.from([0x3f]), 0, 1, statSync(rows).size - 2)
  closeSync(fd)
  await everyReaderRefuses(/holds other vectors than were released/)

  rmSync(rows)
  await everyReaderRefuses(/is missing/)
  const cli = await runCli(['index', 'ann', '--store', store, '--model', MODEL, '--threads', '1'])
  assert.equal(cli.code, 1)
  assert.match(cli.stderr, /AMBIGQA_ERR_VECTORS_FILE: the e5-small-v2-int8 vectors of the store at .* were released to .*e5-small-v2-int8\.f32, their one copy, which is missing/)
  assert.doesNotMatch(cli.stderr, /\n\s+at /, 'no stack trace')

  // Put back, the store reads as before: the refused commands removed nothing, the index is current.
  copyFileSync(saved, rows)
  assert.deepEqual(vectors(store), good)
  assert.equal((await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger })).built, false)
  assertRecall(store, annHits(store))
})

test('index ann killed with -9 after publishing its index, before releasing: every vector in the store still, and the next command releases them', { timeout: 180_000 }, async () => {
  const store = await storeWithVectors()
  const good = vectors(store)
  const files = annFiles(store, MODEL)
  // A write transaction held here makes the release wait for the lock (SQLite's busy timeout):
  // the build writes no row before it, so the kill lands exactly between publishing and releasing.
  const holder = new Database(join(store, 'passages.sqlite'))
  holder.exec('BEGIN IMMEDIATE')
  let published = false
  const killed = await runCli(['index', 'ann', '--store', store, '--model', MODEL, '--threads', '1'], {
    onSpawn: (child) => {
      const poll = setInterval(() => {
        if (!existsSync(files.manifest)) return
        published = true
        clearInterval(poll)
        child.kill('SIGKILL')
      }, 5)
      child.on('close', () => clearInterval(poll))
    },
  })
  holder.exec('ROLLBACK')
  holder.close()
  assert.ok(published, `the build ended before publishing: ${killed.stderr.slice(-400)}`)
  assert.equal(killed.signal, 'SIGKILL', killed.stderr)
  assert.deepEqual(chunkStates(store), Array(12).fill('blob'), 'killed before the release: the store holds every vector')
  assert.deepEqual(vectors(store), good)
  assert.equal(statSync(files.rows).size, DEMO_PASSAGES * DIM * 4, 'and the published rows file too')

  const next = await runCli(['index', 'ann', '--store', store, '--model', MODEL, '--threads', '1'])
  assert.equal(next.code, 0, next.stderr)
  assert.match(next.stdout, /ANN index of 5,531 e5-small-v2-int8 vectors is up to date/)
  assert.match(next.stdout, /^5,531 e5-small-v2-int8 vectors released from the store/m)
  assert.deepEqual(chunkStates(store), Array(12).fill('released'))
  assert.deepEqual(vectors(store), good)
  assertRecall(store, annHits(store))
})

const TORCH_MODEL = 'e5-small-v2'
const torchSkip = prerequisite(existsSync(join(DEFAULT_ENCODERS_DIR, TORCH_MODEL, 'model.onnx')) ? false : `needs models/encoders/${TORCH_MODEL}: run scripts/assets ${TORCH_MODEL}`) ||
  pythonMissing('index encode --device cuda (PyTorch)')

test('the PyTorch encoder, unchanged, appends to a store whose vectors were released: resumes after them, and its new chunks are indexed and released', { skip: torchSkip, timeout: 600_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vectors-once-torch-'))
  const lines = gunzipSync(readFileSync(DEMO_CORPUS)).toString('utf8').trimEnd().split('\n')
  writeFileSync(join(dir, 'first.tsv'), `${lines.slice(0, 41).join('\n')}\n`)
  writeFileSync(join(dir, 'more.tsv'), `${[lines[0], ...lines.slice(41, 61)].join('\n')}\n`)
  const store = join(dir, 'store')
  const build = (tsv: string) => buildIndex({ store, sources: [{ path: join(dir, tsv) }], onError: 'fail', batchSize: 1000, segmentSize: 1000, workers: 1, log: silentLogger })
  const encode = () => encodeStoreInPython({ store, model: TORCH_MODEL, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 16, chunkSize: 16, device: 'cpu', log: silentLogger })
  const load = () => read(store, (s) => loadVectors(s, TORCH_MODEL)!)
  const states = () => read(store, (s) => listChunks(s, TORCH_MODEL).map((c) => (chunkReleased(c, store, TORCH_MODEL) ? 'released' : 'blob')))

  await build('first.tsv')
  assert.equal((await encode()).encoded, 40)
  const first = load()
  assert.equal(first.dim, 384)
  assert.equal((await buildAnnIndex({ store, model: TORCH_MODEL, threads: 1, log: silentLogger })).released.rows, 40)
  assert.deepEqual(states(), ['released', 'released', 'released'])

  await build('more.tsv')
  assert.equal((await encode()).encoded, 20, 'Python resumes after the released chunks, as after any written chunk')
  assert.deepEqual(states(), ['released', 'released', 'released', 'blob', 'blob'])
  const both = load()
  assert.equal(both.rows, 61)
  assert.deepEqual(both.vectors.subarray(0, first.vectors.length), first.vectors)
  const rebuilt = await buildAnnIndex({ store, model: TORCH_MODEL, threads: 1, log: silentLogger })
  assert.equal(rebuilt.built, true)
  assert.equal(rebuilt.released.rows, 20)
  assert.deepEqual(states(), Array(5).fill('released'))
  assert.deepEqual(load(), both)
  // Each passage's own vector finds that passage first, the new ones included.
  read(store, (s) => {
    const ann = AnnSearch.open(s, TORCH_MODEL)!
    try {
      for (const rowid of [1, 40, 41, 60]) assert.equal(ann.search(both.vectors.slice(rowid * 384, (rowid + 1) * 384), 1)[0]![0], rowid)
    } finally {
      ann.close()
    }
  })
})
