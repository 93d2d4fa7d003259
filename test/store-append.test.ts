// A store that a bad append cannot break (issue 48): real demo passages, built, encoded with the
// real e5 int8 encoder and given an ANN index (forced: the store is far below the size that builds
// one by itself), then appends that fail every way an operator's can (a missing header, a bad line
// past the start a build reads first, the file changed under the unfinished append, kill -9 in the
// middle of a larger one); after each the store answers exactly as before, BM25 and ANN, and encodes
// nothing new. Then an unfinished append resumed (on a copy) equals one never interrupted, the
// others are rolled back by command, and a good append (a bad line in it skipped) is published,
// encoded and found.
import assert from 'node:assert/strict'
import { cpSync, existsSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'node:test'
import { gunzipSync } from 'node:zlib'
import Database from 'better-sqlite3'
import { ANN_MIN_PASSAGES } from '../index/dense/ann-index.js'
import { stagingDir } from '../index/append.js'
import { DEFAULT_ENCODERS_DIR } from '../core/paths.js'
import { DenseEncoder } from '../retriever/dense-encoder.js'
import { DenseRetriever } from '../retriever/dense-retriever.js'
import { annFiles } from '../retriever/dense-vectors.js'
import { PassageStore } from '../retriever/passage-store.js'
import { DEMO_CORPUS } from './helpers/demo-store.js'
import { prerequisite } from './helpers/prerequisite.js'
import { runCli } from './helpers/run-cli.js'

const MODEL = 'e5-small-v2-int8'
const encoderSkip = prerequisite(existsSync(join(DEFAULT_ENCODERS_DIR, MODEL, 'model.onnx')) ? false : `needs models/encoders/${MODEL}: run scripts/assets ${MODEL}`)
const BASE = 1500
const QUESTIONS = ['when did the apple i go on sale', 'who sings don\'t stop believing', 'when was the first super bowl played']
const HEADER = 'id\ttext\ttitle'

/** The demo corpus's passage lines (no header). */
const demoLines = (): string[] => gunzipSync(readFileSync(DEMO_CORPUS)).toString('utf8').trimEnd().split('\n').slice(1)
const tsv = (path: string, lines: readonly string[], header = true): string => {
  writeFileSync(path, `${header ? `${HEADER}\n` : ''}${lines.join('\n')}\n`)
  return path
}

async function cli(args: string[]): Promise<string> {
  const r = await runCli(args)
  assert.equal(r.code, 0, `ambigqa ${args.join(' ')}:\n${r.stderr}`)
  return r.stdout
}

interface Snapshot {
  bm25: unknown[]
  dense: unknown[]
  densePath: string
  stats: Record<string, unknown>
  ann: string
}

/** What the store serves: BM25 (the CLI) and dense (the ANN path) hits, its stats and its ANN manifest. */
async function snapshot(store: string): Promise<Snapshot> {
  const bm25: unknown[] = []
  for (const q of QUESTIONS) bm25.push(JSON.parse(await cli(['search', q, '--store', store, '--json', '-k', '10'])).hits)
  const dense = new DenseRetriever(PassageStore.openReadOnly(store), await DenseEncoder.shared(MODEL, DEFAULT_ENCODERS_DIR, 1))
  const denseHits: unknown[] = []
  try {
    for (const q of QUESTIONS) denseHits.push(await dense.search(q, 10))
  } finally {
    await dense.close()
  }
  const { passages, checksum, segments, terms, postings, state } = JSON.parse(await cli(['index', 'stats', '--store', store, '--json']))
  for (const hits of [...bm25, ...denseHits]) assert.equal((hits as unknown[]).length, 10)
  return { bm25, dense: denseHits, densePath: dense.path, stats: { passages, checksum, segments, terms, postings, state }, ann: readFileSync(annFiles(store, MODEL).manifest, 'utf8') }
}

/** The store serves what it did, its vectors and ANN index need nothing (`index encode` adds none). */
async function servesAsBefore(store: string, before: Snapshot, what: string): Promise<void> {
  const now = await snapshot(store)
  assert.deepEqual(now, before, `after ${what} the store serves as before`)
  const encoded = await cli(['index', 'encode', '--store', store, '--model', MODEL, '--threads', '2'])
  assert.match(encoded, /encoded 0 passages/, what)
  assert.match(encoded, /ANN index of 1,500 .* is up to date/, what)
}

async function failedBuild(args: string[], expected: RegExp): Promise<string> {
  const r = await runCli(['index', 'build', ...args])
  assert.equal(r.code, 1, `expected a failure: ${r.stdout}${r.stderr}`)
  assert.match(r.stderr, expected)
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace')
  return r.stderr
}

test('a bad, changed or killed append leaves the store serving what it had; resumed it equals an uninterrupted one; rolled back by command; a good one is published, encoded and found', { skip: encoderSkip, timeout: 900_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'append-'))
  const lines = demoLines()
  assert.ok(lines.length > 5000 && BASE < ANN_MIN_PASSAGES)
  const store = join(dir, 'store')
  await cli(['index', 'build', '--source', tsv(join(dir, 'base.tsv'), lines.slice(0, BASE)), '--store', store])
  const encoded = await cli(['index', 'encode', '--store', store, '--model', MODEL, '--threads', '2', '--ann', 'always'])
  assert.match(encoded, /encoded 1,500 passages/)
  assert.match(encoded, /ANN index of 1,500 e5-small-v2-int8 vectors \(HNSW i8, M 16\) built/)
  const before = await snapshot(store)
  assert.equal(before.densePath, 'ann')
  assert.equal(before.stats.passages, BASE)

  // 1. No DPR header: refused before anything is staged.
  await failedBuild(['--source', tsv(join(dir, 'no-header.tsv'), lines.slice(BASE, BASE + 20), false), '--store', store],
    /AMBIGQA_ERR_SOURCE_MALFORMED: .*no-header\.tsv, line 1: expected the DPR header/)
  assert.ok(!existsSync(stagingDir(store)))
  await servesAsBefore(store, before, 'a source without its header')

  // 2. A bad line past the start a build reads first: the append stops there, unpublished.
  const middle = lines.slice(BASE, BASE + 1500)
  middle[1200] = `${middle[1200]!.split('\t')[0]}\tbroken row`
  const badMiddle = tsv(join(dir, 'bad-middle.tsv'), middle)
  const stopped = await failedBuild(['--source', badMiddle, '--store', store, '--batch-size', '100'],
    /AMBIGQA_ERR_SOURCE_MALFORMED: .*bad-middle\.tsv, line 1202: expected 3 tab-separated fields.*The append is unfinished and unpublished: the store at .* serves its 1500 passages as before/)
  assert.match(stopped, new RegExp(`ambigqa index rollback --store ${store}`))
  assert.match(await cli(['index', 'stats', '--store', store]), /append\s+unfinished, not served: 1200 passages staged from .*bad-middle\.tsv/)
  await servesAsBefore(store, before, 'an append stopped by a bad line')

  // 3. The file fixed under the unfinished append: it cannot resume, and says how to get out.
  utimesSync(badMiddle, new Date(), new Date(Date.now() + 60_000))
  await failedBuild(['--source', badMiddle, '--store', store], new RegExp(`AMBIGQA_ERR_SOURCE_CHANGED: .*Drop the unfinished append with \`ambigqa index rollback --store ${store}\``))
  // Nor does another source start while it is staged.
  await failedBuild(['--source', tsv(join(dir, 'other.tsv'), lines.slice(BASE + 3000, BASE + 3010)), '--store', store],
    /AMBIGQA_ERR_APPEND_UNFINISHED: an unfinished append .* is staged \(1200 passages, not yet served\), and this build does not name its source .*bad-middle\.tsv/)
  const rolledBack = JSON.parse(await cli(['index', 'rollback', '--store', store, '--json']))
  assert.deepEqual(rolledBack, { undone: 'append', dropped: 1200, sources: [badMiddle], passages: BASE })
  assert.ok(!existsSync(stagingDir(store)))
  assert.match(await cli(['index', 'rollback', '--store', store]), /nothing to roll back \(1,500 passages, ready\)/)
  await servesAsBefore(store, before, 'a rollback')

  // 4. kill -9 in the middle of a larger append, in a child process.
  const big = lines.slice(BASE + 20)
  const bigTsv = tsv(join(dir, 'big.tsv'), [0, 1, 2, 3].flatMap((copy) => big.map((line) => line.replace(/^(\d+)\t/, `$1-${copy}\t`))))
  const reference = join(dir, 'reference')
  cpSync(store, reference, { recursive: true })
  await cli(['index', 'build', '--source', bigTsv, '--store', reference, '--batch-size', '200'])
  const staged = join(stagingDir(store), 'passages.sqlite')
  let timer: NodeJS.Timeout | undefined
  const killed = await runCli(['index', 'build', '--source', bigTsv, '--store', store, '--batch-size', '200'], {
    onSpawn: (child) => {
      timer = setInterval(() => {
        try {
          const db = new Database(staged, { readonly: true, fileMustExist: true })
          const n = (db.prepare('SELECT count(*) AS n FROM passages').get() as { n: number }).n
          db.close()
          if (n > 3000) child.kill('SIGKILL')
        } catch {
          // not made yet, or between commits
        }
      }, 5)
    },
  })
  clearInterval(timer)
  assert.equal(killed.signal, 'SIGKILL', `the append finished before it could be killed: ${killed.stderr}`)
  assert.match(await cli(['index', 'stats', '--store', store]), /append\s+unfinished, not served: \d+ passages staged from .*big\.tsv/)
  await servesAsBefore(store, before, 'an append killed -9')

  // Resumed (on a copy), it equals the append that was never interrupted.
  const resumed = join(dir, 'resumed')
  cpSync(store, resumed, { recursive: true })
  const report = JSON.parse(await cli(['index', 'build', '--source', bigTsv, '--store', resumed, '--json']))
  assert.equal(report.passages, BASE + 4 * big.length)
  assert.ok(report.added > 0 && report.added < 4 * big.length, `resumed after what was staged: ${JSON.stringify(report)}`)
  const statsOf = async (s: string) => JSON.parse(await cli(['index', 'stats', '--store', s, '--json', '--verify']))
  const [a, b] = [await statsOf(reference), await statsOf(resumed)]
  assert.equal(b.verify.ok, true, JSON.stringify(b.verify))
  for (const key of ['passages', 'checksum', 'terms', 'postings', 'state']) assert.equal(b[key], a[key], key)
  assert.ok(!existsSync(stagingDir(resumed)))
  const query = big[7]!.split('\t')[1]!.slice(0, 200)
  assert.deepEqual(JSON.parse(await cli(['search', query, '--store', resumed, '--json'])).hits, JSON.parse(await cli(['search', query, '--store', reference, '--json'])).hits)

  // Rolled back, the killed one leaves the store as it was.
  assert.equal(JSON.parse(await cli(['index', 'rollback', '--store', store, '--json'])).undone, 'append')
  await servesAsBefore(store, before, 'rolling back a killed append')

  // 5. A good append (its bad line skipped), encoded: the new passage is found.
  const extra = lines.slice(BASE, BASE + 20)
  const withBadLine = [...extra.slice(0, 10), 'oops\tbroken row', ...extra.slice(10)]
  const appended = JSON.parse(await cli(['index', 'build', '--source', tsv(join(dir, 'extra.tsv'), withBadLine), '--store', store, '--on-error', 'skip', '--json']))
  assert.deepEqual({ passages: appended.passages, added: appended.added, skipped: appended.skipped }, { passages: BASE + 20, added: 20, skipped: 1 })
  assert.equal((await statsOf(store)).verify.ok, true)
  const encodedNew = await cli(['index', 'encode', '--store', store, '--model', MODEL, '--threads', '2'])
  assert.match(encodedNew, /encoded 20 passages/)
  assert.match(encodedNew, /ANN index of 1,520 e5-small-v2-int8 vectors .* built/)
  const [newId, newText] = extra[15]!.split('\t')
  const question = newText!.slice(0, 200)
  assert.equal(JSON.parse(await cli(['search', question, '--store', store, '--json'])).hits[0].id, newId)
  const dense = new DenseRetriever(PassageStore.openReadOnly(store), await DenseEncoder.shared(MODEL, DEFAULT_ENCODERS_DIR, 1))
  try {
    assert.equal(dense.path, 'ann')
    assert.equal((await dense.search(question, 5))[0]!.id, newId)
  } finally {
    await dense.close()
  }
})

