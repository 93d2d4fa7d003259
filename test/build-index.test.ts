import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'node:test'
import Database from 'better-sqlite3'
import { buildIndex, type BuildOptions } from '../index/build-index.js'
import { PassageStore } from '../retriever/passage-store.js'
import { silentLogger } from '../core/log.js'
import { DEMO_CORPUS } from './helpers/demo-store.js'
import { runCli } from './helpers/run-cli.js'
import { sharedFile } from './helpers/shared-data.js'

const tmp = () => mkdtempSync(join(tmpdir(), 'build-'))
const options = (store: string, path: string, extra: Partial<BuildOptions> = {}): BuildOptions => ({
  store, sources: [{ path }], onError: 'fail', batchSize: 500, segmentSize: 2000, workers: 1, log: silentLogger, ...extra,
})
const stats = (dir: string) => {
  const store = PassageStore.openForInspection(dir)
  try {
    return store.stats()
  } finally {
    store.close()
  }
}

const dprTsv = sharedFile('corpus/dpr-asqa300.tsv')

test('building twice adds nothing the second time', { skip: dprTsv.skip }, async () => {
  const dir = join(tmp(), 'store')
  const first = await buildIndex(options(dir, dprTsv.path))
  assert.equal(first.added, 5531)
  const before = stats(dir)
  const second = await buildIndex(options(dir, dprTsv.path))
  assert.equal(second.added, 0)
  assert.deepEqual(stats(dir), before)
  assert.equal(before.state, 'ready')
  assert.equal(before.segments, 3)
  assert.match(before.checksum, /^[0-9a-f]{64}$/)
})

test('a source changed after its build finished is said and kept; under an unfinished build it is AMBIGQA_ERR_SOURCE_CHANGED', async () => {
  const dir = tmp()
  const path = join(dir, 'small.tsv')
  writeFileSync(path, 'id\ttext\ttitle\n1\tthe Giants won\tGiants\n2\tthe Athletics won\tAthletics\n')
  const store = join(dir, 'store')
  assert.equal((await buildIndex(options(store, path))).added, 2)
  // The same bytes copied in again (a re-provisioned data folder): a new mtime.
  utimesSync(path, new Date(), new Date(Date.now() + 60_000))
  const warnings: string[] = []
  const log = { ...silentLogger, warn: (_fields: unknown, message: string) => { warnings.push(message) } }
  assert.equal((await buildIndex(options(store, path, { log: log as typeof silentLogger }))).added, 0)
  assert.equal(warnings.length, 1)
  assert.match(warnings[0]!, /source changed since it was indexed/)
  assert.equal(stats(store).passages, 2)
  // The same change under an unfinished first build cannot resume.
  const db = new Database(join(store, 'passages.sqlite'))
  db.prepare('UPDATE sources SET done = 0').run()
  db.prepare("UPDATE meta SET value = 'building' WHERE key = 'state'").run()
  db.close()
  utimesSync(path, new Date(), new Date(Date.now() + 120_000))
  await assert.rejects(buildIndex(options(store, path)), (e: { code?: string }) => e.code === 'AMBIGQA_ERR_SOURCE_CHANGED')
})

/** A real TSV five times the sample (ids suffixed), so a build lasts long enough to be killed. */
function biggerTsv(dir: string): string {
  const lines = readFileSync(dprTsv.path, 'utf8').trimEnd().split('\n')
  const out = [lines[0]]
  for (let copy = 0; copy < 5; copy++) for (const line of lines.slice(1)) out.push(line.replace(/^(\d+)\t/, `$1-${copy}\t`))
  const path = join(dir, 'big.tsv')
  writeFileSync(path, `${out.join('\n')}\n`)
  return path
}

/** Starts a CLI build and SIGKILLs it as soon as `ready(db)` says the moment has come. */
async function killBuildWhen(store: string, source: string, ready: (db: Database.Database) => boolean): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const result = await runCli(['index', 'build', '--source', source, '--store', store, '--batch-size', '200', '--segment-size', '1500'], {
    onSpawn: (child) => {
      timer = setInterval(() => {
        try {
          const db = new Database(join(store, 'passages.sqlite'), { readonly: true, fileMustExist: true })
          const now = ready(db)
          db.close()
          if (now) child.kill('SIGKILL')
        } catch {
          // not created yet, or between commits
        }
      }, 5)
    },
  })
  clearInterval(timer)
  assert.equal(result.signal, 'SIGKILL', `the build finished before it could be killed: ${result.stderr}`)
}

