// Co-training as a server job (issue 18, with issue 20's job rules): the token, only the
// project's cotrain-* configs by name, one run at a time, progress on the job; and the pieces the
// run reports with: the progress tracker and report.html.
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, test } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import { Bm25SqliteRetriever } from '../retriever/bm25-sqlite-retriever.js'
import { SqlitePassageSource } from '../retriever/passage-source.js'
import { PassageStore } from '../retriever/passage-store.js'
import { defaults } from '../core/config.js'
import { Pipeline } from '../src/pipeline/pipeline.js'
import { ambigqaServer, type CoTrainingRunner } from '../src/server/app.js'
import { renderCoTrainingReport } from '../src/training/cotrain-report.js'
import { CoTrainingTracker } from '../src/training/cotrain-run.js'
import { buildDemoStore } from './helpers/demo-store.js'

const TOKEN = 'a-token-of-sixteen-or-more'
let store: PassageStore
let pipeline: Pipeline

before(async () => {
  const dir = await buildDemoStore('cotrain-job-')
  store = PassageStore.openReadOnly(dir)
  pipeline = new Pipeline({ retriever: new Bm25SqliteRetriever(PassageStore.openReadOnly(dir), defaults.bm25) })
})
after(async () => { await pipeline.close(); store.close() })

async function app(coTraining: CoTrainingRunner): Promise<FastifyInstance> {
  const instance = Fastify({ logger: false })
  await instance.register(ambigqaServer, { pipeline, passages: new SqlitePassageSource(store), jobs: { enabled: true, authToken: TOKEN, dataRoots: [], coTraining } })
  return instance
}

type Body = { data?: any; errors?: { message: string; extensions?: { code?: string } }[] }
async function gql(instance: FastifyInstance, query: string, token = TOKEN) {
  const response = await instance.inject({ method: 'POST', url: '/graphql', headers: { authorization: `Bearer ${token}` }, body: { query } })
  return response.json() as Body
}
const start = (name: string) => `mutation { startCoTraining(config: ${JSON.stringify(name)}) { id kind state } }`

test('startCoTraining: token, config names, one at a time, progress and result on the job', async () => {
  let release: () => void = () => {}
  const runs: string[] = []
  const instance = await app(async (file, onProgress) => {
    runs.push(file)
    onProgress({ fraction: 0.25, message: 'step 5 of 20, 0.6 examples/s, ETA 25 s' })
    await new Promise<void>((r) => { release = r })
    return 'co-training done'
  })
  try {
    assert.equal((await gql(instance, start('cotrain-tiny'), 'wrong-token-of-sixteen')).errors?.[0]?.extensions?.code, 'AMBIGQA_ERR_UNAUTHORIZED')
    for (const name of ['../configs/cotrain-tiny', 'extractive-tiny', 'cotrain-none', '/etc/passwd']) {
      assert.equal((await gql(instance, start(name))).errors?.[0]?.extensions?.code, 'AMBIGQA_ERR_COTRAIN_CONFIG', name)
    }
    const started = await gql(instance, start('cotrain-tiny'))
    const id = started.data.startCoTraining.id as string
    assert.equal(started.data.startCoTraining.kind, 'cotraining')
    await sleep(20)
    assert.equal((await gql(instance, start('cotrain-tiny'))).errors?.[0]?.extensions?.code, 'AMBIGQA_ERR_JOB_BUSY')
    const running = (await gql(instance, `{ job(id: "${id}") { state progress message } }`)).data.job
    assert.deepEqual(running, { state: 'RUNNING', progress: 0.25, message: 'step 5 of 20, 0.6 examples/s, ETA 25 s' })
    release()
    await sleep(20)
    const done = (await gql(instance, `{ job(id: "${id}") { state progress message } }`)).data.job
    assert.deepEqual(done, { state: 'SUCCEEDED', progress: 1, message: 'co-training done' })
    assert.equal(runs.length, 1)
    assert.match(runs[0]!, /train\/configs\/cotrain-tiny\.json$/)
  } finally {
    release()
    await instance.close()
  }
})

test('the tracker turns the Python progress lines into the share done and a line with the rate and ETA', () => {
  const tracker = new CoTrainingTracker({ out: 'x', committee: 3, iterations: 1, steps: 10, partial_limit: 5 })
  // 9 units: 6 trainings (2 committees of 3) and 3 members' votes.
  assert.equal(tracker.describe({ stage: 'train', committee: 1, member: 0, rows: 12 })?.fraction, 0)
  const step = tracker.describe({ step: 5, of: 10, loss: 1, examples_per_s: 0.5, eta_s: 40 })!
  assert.equal(step.fraction, 0.5 / 9)
  assert.match(step.message, /0\.5 examples\/s, ETA 40 s/)
  assert.equal(tracker.describe({ stage: 'predict', member: '1.2', done: 5, total: 5, examples_per_s: 2, eta_s: 0 })?.fraction, 6 / 9)
  assert.equal(tracker.describe({ stage: 'train', committee: 2, member: 2, rows: 15 })?.fraction, 8 / 9)
  assert.equal(tracker.describe({ stage: 'unknown' }), undefined)
})

test('report.html: silver sizes, the vote distribution and F1 per committee, as inline SVG without script', () => {
  const html = renderCoTrainingReport({
    config: 'train/configs/cotrain-tiny.json', committee: 3, iterations: 1, steps: 4, partial: 24, secondsThisStart: 9,
    silver: [{ iteration: 1, multi: 2, single: 20, wait: 2, topVote: { '0': 20, '1': 2, '3': 2 }, abstentions: 7 }],
    evals: [{ name: 'single', reader: 'a', f1All: 0.3, f1Multi: 0.2, n: 300, seconds: 40 }, { name: 'committee-2', reader: 'b', f1All: 0.316, f1Multi: null, n: 300, seconds: 90 }],
  })
  assert.match(html, /Silver set per iteration/)
  assert.match(html, /most votes for an extra answer/)
  assert.match(html, /<td>committee-2<\/td><td>31\.6<\/td>/)
  assert.ok(!/<script/i.test(html))
  assert.equal((html.match(/<svg/g) ?? []).length, 3)
})
