import assert from 'node:assert/strict'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import test from 'node:test'
import { buildAnnIndex } from '../index/dense/ann-index.js'
import { writeStoreVectors, type VectorSource } from '../index/dense/store-vectors.js'
import { AnnSearch } from '../retriever/ann-search.js'
import { topByInnerProduct } from '../retriever/dense-retriever.js'
import { annFiles, loadVectors } from '../retriever/dense-vectors.js'
import { PassageStore } from '../retriever/passage-store.js'
import { silentLogger } from '../core/log.js'
import { seededRandom } from '../bench/synthetic-corpus.js'
import { clustered as clusteredOf, gaussian, unit } from './helpers/clustered-vectors.js'
import { buildDemoStore } from './helpers/demo-store.js'
import { runCli, runCliKilledAt } from './helpers/run-cli.js'

// Vectors copied in, not computed (test/helpers/clustered-vectors.ts): 50 clusters, close calls.
const MODEL = 'e5-small-v2-int8'
const DIM = 32
const clustered = (seed: number): VectorSource => clusteredOf(seed, DIM)

async function storeWithVectors(seed = 1): Promise<string> {
  const store = await buildDemoStore('ann-')
  await writeStoreVectors({ store, model: MODEL, source: clustered(seed), chunkSize: 500, log: silentLogger })
  return store
}

function exactTop(store: string, query: Float32Array, k: number): [number, number][] {
  const read = PassageStore.openReadOnly(store)
  const loaded = loadVectors(read, MODEL)!
  read.close()
  return topByInnerProduct(loaded.vectors, loaded.dim, loaded.rows, query, k)
}

test('the ANN index finds what exact search finds, from mapped files, and is refused once the vectors change', { timeout: 120_000 }, async () => {
  const store = await storeWithVectors()
  const result = await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger })
  assert.equal(result.built, true)
  assert.equal(result.rows, 5531)
  const files = annFiles(store, MODEL)
  assert.ok(existsSync(files.graph) && existsSync(files.rows) && existsSync(files.manifest))
  assert.deepEqual(readdirSync(files.dir).filter((f) => f.includes('partial') || f.includes('.tmp')), [], 'no unfinished files left')
  assert.equal((await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger })).built, false, 'up to date: not rebuilt')

  const read = PassageStore.openReadOnly(store)
  const ann = AnnSearch.open(read, MODEL)!
  assert.match(ann.describe(), /ANN index \(HNSW i8, M 16, ef 512, 100 candidates rescored in float32; 5,531 vectors/)
  const queries = Array.from({ length: 30 }, (_, i) => unit(Array.from({ length: DIM }, gaussian(seededRandom(77 + i)))))
  let found = 0
  for (const query of queries) {
    const exact = exactTop(store, query, 10)
    const hits = ann.search(query, 10)
    assert.equal(hits.length, 10)
    // Rescored in float32: a row found has its exact score, and the list is in exact order.
    for (const [rowid, score] of hits) {
      const same = exact.find(([row]) => row === rowid)
      if (same) assert.ok(Math.abs(same[1] - score) < 1e-5)
    }
    assert.ok(hits.every(([, s], i) => i === 0 || hits[i - 1]![1] >= s))
    found += hits.filter(([rowid]) => exact.some(([row]) => row === rowid)).length
  }
  assert.ok(found / (queries.length * 10) >= 0.98, `recall@10 ${found / 300}`)
  ann.close()
  read.close()

  // New vectors for the last chunk (a re-encode): the index no longer describes the store.
  const update = PassageStore.openForUpdate(store)
  update.db.prepare('DELETE FROM dense_vectors WHERE first_rowid = (SELECT max(first_rowid) FROM dense_vectors)').run()
  update.close()
  await writeStoreVectors({ store, model: MODEL, source: clustered(2), chunkSize: 500, log: silentLogger })
  const stale = PassageStore.openReadOnly(store)
  assert.throws(() => AnnSearch.open(stale, MODEL), (err: Error & { code?: string }) =>
    err.code === 'AMBIGQA_ERR_ANN_INDEX' && err.message.includes('older vectors') && err.message.includes(`ambigqa index ann --store ${store} --model ${MODEL}`))
  stale.close()
  assert.equal((await buildAnnIndex({ store, model: MODEL, threads: 1, log: silentLogger })).built, true)
  const fresh = PassageStore.openReadOnly(store)
  const again = AnnSearch.open(fresh, MODEL)!
  const query = queries[0]!
  assert.deepEqual(again.search(query, 5).map(([row]) => row), exactTop(store, query, 5).map(([row]) => row))
  again.close()
  fresh.close()
})

test('index ann killed with -9 resumes from its last checkpoint; a store without vectors is a clear error', { timeout: 180_000 }, async () => {
  const store = await storeWithVectors()
  const args = ['index', 'ann', '--store', store, '--model', MODEL, '--threads', '1', '--batch-rows', '50', '--checkpoint-seconds', '0']
  const killed = await runCliKilledAt(args, 'ANN build checkpoint saved', { AMBIGQA_LOG_LEVEL: 'info' })
  assert.equal(killed.signal, 'SIGKILL', `the build ended before a checkpoint: ${killed.stderr.slice(-400)}`)
  const files = annFiles(store, MODEL)
  assert.ok(!existsSync(files.manifest), 'a killed build leaves no manifest')
  assert.ok(existsSync(files.partialManifest))

  const resumed = await runCli(args)
  assert.equal(resumed.code, 0, resumed.stderr)
  const at = /resumed at ([\d,]+)/.exec(resumed.stdout)
  assert.ok(at && Number(at[1]!.replace(/,/g, '')) > 0, resumed.stdout)
  const read = PassageStore.openReadOnly(store)
  const ann = AnnSearch.open(read, MODEL)!
  const query = unit(Array.from({ length: DIM }, gaussian(seededRandom(5))))
  assert.deepEqual(ann.search(query, 5).map(([row]) => row), exactTop(store, query, 5).map(([row]) => row))
  ann.close()
  read.close()

  const bare = await buildDemoStore('ann-bare-')
  const refused = await runCli(['index', 'ann', '--store', bare, '--model', MODEL])
  assert.notEqual(refused.code, 0)
  assert.match(refused.stderr, /AMBIGQA_ERR_VECTORS_MISSING/)
  const bad = await runCli(['index', 'ann', '--store', bare, '--connectivity', '1000'])
  assert.notEqual(bad.code, 0)
  assert.match(bad.stderr, /--connectivity must be a whole number from 4 to 64/)
})
