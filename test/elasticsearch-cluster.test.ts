// The README's scale-out recipe on a real Elasticsearch cluster of two data nodes and a
// voting-only one: up --nodes 2, a store built and encoded, the index built (BM25) and given the
// store's vectors (--from-store), then a data node killed -9 under a query load and started again,
// first one that is not the master, then the master. Every query is answered (a read the dead node
// dropped is asked again of the other one; with the master lost, the two nodes left elect the
// surviving data node), a write while either is down is applied whole, one while the cluster has
// lost its quorum (the master and the voting-only node down) is refused with the coded error and
// applies nothing, and once the nodes are back the index holds every passage of the store. Its own
// ports (ES_PORT 9250: nodes on 9250, 9251 and 9252), so it runs beside the single node the other
// Elasticsearch tests use. Without java or the encoder it skips, saying why; under CI (CI set) it
// fails instead.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import test from 'node:test'
import { gunzipSync } from 'node:zlib'
import { errors } from '@elastic/elasticsearch'
import { attemptWrite, clusterUrl, compareWithStore, esScript, runNodeLoss, type WriteAttempt } from '../bench/es-node-loss.js'
import { defaults, loadConfig } from '../core/config.js'
import { AmbigqaError } from '../core/errors.js'
import { DEFAULT_ENCODERS_DIR } from '../core/paths.js'
import type { Retriever } from '../core/retriever.js'
import { indexLayout } from '../index/elasticsearch/build-elasticsearch.js'
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

/** The number of the elected master among scripts/elasticsearch's nodes ambigqa-PORT-node-I. */
async function masterNode(client: ReturnType<typeof createEsClient>): Promise<number> {
  const [master] = (await client.cat.master({ format: 'json' })) as unknown as { node: string }[]
  const node = Number(new RegExp(`^ambigqa-${PORT}-node-(\\d+)$`).exec(master?.node ?? '')?.[1])
  assert.ok(Number.isInteger(node), `no master named ambigqa-${PORT}-node-I: ${JSON.stringify(master)}`)
  return node
}

async function cli(args: string[]): Promise<string> {
  const r = await runCli(args)
  assert.equal(r.code, 0, `ambigqa ${args.join(' ')}:\n${r.stderr}`)
  return r.stdout
}

