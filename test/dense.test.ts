import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import test from 'node:test'
import { gunzipSync } from 'node:zlib'
import { buildIndex } from '../index/build-index.js'
import { DenseEncoder } from '../retriever/dense-encoder.js'
import { DenseRetriever, topByInnerProduct } from '../retriever/dense-retriever.js'
import { encodeStore } from '../index/dense/store-vectors.js'
import { loadVectors } from '../retriever/dense-vectors.js'
import { PassageStore } from '../retriever/passage-store.js'
import { silentLogger } from '../core/log.js'
import { DEFAULT_ENCODERS_DIR } from '../core/paths.js'
import { prerequisite } from './helpers/prerequisite.js'

const MODEL = 'e5-small-v2-int8'
const encoderMissing = (name: string) => prerequisite(existsSync(join(DEFAULT_ENCODERS_DIR, name, 'model.onnx')) ? false : `needs models/encoders/${name}: run scripts/assets ${name}`)
const skip = encoderMissing(MODEL)
const cos = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i]!, 0)

test('e5 puts a question nearest the passage that answers it; vectors are unit length', { skip }, async () => {
  const encoder = await DenseEncoder.load(MODEL, DEFAULT_ENCODERS_DIR, 1)
  const [q] = await encoder.encode(['who played in the world series in 1989'], 'query')
  const passages = await encoder.encode([
    'Bazooka. The bazooka is a man-portable recoilless anti-tank rocket launcher.',
    '1989 World Series. The 1989 World Series was played between the Oakland Athletics and the San Francisco Giants.',
    'Apple Inc. The Apple I went on sale in July 1976.',
  ], 'passage')
  const scores = passages.map((p) => cos(q!, p))
  assert.equal(scores.indexOf(Math.max(...scores)), 1)
  for (const v of [q!, ...passages]) assert.ok(Math.abs(cos(v, v) - 1) < 1e-4)
  // Batched and single encodings agree: padding does not leak into mean pooling. (Not to the
  // last digit: dynamic int8 quantisation scales activations over the whole batch; in fp32 the
  // two agree to 1e-8.)
  const [alone] = await encoder.encode(['Apple Inc. The Apple I went on sale in July 1976.'], 'passage')
  assert.ok(cos(alone!, passages[2]!) > 0.99)
  await encoder.close()
})

test('a shared encoder: one session for its users, released by the last close', { skip }, async () => {
  const retriever = await DenseEncoder.shared(MODEL, DEFAULT_ENCODERS_DIR, 1)
  const decider = await DenseEncoder.shared(MODEL, DEFAULT_ENCODERS_DIR, 1)
  assert.equal(decider, retriever, 'the same encoder')
  const own = await DenseEncoder.load(MODEL, DEFAULT_ENCODERS_DIR, 1)
  try {
    const question = 'when did the harry potter movie come out'
    const [first] = await retriever.encode([question], 'query')
    const [again, other] = await decider.encode([question, 'who sings i\'m coming out'], 'query')
    // The same session computes what a session of its own computes.
    const [fresh, freshOther] = await own.encode([question, 'who sings i\'m coming out'], 'query')
    assert.ok(cos(first!, fresh!) > 0.99 && cos(again!, fresh!) > 0.99 && cos(other!, freshOther!) > 0.99)
    await retriever.close()
    const [still] = await decider.encode(['a question after one user closed'], 'query')
    assert.equal(still!.length, first!.length, 'the other user still encodes')
    await decider.close()
    // The last close released it: a new user gets a new encoder.
    const next = await DenseEncoder.shared(MODEL, DEFAULT_ENCODERS_DIR, 1)
    assert.notEqual(next, retriever)
    await next.close()
  } finally {
    await own.close()
  }
})

test('fp32 and int8 encoders agree', { skip: skip || encoderMissing('e5-small-v2') }, async () => {
  const fp32 = await DenseEncoder.load('e5-small-v2', DEFAULT_ENCODERS_DIR, 1)
  const int8 = await DenseEncoder.load(MODEL, DEFAULT_ENCODERS_DIR, 1)
  const text = ['The 1989 World Series was played between the Oakland Athletics and the San Francisco Giants.']
  assert.ok(cos((await fp32.encode(text, 'passage'))[0]!, (await int8.encode(text, 'passage'))[0]!) > 0.95)
  await fp32.close()
  await int8.close()
})