test('a store an older version left building after a failed append goes back to what it served with index rollback; an unfinished first build has nothing to go back to', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'append-old-'))
  const lines = demoLines()
  const store = join(dir, 'store')
  await cli(['index', 'build', '--source', tsv(join(dir, 'base.tsv'), lines.slice(0, 300)), '--store', store])
  const before = JSON.parse(await cli(['index', 'stats', '--store', store, '--json']))
  const hits = await cli(['search', QUESTIONS[0]!, '--store', store, '--json'])
  // What an older version left: the append's passages written into the store, its source unfinished, the state 'building'.
  const db = new Database(join(store, 'passages.sqlite'))
  const insert = db.prepare('INSERT INTO passages (id, title, text) VALUES (?, ?, ?)')
  for (const line of lines.slice(300, 350)) {
    const [id, text, title] = line.split('\t')
    insert.run(id, title, text)
  }
  db.prepare("INSERT INTO sources (key, path, format, fingerprint, records, passages) VALUES ('/x/extra.tsv|dpr-tsv|', '/x/extra.tsv', 'dpr-tsv', '1:1', 50, 50)").run()
  db.prepare("UPDATE meta SET value = 'building' WHERE key = 'state'").run()
  db.close()
  const refused = await runCli(['search', QUESTIONS[0]!, '--store', store])
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, new RegExp(`AMBIGQA_ERR_STORE_INCOMPLETE: .*ambigqa index rollback --store ${store}`))

  assert.deepEqual(JSON.parse(await cli(['index', 'rollback', '--store', store, '--json'])), { undone: 'build', dropped: 50, sources: ['/x/extra.tsv'], passages: 300 })
  const after = JSON.parse(await cli(['index', 'stats', '--store', store, '--json', '--verify']))
  assert.equal(after.verify.ok, true)
  assert.deepEqual({ ...after, verify: undefined, bytes: undefined }, { ...before, verify: undefined, bytes: undefined })
  assert.equal(await cli(['search', QUESTIONS[0]!, '--store', store, '--json']).then((out) => JSON.stringify(JSON.parse(out).hits)), JSON.stringify(JSON.parse(hits).hits))

  // A first build stopped by a bad line: resumed or deleted, never rolled back.
  const first = join(dir, 'first')
  const rows = lines.slice(0, 1500)
  rows[1200] = '1\tbroken row'
  assert.equal((await runCli(['index', 'build', '--source', tsv(join(dir, 'bad.tsv'), rows), '--store', first])).code, 1)
  const nothing = await runCli(['index', 'rollback', '--store', first])
  assert.equal(nothing.code, 1)
  assert.match(nothing.stderr, /AMBIGQA_ERR_USAGE: nothing to roll back to: the passage store at .* was never ready before its unfinished build .* Run the same `ambigqa index build` again to resume it/)
  const missing = await runCli(['index', 'rollback', '--store', join(dir, 'none')])
  assert.match(missing.stderr, /AMBIGQA_ERR_STORE_NOT_FOUND/)
})
