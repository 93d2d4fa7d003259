import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'node:test'
import { gzipSync } from 'node:zlib'
import { splitTsvRow } from '../index/sources/dpr-tsv-reader.js'
import { createReader, detectFormat } from '../index/sources/formats.js'
import { readAll } from './helpers/read-all.js'
import { sharedFile } from './helpers/shared-data.js'

const tmp = () => mkdtempSync(join(tmpdir(), 'sources-'))

test('TSV rows undo CSV quoting with doubled quotes', () => {
  assert.deepEqual(splitTsvRow('1\tplain text\tTitle'), ['1', 'plain text', 'Title'])
  assert.deepEqual(splitTsvRow('2\t"He said ""hi"", then left"\t"A ""B"""'), ['2', 'He said "hi", then left', 'A "B"'])
  assert.deepEqual(splitTsvRow('3\t""\tempty'), ['3', '', 'empty'])
  assert.throws(() => splitTsvRow('4\t"never closed\tTitle'), /unterminated quoted field/)
})

const dprTsv = sharedFile('corpus/dpr-asqa300.tsv')
test('DPR TSV: every real passage, ids as DPR wrote them, quotes undone', { skip: dprTsv.skip }, async () => {
  const { passages, bad } = await readAll(await createReader(dprTsv.path, detectFormat(dprTsv.path)))
  assert.equal(bad.length, 0)
  assert.equal(passages.length, 5531)
  assert.deepEqual(passages[0]!.id, '4283')
  // A passage whose text was CSV-quoted in the file has plain quotes, and none doubled.
  const quoted = readFileSync(dprTsv.path, 'utf8').split('\n').find((line) => line.includes('""'))!
  const id = quoted.split('\t')[0]!
  const passage = passages.find((p) => p.id === id)!
  assert.ok(passage.text.includes('"'))
  assert.ok(!passage.text.includes('""') || quoted.includes('""""'))
})

test('DPR TSV: resume from a byte offset gives exactly the rest', { skip: dprTsv.skip }, async () => {
  const reader = await createReader(dprTsv.path, 'dpr-tsv')
  const all: { id: string; next: unknown }[] = []
  for await (const item of reader.read({ records: 0 })) if (item.kind === 'passage') all.push({ id: item.passage.id, next: item.next })
  const cut = all[1000]!.next as { records: number; byteOffset: number; line: number }
  const rest = await readAll(await createReader(dprTsv.path, 'dpr-tsv'), cut)
  assert.deepEqual(rest.passages.map((p) => p.id), all.slice(1001).map((p) => p.id))
})

test('DPR TSV errors name the file and line; --on-error skip yields bad records instead', async () => {
  const dir = tmp()
  const path = join(dir, 'bad.tsv')
  writeFileSync(path, 'id\ttext\ttitle\n1\tfine\tA\n2\tonly two fields\n3\t"open quote\tC\n4\talso fine\tD\n')
  const { passages, bad } = await readAll(await createReader(path, 'dpr-tsv'))
  assert.deepEqual(passages.map((p) => p.id), ['1', '4'])
  assert.equal(bad.length, 2)
  assert.match(bad[0]!.message, /bad\.tsv, line 3: expected 3 tab-separated fields/)
  assert.match(bad[1]!.message, /bad\.tsv, line 4: unterminated quoted field/)
  const noHeader = join(dir, 'noheader.tsv')
  writeFileSync(noHeader, '1\ttext\ttitle\n')
  await assert.rejects(readAll(await createReader(noHeader, 'dpr-tsv')), /noheader\.tsv, line 1: expected the DPR header/)
})

const flashrag = sharedFile('corpus/flashrag-1000.jsonl')
test('JSON Lines, Pyserini style {id, contents: "\\"Title\\"\\ntext"}', { skip: flashrag.skip }, async () => {
  const { passages } = await readAll(await createReader(flashrag.path, detectFormat(flashrag.path)))
  assert.equal(passages.length, 1000)
  assert.deepEqual({ id: passages[0]!.id, title: passages[0]!.title }, { id: '0', title: 'Evan Morris' })
  assert.ok(passages[0]!.text.startsWith('Evan Morris Evan L. Morris'))
  assert.ok(passages.every((p) => p.title !== '' && !p.title.startsWith('"')))
})

test('JSON Lines, {id, title, text} style, and bad lines', async () => {
  const path = join(tmp(), 'p.jsonl')
  writeFileSync(path, '{"id": 7, "title": "T", "text": "x y"}\n{"id": "8", "title": "U"}\nnot json\n{"title": "no id", "text": "z"}\n')
  const { passages, bad } = await readAll(await createReader(path, 'jsonl'))
  assert.deepEqual(passages, [{ id: '7', title: 'T', text: 'x y' }])
  assert.deepEqual(bad.map((e) => /line (\d)/.exec(e.message)?.[1]), ['2', '3', '4'])
  assert.match(bad[0]!.message, /'text' must be a string/)
  assert.match(bad[1]!.message, /invalid JSON/)
  assert.match(bad[2]!.message, /missing 'id'/)
})