test('a build killed with SIGKILL, then run again, equals an uninterrupted build', { skip: dprTsv.skip, timeout: 180_000 }, async () => {
  const dir = tmp()
  const source = biggerTsv(dir)
  const reference = join(dir, 'reference')
  assert.equal((await runCli(['index', 'build', '--source', source, '--store', reference, '--batch-size', '200', '--segment-size', '1500'])).code, 0)

  const killed = join(dir, 'killed')
  const count = (db: Database.Database, sql: string) => (db.prepare(sql).get() as { n: number }).n
  // Once while reading the source, once while indexing.
  await killBuildWhen(killed, source, (db) => count(db, 'SELECT count(*) AS n FROM passages') > 3000)
  const partial = stats(killed)
  assert.equal(partial.state, 'building')
  assert.ok(partial.passages > 0 && partial.passages < 27655)
  const search = await runCli(['search', 'pirates', '--store', killed])
  assert.equal(search.code, 1)
  assert.match(search.stderr, /AMBIGQA_ERR_STORE_INCOMPLETE/)
  assert.match(search.stderr, /Run the same `ambigqa index build` again to resume/)

  await killBuildWhen(killed, source, (db) => count(db, 'SELECT count(*) AS n FROM segments') >= 3)
  assert.equal(stats(killed).state, 'building')

  const resumed = await runCli(['index', 'build', '--source', source, '--store', killed, '--json'])
  assert.equal(resumed.code, 0, resumed.stderr)
  const a = stats(reference)
  const b = stats(killed)
  assert.equal(b.passages, 27655)
  assert.equal(b.passages, a.passages)
  assert.equal(b.checksum, a.checksum)
  assert.equal(b.terms, a.terms)
  assert.equal(b.postings, a.postings)
  // Both answer a query identically.
  const q = ['search', 'When was the first pirates of the caribbean movie released?', '--json', '-k', '10']
  const hitsA = JSON.parse((await runCli([...q, '--store', reference])).stdout).hits
  const hitsB = JSON.parse((await runCli([...q, '--store', killed])).stdout).hits
  assert.deepEqual(hitsB, hitsA)
})

test('a bad record stops the build with the file and line (before the store is made when it is among the first), a first build resumes skipping it, and skip mode counts it', async () => {
  const dir = tmp()
  const path = join(dir, 'bad.tsv')
  writeFileSync(path, 'id\ttext\ttitle\n1\tthe first passage\tOne\n2\tbroken row\n3\tthe third passage\tThree\n')
  const store = join(dir, 'store')
  const failed = await runCli(['index', 'build', '--source', path, '--store', store])
  assert.equal(failed.code, 1)
  assert.match(failed.stderr, /AMBIGQA_ERR_SOURCE_MALFORMED: .*bad\.tsv, line 3: expected 3 tab-separated fields/)
  assert.ok(!existsSync(store), 'the source was read at its start before anything was written')

  // Past the start that is read first: the first build stops there, unusable, and resumes.
  const late = join(dir, 'late.tsv')
  const rows = Array.from({ length: 1500 }, (_, i) => (i === 1200 ? `${i}\tbroken row` : `${i}\tpassage number ${i}\tTitle ${i}`))
  writeFileSync(late, `id\ttext\ttitle\n${rows.join('\n')}\n`)
  const stopped = await runCli(['index', 'build', '--source', late, '--store', store, '--batch-size', '100'])
  assert.equal(stopped.code, 1)
  assert.match(stopped.stderr, /AMBIGQA_ERR_SOURCE_MALFORMED: .*late\.tsv, line 1202: expected 3 tab-separated fields/)
  assert.equal(stats(store).state, 'building')
  const stats1 = await runCli(['index', 'stats', '--store', store])
  assert.match(stats1.stdout, /state\s+building/)
  const resumed = await runCli(['index', 'build', '--source', late, '--store', store, '--on-error', 'skip', '--json'])
  assert.equal(resumed.code, 0, resumed.stderr)
  assert.deepEqual(stats(store).sources.map((s) => ({ passages: s.passages, skipped: s.skipped, done: s.done })), [{ passages: 1499, skipped: 1, done: true }])
  assert.equal(stats(store).state, 'ready')

  const skipped = await runCli(['index', 'build', '--source', path, '--store', join(dir, 'skip'), '--on-error', 'skip', '--json'])
  assert.equal(skipped.code, 0, skipped.stderr)
  assert.deepEqual(
    (({ passages, skipped: s }) => ({ passages, skipped: s }))(JSON.parse(skipped.stdout)),
    { passages: 2, skipped: 1 },
  )
})

