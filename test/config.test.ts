import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'node:test'
import { defaults, loadConfig } from '../core/config.js'
import { AmbigqaError } from '../core/errors.js'

const noEnv = {}

test('defaults: BM25 k1 0.9 and b 0.4, the demo store', () => {
  const config = loadConfig({ env: noEnv, cwd: mkdtempSync(join(tmpdir(), 'cfg-')) })
  assert.deepEqual(config, defaults)
  assert.deepEqual(config.bm25, { k1: 0.9, b: 0.4 })
})

test('file < environment < flags', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cfg-'))
  writeFileSync(join(dir, 'ambigqa.config.json'), JSON.stringify({ bm25: { k1: 1.5 }, store: 'from-file' }))
  assert.equal(loadConfig({ env: noEnv, cwd: dir }).bm25.k1, 1.5)
  assert.equal(loadConfig({ env: noEnv, cwd: dir }).bm25.b, 0.4)
  assert.equal(loadConfig({ env: { AMBIGQA_BM25_K1: '1.1' }, cwd: dir }).bm25.k1, 1.1)
  assert.equal(loadConfig({ env: { AMBIGQA_BM25_K1: '1.1' }, flags: { 'bm25.k1': 2 }, cwd: dir }).bm25.k1, 2)
  assert.equal(loadConfig({ env: { AMBIGQA_INGEST_ON_ERROR: 'skip' }, cwd: dir }).ingest.onError, 'skip')
  assert.equal(loadConfig({ env: { AMBIGQA_SERVER_MAX_BATCH: '4' }, cwd: dir }).server.maxBatch, 4)
  // The test harness's own variables are not settings.
  assert.deepEqual(loadConfig({ env: { AMBIGQA_TEST_SKIP_PYTHON: '1' }, cwd: dir }), loadConfig({ env: {}, cwd: dir }))
})

test('hybrid fuses the listed retrievers: a list from a file or a comma-separated variable, never repeated', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cfg-'))
  assert.deepEqual(loadConfig({ env: noEnv, cwd: dir }).hybrid.retrievers, ['bm25-sqlite', 'dense'])
  assert.deepEqual(loadConfig({ env: { AMBIGQA_HYBRID_RETRIEVERS: 'bm25-es, dense-es' }, cwd: dir }).hybrid.retrievers, ['bm25-es', 'dense-es'])
  writeFileSync(join(dir, 'ambigqa.config.json'), JSON.stringify({ retriever: 'hybrid', hybrid: { retrievers: ['bm25-sqlite', 'bm25-es', 'dense'] } }))
  assert.deepEqual(loadConfig({ env: noEnv, cwd: dir }).hybrid.retrievers, ['bm25-sqlite', 'bm25-es', 'dense'])
  const err = configError(() => loadConfig({ env: { AMBIGQA_HYBRID_RETRIEVERS: 'dense,dense' }, cwd: dir }))
  assert.match(err.message, /hybrid\.retrievers/)
  assert.match(err.message, /AMBIGQA_HYBRID_RETRIEVERS/)
})

function configError(fn: () => unknown): AmbigqaError {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof AmbigqaError)
    return err
  }
  assert.fail('expected a configuration error')
}

test('a bad value names its key, where it came from, and the fix', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cfg-'))
  writeFileSync(join(dir, 'ambigqa.config.json'), JSON.stringify({ bm25: { b: 3 } }))
  const err = configError(() => loadConfig({ env: noEnv, cwd: dir }))
  assert.equal(err.code, 'AMBIGQA_ERR_CONFIG_INVALID')
  assert.match(err.message, /'bm25\.b'/)
  assert.match(err.message, /ambigqa\.config\.json/)
  assert.match(err.message, /Default: 0\.4/)
})