const nqGold = sharedFile('corpus/nq-open-test-gold.jsonl.gz')
test('JSON Lines with ctxs (NQ gold paragraphs), gzipped', { skip: nqGold.skip }, async () => {
  const { passages } = await readAll(await createReader(nqGold.path, detectFormat(nqGold.path)))
  assert.ok(passages.length >= 2655)
  assert.equal(passages[0]!.id, 'nq-open-test-gold:1:0')
  assert.equal(passages[0]!.title, 'List of Nobel laureates in Physics')
})

const squadDev = sharedFile('squad/dev-v1.1.json')
test('SQuAD JSON: each paragraph a passage titled by its article', { skip: squadDev.skip }, async () => {
  const doc = JSON.parse(readFileSync(squadDev.path, 'utf8')) as { data: { title: string; paragraphs: unknown[] }[] }
  const expected = doc.data.reduce((n, a) => n + a.paragraphs.length, 0)
  const { passages } = await readAll(await createReader(squadDev.path, detectFormat(squadDev.path)))
  assert.equal(passages.length, expected)
  assert.equal(passages[0]!.title, doc.data[0]!.title.replace(/_/g, ' '))
  assert.equal(new Set(passages.map((p) => p.id)).size, passages.length)
  const resumed = await readAll(await createReader(squadDev.path, 'squad'), { records: 100 })
  assert.deepEqual(resumed.passages, passages.slice(100))
})

const qaFeedback = sharedFile('corpus/qa-feedback-ambignq-train500.json')
test('qa-feedback grounding passages', { skip: qaFeedback.skip }, async () => {
  const { passages } = await readAll(await createReader(qaFeedback.path, detectFormat(qaFeedback.path)))
  assert.equal(passages.length, 1149)
  assert.equal(passages[0]!.title, "Why Don't We")
  assert.ok(passages[0]!.text.startsWith("Why Don't We (commonly abbreviated as WDW)"))
})

test('format detection and its errors', async () => {
  const dir = tmp()
  const write = (name: string, content: string | Buffer) => {
    writeFileSync(join(dir, name), content)
    return join(dir, name)
  }
  assert.equal(detectFormat(write('a.tsv', 'id\ttext\ttitle\n')), 'dpr-tsv')
  assert.equal(detectFormat(write('a.jsonl.gz', gzipSync('{}'))), 'jsonl')
  assert.equal(detectFormat(write('dump.xml.bz2', 'BZh9')), 'mediawiki-xml')
  assert.equal(detectFormat(write('noext', 'id\ttext\ttitle\n')), 'dpr-tsv')
  assert.equal(detectFormat(write('doc.json', '{"data": []}')), 'squad')
  assert.equal(detectFormat(dir), 'wikitext-dir')
  assert.throws(() => detectFormat(write('empty.tsv', '')), { code: 'AMBIGQA_ERR_SOURCE_EMPTY' })
  assert.throws(() => detectFormat(join(dir, 'missing.tsv')), { code: 'AMBIGQA_ERR_SOURCE_NOT_FOUND' })
  assert.throws(() => detectFormat(write('junk.bin', Buffer.from([0, 1, 2, 255, 0, 7]))), (err: Error & { code?: string }) =>
    err.code === 'AMBIGQA_ERR_SOURCE_FORMAT_UNKNOWN' && /junk\.bin/.test(err.message) && /binary data/.test(err.message) && /--format/.test(err.message))
})

test('binary junk inside a text source stops the read at its line and byte', async () => {
  const path = join(tmp(), 'junk.tsv')
  writeFileSync(path, Buffer.concat([Buffer.from('id\ttext\ttitle\n1\tok\tA\n'), Buffer.from([0x00, 0xff, 0xfe, 0x09, 0x0a])]))
  await assert.rejects(readAll(await createReader(path, 'dpr-tsv')), (err: Error & { code?: string }) =>
    err.code === 'AMBIGQA_ERR_SOURCE_MALFORMED' && /junk\.tsv, line 3 \(byte 21\): bytes that are not valid UTF-8/.test(err.message))
  const nul = join(tmp(), 'nul.tsv')
  writeFileSync(nul, 'id\ttext\ttitle\n1\tok\tA\n2\tzero \u0000 byte\tB\n')
  await assert.rejects(readAll(await createReader(nul, 'dpr-tsv')), /nul\.tsv, line 3 \(byte 21\): binary data \(NUL byte\)/)
  // A real U+FFFD, validly encoded, is text.
  const replacement = join(tmp(), 'fffd.tsv')
  writeFileSync(replacement, 'id\ttext\ttitle\n1\tan \uFFFD in Wikipedia\tA\n')
  assert.equal((await readAll(await createReader(replacement, 'dpr-tsv'))).passages.length, 1)
})

test('a truncated gzip source is named with its offset', async () => {
  const path = join(tmp(), 'cut.jsonl.gz')
  const whole = gzipSync(Buffer.from('{"id":"1","title":"a","text":"b"}\n'.repeat(2000)))
  writeFileSync(path, whole.subarray(0, whole.length - 40))
  await assert.rejects(readAll(await createReader(path, 'jsonl')), (err: Error & { code?: string }) =>
    err.code === 'AMBIGQA_ERR_SOURCE_TRUNCATED' && /cut\.jsonl\.gz is truncated or corrupt at decompressed byte \d+/.test(err.message))
})
