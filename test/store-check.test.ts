// A damaged or inconsistent store is found and named (AMBIGQA_ERR_STORE_CORRUPT with the fix),
// never an internal error with a stack trace: the quick check `serve` runs at every start, and
// `index stats --verify`. The damage is real: the states two builds writing one store left,
// postings changed under unchanged passages, random bytes in the file, an empty file.
import assert from 'node:assert/strict'
import { closeSync, cpSync, mkdtempSync, openSync, statSync, writeFileSync, writeSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { before, test } from 'node:test'
import Database from 'better-sqlite3'
import { PassageStore, STORE_FILE } from '../retriever/passage-store.js'
import { checkStore } from '../index/store-check.js'
import { AmbigqaError } from '../core/errors.js'
import { silentLogger } from '../core/log.js'
import { openCheckedStore } from '../src/server/start.js'
import { buildDemoStore } from './helpers/demo-store.js'
import { runCli, type CliResult } from './helpers/run-cli.js'

let pristine = ''
before(async () => { pristine = await buildDemoStore('store-check-') })

/** A copy of the demo store, changed by `damage`. */
function damaged(damage: (file: string) => void): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'store-damaged-')), 'store')
  cpSync(pristine, dir, { recursive: true })
  damage(join(dir, STORE_FILE))
  return dir
}

function withDb(file: string, sql: string): void {
  const db = new Database(file)
  db.exec(sql)
  db.close()
}

function assertCorrupt(result: CliResult, problem: RegExp): void {
  assert.equal(result.code, 1, result.stderr)
  assert.match(result.stderr, /AMBIGQA_ERR_STORE_CORRUPT: the passage store at .* is unreadable or inconsistent \(/)
  assert.match(result.stderr, problem)
  assert.match(result.stderr, /Delete the folder and build it again/)
  assert.doesNotMatch(result.stderr, /AMBIGQA_ERR_INTERNAL|\n\s+at /)
}

test('a sound store passes both checks; index stats --verify says so and exits 0', async () => {
  const store = PassageStore.openReadOnly(pristine)
  const quick = checkStore(store, 'quick')
  const full = checkStore(store, 'full')
  store.close()
  assert.deepEqual([quick.ok, quick.problems, full.ok, full.problems], [true, [], true, []])
  const result = await runCli(['index', 'stats', '--store', pristine, '--verify'])
  assert.equal(result.code, 0, result.stderr)
  assert.match(result.stdout, /\nverify {5}ok \(/)
})

test('segments written twice (two builds on one store): the quick check, serve and index stats --verify refuse it', async () => {
  const dir = damaged((file) => withDb(file, `
    INSERT INTO segments SELECT seg + 100, first_rowid, last_rowid, title_norms, text_norms, title_docs, text_docs, title_terms, text_terms FROM segments;
    INSERT INTO postings SELECT term, field, seg + 100, df, data, skips, maxima FROM postings;`))
  const store = PassageStore.openReadOnly(dir)
  const quick = checkStore(store, 'quick')
  store.close()
  assert.equal(quick.ok, false)
  assert.match(quick.problems[0]!, /indexes passages 1-\d+ again \(overlapping segments: two builds wrote this store\)/)
  assert.throws(() => openCheckedStore(dir, silentLogger), (err: AmbigqaError) => err.code === 'AMBIGQA_ERR_STORE_CORRUPT' && /overlapping/.test(err.message))
  assertCorrupt(await runCli(['index', 'stats', '--store', dir, '--verify']), /overlapping segments/)
  assertCorrupt(await runCli(['serve', '--store', dir, '--port', '0']), /overlapping segments/)
})

test('postings changed under unchanged passages: the checksum cannot see it, --verify re-derives the segment and does', async () => {
  const dir = damaged((file) => withDb(file, "UPDATE postings SET data = zeroblob(length(data)) WHERE term = 'potter' AND field = 1"))
  const store = PassageStore.openReadOnly(dir)
  assert.equal(checkStore(store, 'quick').ok, true, 'the quick check reads the segments table only')
  const full = checkStore(store, 'full')
  store.close()
  assert.equal(full.ok, false)
  assert.match(full.problems.join('\n'), /segment \d+ \(passages \d+-\d+\): .* \(same counts, different postings\)/)
  const stats = await runCli(['index', 'stats', '--store', dir, '--json'])
  const original = await runCli(['index', 'stats', '--store', pristine, '--json'])
  assert.equal(JSON.parse(stats.stdout).checksum, JSON.parse(original.stdout).checksum)
  assertCorrupt(await runCli(['index', 'stats', '--store', dir, '--verify']), /different postings/)
})

test('block impacts changed under unchanged postings: --verify re-derives them and names the segment', () => {
  // Impacts lower than the postings' would make block-max evaluation drop passages silently.
  const dir = damaged((file) => withDb(file,
    'UPDATE postings SET maxima = zeroblob(length(maxima)) WHERE (term, field, seg) = (SELECT term, field, seg FROM postings WHERE maxima IS NOT NULL LIMIT 1)'))
  const store = PassageStore.openReadOnly(dir)
  const changed = store.db.prepare('SELECT count(*) AS n FROM postings WHERE maxima IS NOT NULL AND maxima = zeroblob(length(maxima))').get() as { n: number }
  const full = checkStore(store, 'full')
  store.close()
  assert.equal(changed.n, 1, 'one list of more than a skip block had its impacts zeroed')
  assert.equal(full.ok, false)
  assert.match(full.problems.join('\n'), /segment \d+ \(passages \d+-\d+\): .* \(same counts, different postings\)/)
})

test('32 KB of random bytes in the middle of the file: --verify names it, and no command shows an internal error', async () => {
  const dir = damaged((file) => {
    const middle = Math.floor(statSync(file).size / 2 / 4096) * 4096
    const fd = openSync(file, 'r+')
    writeSync(fd, randomBytes(32 * 1024), 0, 32 * 1024, middle)
    closeSync(fd)
  })
  assertCorrupt(await runCli(['index', 'stats', '--store', dir, '--verify']), /malformed|quick_check|corrupt/i)
  for (const args of [['search', 'harry potter', '--store', dir, '-k', '1000'], ['index', 'stats', '--store', dir]]) {
    const result = await runCli(args)
    assert.doesNotMatch(result.stderr, /AMBIGQA_ERR_INTERNAL|\n\s+at /, args.join(' '))
    if (result.code !== 0) assertCorrupt(result, /./)
  }
})

test('an empty passages.sqlite is a corrupt store for index stats and search, not an internal error', async () => {
  const dir = damaged((file) => writeFileSync(file, ''))
  assertCorrupt(await runCli(['index', 'stats', '--store', dir]), /no such table: meta/)
  assertCorrupt(await runCli(['search', 'harry potter', '--store', dir]), /no such table: meta/)
})