test('two data nodes and a voting-only one: shards with a replica each, every query answered while a node or the master is killed -9, writes whole or refused, every passage there after it returns', { skip: javaSkip || encoderSkip, timeout: 900_000 }, async (t) => {
  const es = esScript(PORT)
  const dir = mkdtempSync(join(tmpdir(), 'es-cluster-'))
  // Real passages: the first PASSAGES of the demo corpus; 50 others for the writes.
  const lines = gunzipSync(readFileSync(resolve(process.cwd(), 'assets/demo/passages.tsv.gz'))).toString('utf8').trimEnd().split('\n')
  const tsv = join(dir, 'passages.tsv')
  writeFileSync(tsv, `${lines.slice(0, PASSAGES + 1).join('\n')}\n`)
  const extra = join(dir, 'extra.tsv')
  writeFileSync(extra, `${[lines[0], ...lines.slice(-50)].join('\n')}\n`)
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
    // Node 3 votes (master-eligible, voting-only) and holds nothing.
    const nodes = (await client.cat.nodes({ format: 'json', h: 'name,node.role' })) as unknown as { name: string; 'node.role': string }[]
    assert.equal(nodes.length, 3, JSON.stringify(nodes))
    assert.equal(nodes.find((n) => n.name === `ambigqa-${PORT}-node-3`)?.['node.role'], 'mv', JSON.stringify(nodes))

    // The retrievers a server opens on this cluster, with its default timeouts and retries.
    const config = { ...defaults, elasticsearch: { ...defaults.elasticsearch, url: URL, index }, dense: { ...defaults.dense, model: ENCODER, threads: 1 } }
    retrievers.push(await openRetriever({ ...config, retriever: 'bm25-es' }), await openRetriever({ ...config, retriever: 'dense-es' }))
    for (const r of retrievers) assert.equal((await r.search(QUESTIONS[0]!, 10)).length, 10, r.name)

    // A write while the node is down: the master promotes the replicas of its shards and takes it.
    const loss = await runNodeLoss({
      port: PORT, client, index, retrievers, questions: QUESTIONS, k: 10, concurrency: 2, kill: 'other', beforeMs: 10_000, lossMs: 8000, afterMs: 2000,
      duringLoss: () => attemptWrite({ url: URL, index }, extra, 'while-down-'),
    })
    const detail = JSON.stringify(loss)
    t.diagnostic(`node loss: ${detail}`)
    t.diagnostic(`p99 before the loss ${loss.before.p99Ms.toFixed(1)} ms (${loss.before.answered} answered), while node ${loss.killedNode} was down ${loss.duringLoss.p99Ms.toFixed(1)} ms (${loss.duringLoss.answered} answered), after its return ${loss.afterReturn.p99Ms.toFixed(1)} ms (${loss.afterReturn.answered} answered)`)
    assert.equal(loss.killedMaster, false)
    assert.ok(loss.before.answered > 0, detail)
    assert.ok(loss.duringLoss.answered > 0, `answered while node ${loss.killedNode} was down: ${detail}`)
    assert.ok(loss.afterReturn.answered > 0, detail)
    // Every query answered: the reads in flight to the killed node were asked again of the other.
    for (const phase of [loss.before, loss.duringLoss, loss.afterReturn]) assert.equal(phase.errors, 0, detail)
    await client.indices.refresh({ index })
    const countPrefix = async (prefix: string) => (await client.count({ index, query: { prefix: { id: prefix } } })).count
    assert.equal((loss.duringLossResult as WriteAttempt).applied, true, detail)
    assert.equal(await countPrefix('while-down-'), 50)

    const compared = await compareWithStore(client, index, store, 200, vectorField(ENCODER))
    assert.equal(compared.storePassages, PASSAGES)
    assert.equal(loss.countDuringLoss, PASSAGES + 50, 'no passage lost while a node was down, the written ones there')
    assert.equal(compared.indexPassages, PASSAGES + 50)
    assert.equal(compared.indexVectors, PASSAGES)
    assert.equal(compared.sampled, 200)
    assert.equal(compared.matching, 200)

    // The master killed under the same load: the surviving data node and the voting-only one are two
    // votes of three and elect the data node; every query answered, a write taken whole.
    const masterLoss = await runNodeLoss({
      port: PORT, client, index, retrievers, questions: QUESTIONS, k: 10, concurrency: 2, kill: 'master', beforeMs: 5000, lossMs: 8000, afterMs: 2000,
      duringLoss: () => attemptWrite({ url: URL, index }, extra, 'master-down-'),
    })
    const masterDetail = JSON.stringify(masterLoss)
    t.diagnostic(`master loss: ${masterDetail}`)
    t.diagnostic(`p99 before the loss ${masterLoss.before.p99Ms.toFixed(1)} ms (${masterLoss.before.answered} answered), while master node ${masterLoss.killedNode} was down ${masterLoss.duringLoss.p99Ms.toFixed(1)} ms (${masterLoss.duringLoss.answered} answered; node ${masterLoss.reelection?.node} elected ${masterLoss.reelection?.seconds.toFixed(1)} s after the kill), after its return ${masterLoss.afterReturn.p99Ms.toFixed(1)} ms`)
    assert.equal(masterLoss.killedMaster, true)
    assert.ok(masterLoss.reelection, `a master elected while node ${masterLoss.killedNode} was down: ${masterDetail}`)
    assert.ok([1, 2].includes(masterLoss.reelection.node) && masterLoss.reelection.node !== masterLoss.killedNode, `the surviving data node elected: ${masterDetail}`)
    assert.ok(masterLoss.duringLoss.answered > 0, masterDetail)
    for (const phase of [masterLoss.before, masterLoss.duringLoss, masterLoss.afterReturn]) assert.equal(phase.errors, 0, masterDetail)
    assert.equal((masterLoss.duringLossResult as WriteAttempt).applied, true, masterDetail)
    assert.equal(masterLoss.countDuringLoss, PASSAGES + 100)
    await client.indices.refresh({ index })
    assert.equal(await countPrefix('master-down-'), 50)

    // Quorum lost (the master and the voting-only node down, one vote of three left): no write is
    // taken; refused with the coded error, and none of its passages there once both are back.
    const master = await masterNode(client)
    await es('kill-node', String(master))
    await es('kill-node', '3')
    const refused = await attemptWrite({ url: URL, index }, extra, 'no-quorum-')
    t.diagnostic(`write without a quorum: ${JSON.stringify(refused)}`)
    assert.equal(refused.applied, false)
    assert.equal(refused.code, 'AMBIGQA_ERR_ELASTICSEARCH_UNAVAILABLE')
    // Together: each waits until the cluster has all three nodes again.
    await Promise.all([es('start-node', String(master)), es('start-node', '3')])
    for (let waited = 0; (await client.cluster.health({ index, wait_for_status: 'green', timeout: '20s' }, { ignore: [408] })).status !== 'green'; waited += 20) assert.ok(waited < 600, 'green again')
    await client.indices.refresh({ index })
    assert.equal(await countPrefix('no-quorum-'), 0)
    assert.equal((await client.count({ index })).count, PASSAGES + 100)
    const status = await es('status')
    assert.match(status, /"status":"green"/)
    assert.match(status, /3 of 3 nodes running/)
  } finally {
    for (const r of retrievers) await r.close()
    await client.indices.delete({ index, ignore_unavailable: true }).catch(() => undefined)
    await client.close()
    await es('down')
  }
})