test('a store is encoded in resumable chunks and searched densely', { skip, timeout: 180_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'dense-'))
  // 200 real passages of the demo corpus.
  const lines = gunzipSync(readFileSync(resolve(process.cwd(), 'assets/demo/passages.tsv.gz'))).toString('utf8').split('\n').slice(0, 201)
  const tsv = join(dir, 'p.tsv')
  writeFileSync(tsv, `${lines.join('\n')}\n`)
  const store = join(dir, 'store')
  await buildIndex({ store, sources: [{ path: tsv }], onError: 'fail', batchSize: 100, segmentSize: 1000, workers: 1, log: silentLogger })
  const options = { store, model: MODEL, modelsDir: DEFAULT_ENCODERS_DIR, batchSize: 16, chunkSize: 64, threads: 1, log: silentLogger }
  assert.equal((await encodeStore(options)).encoded, 200)
  const read = PassageStore.openReadOnly(store)
  const first = loadVectors(read, MODEL)!
  read.close()
  // Lose the last chunk, as a kill would: the next run redoes only that chunk, identically.
  const db = PassageStore.openForUpdate(store)
  db.db.prepare('DELETE FROM dense_vectors WHERE first_rowid = (SELECT max(first_rowid) FROM dense_vectors)').run()
  db.close()
  assert.equal((await encodeStore(options)).encoded, 200 - 192)
  assert.equal((await encodeStore(options)).encoded, 0)
  const again = PassageStore.openReadOnly(store)
  assert.deepEqual(loadVectors(again, MODEL)!.vectors, first.vectors)
  again.close()

  const target = lines[1]!.split('\t')
  const encoderForReference = await DenseEncoder.load(MODEL, DEFAULT_ENCODERS_DIR, 1)
  const retriever = new DenseRetriever(PassageStore.openReadOnly(store), await DenseEncoder.load(MODEL, DEFAULT_ENCODERS_DIR, 1))
  const hits = await retriever.search(target[1]!.slice(0, 200), 5)
  assert.equal(hits[0]!.id, target[0])
  assert.ok(hits[0]!.score >= hits[1]!.score)
  // The SIMD search equals the plain JS reference.
  const [query] = await encoderForReference.encode([target[1]!.slice(0, 200)], 'query')
  const reference = topByInnerProduct(first.vectors, first.dim, first.rows, query!, 5)
  const rowOf = PassageStore.openReadOnly(store)
  assert.deepEqual(hits.map((h) => h.id), rowOf.byRowids(reference.map(([row]) => row)).map((p) => p.id))
  rowOf.close()
  hits.forEach((h, i) => assert.ok(Math.abs(h.score - reference[i]![1]) < 1e-5))
  // retrieve(): the same passages, and the question's vector by its encoder for the stages after.
  const retrieval = await retriever.retrieve(target[1]!.slice(0, 200), 5)
  assert.deepEqual(retrieval.passages.map((h) => h.id), hits.map((h) => h.id))
  assert.equal(retrieval.query?.encoder, MODEL)
  assert.ok(cos(retrieval.query!.vector, query!) > 0.9999)
  await encoderForReference.close()
  await retriever.close()
})

test('missing encoders and missing vectors are clear errors naming the command that makes them', async () => {
  await assert.rejects(DenseEncoder.load(MODEL, join(tmpdir(), 'no-models-here'), 1), (err: Error & { code?: string }) =>
    err.code === 'AMBIGQA_ERR_MODEL_MISSING' && err.message.includes(`scripts/assets ${MODEL}`))
  await assert.rejects(DenseEncoder.load('bert-huge', DEFAULT_ENCODERS_DIR, 1), { code: 'AMBIGQA_ERR_USAGE' })
  if (skip) return
  const dir = mkdtempSync(join(tmpdir(), 'dense-'))
  const tsv = join(dir, 'p.tsv')
  writeFileSync(tsv, 'id\ttext\ttitle\n1\tsome text\tT\n')
  await buildIndex({ store: join(dir, 'store'), sources: [{ path: tsv }], onError: 'fail', batchSize: 10, segmentSize: 10, workers: 1, log: silentLogger })
  const encoder = await DenseEncoder.load(MODEL, DEFAULT_ENCODERS_DIR, 1)
  assert.throws(() => new DenseRetriever(PassageStore.openReadOnly(join(dir, 'store')), encoder), (err: Error & { code?: string }) =>
    err.code === 'AMBIGQA_ERR_VECTORS_MISSING' && err.message.includes(`ambigqa index encode --store ${join(dir, 'store')} --model ${MODEL}`) && err.message.includes('--retriever bm25-sqlite'))
  await encoder.close()
})