test('empty sources, unknown formats, missing files and missing stores are clear errors', async () => {
  const dir = tmp()
  const empty = join(dir, 'empty.tsv')
  writeFileSync(empty, '')
  const headerOnly = join(dir, 'header.tsv')
  writeFileSync(headerOnly, 'id\ttext\ttitle\n')
  const junk = join(dir, 'junk.dat')
  writeFileSync(junk, Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 0, 1, 2]))
  const cases: [string[], RegExp][] = [
    [['--source', empty], /AMBIGQA_ERR_SOURCE_EMPTY: source .*empty\.tsv is empty/],
    [['--source', headerOnly], /AMBIGQA_ERR_SOURCE_EMPTY: source .*header\.tsv is empty/],
    [['--source', junk], /AMBIGQA_ERR_SOURCE_FORMAT_UNKNOWN: cannot tell the format of .*junk\.dat \(it looks like binary data\)/],
    [['--source', join(dir, 'nope.tsv')], /AMBIGQA_ERR_SOURCE_NOT_FOUND: source .*nope\.tsv does not exist/],
    [['--source', headerOnly, '--format', 'csv'], /AMBIGQA_ERR_USAGE: unknown --format 'csv'/],
  ]
  for (const [args, expected] of cases) {
    const result = await runCli(['index', 'build', ...args, '--store', join(dir, 's')])
    assert.equal(result.code, 1, args.join(' '))
    assert.match(result.stderr, expected)
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace')
  }
  const missing = await runCli(['search', 'anything', '--store', join(dir, 'none')])
  assert.equal(missing.code, 1)
  assert.match(missing.stderr, /AMBIGQA_ERR_STORE_NOT_FOUND: no passage store at .*none\. Build one with `ambigqa index build/)
})

const wikitext = sharedFile('corpus/wikitext')
test('index build from a multistream .xml.bz2 dump of real articles; a truncated one fails with its offset', { skip: wikitext.skip, timeout: 120_000 }, async () => {
  const { realArticles, writeMediaWikiDumpMultistream } = await import('../bench/make-dump.js')
  const dir = tmp()
  const dump = join(dir, 'enwiki-test-pages-articles-multistream.xml.bz2')
  const articles = realArticles(wikitext.path)
  writeMediaWikiDumpMultistream([...articles, { title: 'Old name', id: 99_999, text: '#REDIRECT [[Bazooka]]', redirect: 'Bazooka' }], dump, 10)
  const store = join(dir, 'store')
  const build = await runCli(['index', 'build', '--source', dump, '--store', store, '--json'])
  assert.equal(build.code, 0, build.stderr)
  const s = stats(store)
  assert.equal(s.state, 'ready')
  assert.ok(s.passages > articles.length, `${s.passages} passages from ${articles.length} articles`)
  assert.equal(s.sources[0]!.format, 'mediawiki-xml')
  const hits = JSON.parse((await runCli(['search', 'Bazooka rocket launcher', '--store', store, '--json', '-k', '3'])).stdout).hits
  assert.equal(hits[0].title, 'Bazooka')
  assert.ok(!hits.some((h: { title: string }) => h.title === 'Old name'), 'redirects are skipped')

  const truncated = join(dir, 'cut.xml.bz2')
  const bytes = readFileSync(dump)
  writeFileSync(truncated, bytes.subarray(0, Math.floor(bytes.length / 2)))
  const failed = await runCli(['index', 'build', '--source', truncated, '--store', join(dir, 'cut')])
  assert.equal(failed.code, 1)
  assert.match(failed.stderr, /AMBIGQA_ERR_SOURCE_TRUNCATED: .*cut\.xml\.bz2 is truncated or corrupt at byte \d+/)
  // Fewer passages than a build reads before it writes: found before the store was made.
  assert.ok(!existsSync(join(dir, 'cut')))
})

test('one writer per store: a second writer in the same process or in another one is refused with STORE_BUSY, and the store is free again once closed', async () => {
  const dir = join(tmp(), 'store')
  const first = PassageStore.openForBuild(dir)
  try {
    assert.throws(() => PassageStore.openForBuild(dir), (err: Error & { code?: string }) =>
      err.code === 'AMBIGQA_ERR_STORE_BUSY' && err.message.includes(`another writer in this process (${process.pid})`))
    const other = await runCli(['index', 'build', '--source', DEMO_CORPUS, '--store', dir])
    assert.equal(other.code, 1)
    assert.match(other.stderr, new RegExp(`AMBIGQA_ERR_STORE_BUSY: the passage store at .* is being written by process ${process.pid}; one writer at a time`))
  } finally {
    first.close()
  }
  const built = await runCli(['index', 'build', '--source', DEMO_CORPUS, '--store', dir])
  assert.equal(built.code, 0, built.stderr)
  assert.equal(stats(dir).passages, 5531)
})