test('unknown keys, unknown variables, non-numbers and broken files are refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cfg-'))
  writeFileSync(join(dir, 'ambigqa.config.json'), JSON.stringify({ bm25: { k: 1 } }))
  assert.match(configError(() => loadConfig({ env: noEnv, cwd: dir })).message, /'bm25\.k' .* is not a known setting. Known keys: .*bm25\.k1/)
  assert.match(configError(() => loadConfig({ env: { AMBIGQA_BM25_K2: '1' }, cwd: mkdtempSync(join(tmpdir(), 'cfg-')) })).message, /AMBIGQA_BM25_K2/)
  assert.match(configError(() => loadConfig({ env: { AMBIGQA_BM25_K1: 'high' }, cwd: mkdtempSync(join(tmpdir(), 'cfg-')) })).message, /must be a number, got 'high'/)
  const broken = join(dir, 'broken.json')
  writeFileSync(broken, '{ "store": ')
  const err = configError(() => loadConfig({ env: noEnv, file: broken }))
  assert.equal(err.code, 'AMBIGQA_ERR_CONFIG_FILE')
  assert.match(err.message, /broken\.json: is not valid JSON/)
  assert.match(configError(() => loadConfig({ env: noEnv, file: join(dir, 'nope.json') })).message, /nope\.json: does not exist/)
})

test('server.jobs on needs a token of 16 characters and a data root; the environment sets them (roots comma-separated)', () => {
  assert.throws(() => loadConfig({ env: { AMBIGQA_SERVER_JOBS: 'true' }, cwd: mkdtempSync(join(tmpdir(), 'cfg-')) }), (err: Error & { code?: string }) =>
    err.code === 'AMBIGQA_ERR_CONFIG_INVALID' && /'server\.authToken'.*at least 16 characters when server\.jobs is on/.test(err.message))
  assert.throws(() => loadConfig({ env: { AMBIGQA_SERVER_JOBS: 'true', AMBIGQA_SERVER_AUTH_TOKEN: 'x'.repeat(16) }, cwd: mkdtempSync(join(tmpdir(), 'cfg-')) }), (err: Error) =>
    /'server\.dataRoots'.*at least one folder/.test(err.message))
  const config = loadConfig({ env: { AMBIGQA_SERVER_JOBS: 'true', AMBIGQA_SERVER_AUTH_TOKEN: 'x'.repeat(16), AMBIGQA_SERVER_DATA_ROOTS: '/data/a, /data/b', AMBIGQA_SERVER_ALLOWED_HOSTS: 'qa.example.org' }, cwd: mkdtempSync(join(tmpdir(), 'cfg-')) })
  assert.deepEqual([config.server.jobs, config.server.dataRoots, config.server.allowedHosts], [true, ['/data/a', '/data/b'], ['qa.example.org']])
  assert.equal(loadConfig({ env: {}, cwd: mkdtempSync(join(tmpdir(), 'cfg-')) }).server.jobs, false)
})

test('server.maxCost must admit a full askMany of server.maxBatch questions (50 each); the defaults agree', () => {
  const config = loadConfig({ env: {}, cwd: mkdtempSync(join(tmpdir(), 'cfg-')) })
  assert.ok(config.server.maxCost >= 50 * config.server.maxBatch, `${config.server.maxCost} < 50 × ${config.server.maxBatch}`)
  assert.throws(() => loadConfig({ env: { AMBIGQA_SERVER_MAX_COST: '500' }, cwd: mkdtempSync(join(tmpdir(), 'cfg-')) }), (err: Error & { code?: string }) =>
    err.code === 'AMBIGQA_ERR_CONFIG_INVALID' && /'server\.maxCost'.*server\.maxBatch 32 × 50 per question = 1600.*raise server\.maxCost to at least 1600 or lower server\.maxBatch/.test(err.message))
  assert.equal(loadConfig({ env: { AMBIGQA_SERVER_MAX_COST: '500', AMBIGQA_SERVER_MAX_BATCH: '10' }, cwd: mkdtempSync(join(tmpdir(), 'cfg-')) }).server.maxCost, 500)
})
