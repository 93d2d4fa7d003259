// The README's scale-out recipe on a real two-node Elasticsearch cluster: up --nodes 2, a store
// built and encoded, the index built (BM25) and given the store's vectors (--from-store), then one
// node killed -9 under a query load and started again. Queries go on being answered, and once the
// node is back the index holds every passage of the store. Its own ports (ES_PORT 9250: nodes on
// 9250 and 9251), so it runs beside the single node the other Elasticsearch tests use. Without
// java or the encoder it skips, saying why; under CI (CI set) it fails instead.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import test from 'node:test'
import { gunzipSync } from 'node:zlib'
import { errors } from '@elastic/elasticsearch'
import { clusterUrl, compareWithStore, esScript, runNodeLoss } from '../bench/es-node-loss.js'
import { defaults, loadConfig } from '../core/config.js'
import { AmbigqaError } from '../core/errors.js'
import { DEFAULT_ENCODERS_DIR } from '../core/paths.js'
import type { Retriever } from '../core/retriever.js'
import { indexLayout } from '../index/build-elasticsearch.js'
import { createEsClient, esError, esNodes } from '../retriever/elasticsearch-client.js'
import { vectorField } from '../retriever/dense-es-retriever.js'
import { openRetriever } from '../retriever/open-retriever.js'
import { prerequisite } from './helpers/prerequisite.js'
import { runCli } from './helpers/run-cli.js'

const PORT = 9250
const URL = clusterUrl(PORT, 2)
const ENCODER = 'e5-small-v2-int8'
// Enough for two shards and a sample; few enough to encode in about half a minute on two cores.
const PASSAGES = 1000
const index = `ambigqa-cluster-test-${process.pid}`
const required = Boolean(process.env.CI || process.env.AMBIGQA_TEST_REQUIRE_ELASTICSEARCH)
const javaSkip = prerequisite(spawnSync('java', ['-version']).status === 0 ? false : 'needs java (a JDK 17) on PATH for scripts/elasticsearch up --nodes 2', required)
// The encoder is required where every prerequisite is (AMBIGQA_TEST_REQUIRE_ALL), not merely under
// CI: CI's second pass is a fresh clone without models, where this test skips like the dense ones.
const encoderSkip = prerequisite(existsSync(join(DEFAULT_ENCODERS_DIR, ENCODER, 'model.onnx')) ? false : `needs models/encoders/${ENCODER}: run scripts/assets ${ENCODER}`)

const QUESTIONS = [
  'who played the doctor in dexter season 1',
  'when did the harry potter movie come out',
  "who sings don't stop believing",
  'when was the first super bowl played',
  'who wrote the declaration of independence',
  'how many episodes are in game of thrones season 8',
]

test('the index layout follows the cluster: one shard per data node, a replica where a second node can hold it', () => {
  assert.deepEqual(indexLayout(1), { shards: 1, replicas: 0 })
  assert.deepEqual(indexLayout(2), { shards: 2, replicas: 1 })
  assert.deepEqual(indexLayout(3), { shards: 3, replicas: 1 })
  assert.deepEqual(indexLayout(2, { shards: 4 }), { shards: 4, replicas: 1 })
  assert.deepEqual(indexLayout(2, { replicas: 0 }), { shards: 2, replicas: 0 })
  for (const bad of [{ shards: 0 }, { shards: 1.5 }, { replicas: -1 }]) {
    assert.throws(() => indexLayout(2, bad), (err: unknown) => err instanceof AmbigqaError && err.code === 'AMBIGQA_ERR_USAGE')
  }
})

test('elasticsearch.url takes the nodes of one cluster, comma-separated', () => {
  const config = loadConfig({ env: { AMBIGQA_ELASTICSEARCH_URL: 'http://127.0.0.1:9200, http://127.0.0.1:9201' } })
  assert.deepEqual(esNodes(config.elasticsearch.url), ['http://127.0.0.1:9200', 'http://127.0.0.1:9201'])
  assert.throws(() => loadConfig({ env: { AMBIGQA_ELASTICSEARCH_URL: 'http://127.0.0.1:9200,not a url' } }), (err: unknown) =>
    err instanceof AmbigqaError && err.code === 'AMBIGQA_ERR_CONFIG_INVALID' && /elasticsearch\.url/.test(err.message))
})

test('a cluster that cannot serve the index now is unavailable; a request it refuses is an index error', () => {
  const es = { url: URL, index: 'passages' }
  const response = (statusCode: number, error: unknown) => new errors.ResponseError({ body: { error }, statusCode, headers: {}, warnings: null, meta: {} as never })
  const unavailable = [
    response(503, { type: 'cluster_block_exception', reason: 'blocked by: [SERVICE_UNAVAILABLE/1/state not recovered / initialized];', root_cause: [{ type: 'cluster_block_exception', reason: 'state not recovered' }] }),
    response(500, { type: 'search_phase_execution_exception', reason: 'all shards failed', root_cause: [{ type: 'node_not_connected_exception', reason: '[node-2] Node not connected' }] }),
    response(503, { type: 'search_phase_execution_exception', reason: 'all shards failed', root_cause: [{ type: 'no_shard_available_action_exception', reason: null }] }),
  ]
  for (const err of unavailable) {
    const coded = esError(err, es)
    assert.equal(coded.code, 'AMBIGQA_ERR_ELASTICSEARCH_UNAVAILABLE', coded.message)
    assert.match(coded.message, /cannot serve index 'passages' now/)
  }
  const refused = response(400, { type: 'search_phase_execution_exception', reason: 'all shards failed', root_cause: [{ type: 'query_shard_exception', reason: 'failed to create query' }] })
  assert.equal(esError(refused, es).code, 'AMBIGQA_ERR_ELASTICSEARCH_INDEX')
})

