import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { test } from 'node:test'
import Fastify from 'fastify'
// ws ships no types here; the client below speaks the graphql-ws protocol (graphql-transport-ws) by hand.
// @ts-expect-error no declaration file for ws
import WebSocket from 'ws'
import { buildIndex } from '../index/build-index.js'
import { SqlitePassageSource } from '../retriever/passage-source.js'
import { PassageStore } from '../retriever/passage-store.js'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { defaults } from '../core/config.js'
import { silentLogger } from '../core/log.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { ambigqaServer } from '../src/server/app.js'

const demo = resolve(process.cwd(), 'assets/demo/passages.tsv.gz')

test('a websocket jobProgress subscription receives the progress of a real startIndexing job', async () => {
  const root = mkdtempSync(join(tmpdir(), 'server-ws-'))
  const storeDir = join(root, 'store')
  await buildIndex({ store: storeDir, sources: [{ path: demo }], onError: 'fail', batchSize: 2000, segmentSize: 10000, workers: 1, log: silentLogger })
  const store = PassageStore.openReadOnly(storeDir)
  const pipeline = new Pipeline({ retriever: new Bm25SqliteRetriever(PassageStore.openReadOnly(storeDir), defaults.bm25) })
  const app = Fastify({ logger: false })
  const token = 'subscription-test-token'
  await app.register(ambigqaServer, { pipeline, passages: new SqlitePassageSource(store), jobs: { enabled: true, authToken: token, dataRoots: [dirname(demo)], indexStore: join(root, 'built') } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as { port: number }).port

  const started = await app.inject({ method: 'POST', url: '/graphql', headers: { authorization: `Bearer ${token}` }, body: { query: `mutation { startIndexing(source: ${JSON.stringify(demo)}) { id state } }` } })
  const id = started.json().data.startIndexing.id as string

  const socket = new WebSocket(`ws://127.0.0.1:${port}/graphql`, 'graphql-transport-ws')
  const received: { state: string; progress: number | null }[] = []
  await new Promise<void>((done, fail) => {
    socket.on('error', fail)
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init' })))
    socket.on('message', (raw: Buffer) => {
      const message = JSON.parse(String(raw))
      if (message.type === 'connection_ack') {
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: `subscription { jobProgress(id: "${id}") { id state progress message } }` } }))
      } else if (message.type === 'next') {
        if (message.payload.errors) return fail(new Error(JSON.stringify(message.payload.errors)))
        received.push(message.payload.data.jobProgress)
      } else if (message.type === 'complete') {
        done()
      } else if (message.type === 'error') {
        fail(new Error(JSON.stringify(message.payload)))
      }
    })
  })
  socket.close()
  assert.equal(received.at(-1)!.state, 'SUCCEEDED', JSON.stringify(received))
  assert.ok(received.some((j) => j.state === 'RUNNING' && j.progress !== null && j.progress > 0 && j.progress < 1), JSON.stringify(received))
  const job = await app.inject({ method: 'POST', url: '/graphql', body: { query: `{ job(id: "${id}") { state progress } }` } })
  assert.deepEqual(job.json().data.job, { state: 'SUCCEEDED', progress: 1 })
  const built = PassageStore.openReadOnly(join(root, 'built'))
  assert.equal(built.count(), 5531)
  built.close()
  await app.close()
  await pipeline.close()
  store.close()
})