async function cli(args: string[]): Promise<string> {
  const r = await runCli(args)
  assert.equal(r.code, 0, `ambigqa ${args.join(' ')}:\n${r.stderr}`)
  return r.stdout
}

test('two nodes: shards with a replica each, queries answered while a node is killed -9, every passage there after it returns', { skip: javaSkip || encoderSkip, timeout: 600_000 }, async (t) => {
  const es = esScript(PORT)
  const dir = mkdtempSync(join(tmpdir(), 'es-cluster-'))
  // Real passages: the first PASSAGES of the demo corpus.
  const lines = gunzipSync(readFileSync(resolve(process.cwd(), 'assets/demo/passages.tsv.gz'))).toString('utf8').split('\n')
  const tsv = join(dir, 'passages.tsv')
  writeFileSync(tsv, `${lines.slice(0, PASSAGES + 1).join('\n')}\n`)
  const store = join(dir, 'store')
  const client = createEsClient({ url: URL, index, requestTimeoutMs: 60_000, maxRetries: 3 })
  const retrievers: Retriever[] = []
  try {
    await es('up', '--nodes', '2')
    // An index a killed earlier run left behind.
    await client.indices.delete({ index: 'ambigqa-cluster-test-*', ignore_unavailable: true, allow_no_indices: true })

    await cli(['index', 'build', '--source', tsv, '--store', store])
    await cli(['index', 'encode', '--store', store, '--model', ENCODER])
    const built = await cli(['index', 'build', '--source', tsv, '--backend', 'elasticsearch', '--es-url', URL, '--es-index', index])
    assert.match(built, /2 shards, 1 replicas each/)
    await cli(['index', 'encode', '--backend', 'elasticsearch', '--model', ENCODER, '--from-store', store, '--es-url', URL, '--es-index', index, '--batch-size', '1000'])
    // Each node holds a copy of every shard: a primary or its replica.
    const health = await client.cluster.health({ index, wait_for_status: 'green', timeout: '60s' })
    assert.equal(health.status, 'green')
    assert.equal(health.active_shards, 4)
    const shards = (await client.cat.shards({ index, format: 'json' })) as unknown as { shard: string; node: string }[]
    for (const node of [`ambigqa-${PORT}-node-1`, `ambigqa-${PORT}-node-2`]) {
      assert.deepEqual(new Set(shards.filter((s) => s.node === node).map((s) => s.shard)), new Set(['0', '1']), `${node} holds a copy of each shard`)
    }

    // The retrievers a server opens on this cluster, with its default timeouts and retries.
    const config = { ...defaults, elasticsearch: { ...defaults.elasticsearch, url: URL, index }, dense: { ...defaults.dense, model: ENCODER, threads: 1 } }
    retrievers.push(await openRetriever({ ...config, retriever: 'bm25-es' }), await openRetriever({ ...config, retriever: 'dense-es' }))
    for (const r of retrievers) assert.equal((await r.search(QUESTIONS[0]!, 10)).length, 10, r.name)

    const loss = await runNodeLoss({ port: PORT, client, index, retrievers, questions: QUESTIONS, k: 10, concurrency: 2, kill: 'other', beforeMs: 2000, lossMs: 8000, afterMs: 2000 })
    const all = [loss.before, loss.duringLoss, loss.afterReturn]
    const answered = all.reduce((n, c) => n + c.answered, 0)
    const errors = all.reduce((n, c) => n + c.errors, 0)
    const detail = JSON.stringify(loss)
    t.diagnostic(`node loss: ${detail}`)
    assert.ok(loss.before.answered > 0, detail)
    assert.equal(loss.killedMaster, false)
    assert.ok(loss.duringLoss.answered > 0, `answered while node ${loss.killedNode} was down: ${detail}`)
    assert.ok(loss.afterReturn.answered > 0, detail)
    assert.ok(answered >= 0.9 * (answered + errors), `most queries answered: ${detail}`)
    // What errors there are: the requests in flight to the killed node, never a wrong answer.
    for (const code of Object.keys(loss.duringLoss.codes)) assert.equal(code, 'AMBIGQA_ERR_ELASTICSEARCH_UNAVAILABLE', detail)
    assert.equal(loss.afterReturn.errors, 0, detail)

    const compared = await compareWithStore(client, index, store, 200, vectorField(ENCODER))
    assert.equal(compared.storePassages, PASSAGES)
    assert.equal(loss.countDuringLoss, PASSAGES, 'no passage lost while a node was down')
    assert.equal(compared.indexPassages, PASSAGES)
    assert.equal(compared.indexVectors, PASSAGES)
    assert.equal(compared.sampled, 200)
    assert.equal(compared.matching, 200)
    const status = await es('status')
    assert.match(status, /"status":"green"/)
    assert.match(status, /2 of 2 nodes running/)
  } finally {
    for (const r of retrievers) await r.close()
    await client.indices.delete({ index, ignore_unavailable: true }).catch(() => undefined)
    await client.close()
    await es('down')
  }
})
