import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createMediaWikiXmlReader } from '../index/sources/mediawiki-xml-reader.js'
import type { Passage } from '../core/passage.js'
import type { PassageReader, ReadItem, ResumePoint } from '../index/sources/passage.js'
import { convertPage } from '../index/sources/wikitext-page.js'
import {
  bzip2,
  dumpXml,
  realArticles,
  writeMediaWikiDump,
  writeMediaWikiDumpBz2,
  writeMediaWikiDumpMultistream,
  type DumpArticle,
} from '../bench/make-dump.js'
import { prerequisite } from './helpers/prerequisite.js'

const CORPUS = resolve(process.cwd(), '../shared/data/corpus/wikitext')
const NO_CORPUS = prerequisite(existsSync(CORPUS) ? false : `the real articles are absent (${CORPUS}); put the shared data folder beside the project`)
const FORBIDDEN = ['{{', '}}', '[[', ']]', '<ref', '{|', '[[Category:', '[[Kategorie:', '[[File:', '[[Datei:']

async function collect(reader: PassageReader, from: ResumePoint = { records: 0 }): Promise<ReadItem[]> {
  const items: ReadItem[] = []
  for await (const item of reader.read(from)) items.push(item)
  return items
}

function passagesOf(items: ReadItem[]): Passage[] {
  return items.flatMap((item) => (item.kind === 'passage' ? [item.passage] : []))
}

/** Rejects with an AmbigqaError of `code` whose message names `path` and matches `where`. */
async function assertReadFails(path: string, code: string, where: RegExp): Promise<void> {
  await assert.rejects(collect(createMediaWikiXmlReader(path, { workers: 1 })), (err: Error & { code?: string }) => {
    assert.equal(err.code, code, err.message)
    assert.ok(err.message.includes(path), `message names the file: ${err.message}`)
    assert.match(err.message, where)
    return true
  })
}

let dir: string
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ambigqa-dump-'))
})
after(() => {
  rmSync(dir, { recursive: true, force: true })
})

describe('MediaWiki dump built from the real articles', { skip: NO_CORPUS }, () => {
  let articles: DumpArticle[]
  let expected: Passage[]
  let xmlPath: string

  before(() => {
    articles = realArticles(CORPUS)
    const extra: DumpArticle[] = [
      { title: 'Template:Infobox', id: 900001, ns: 10, text: 'Templatewords should never become passages.' },
      { title: 'Talk:Toronto', id: 900002, ns: 1, text: 'Talkwords should never become passages.' },
      // Redirect by its <redirect> element, whatever its text says.
      { title: 'Toronto, Ontario', id: 900003, redirect: 'Toronto', text: 'Redirectwords should never become passages.' },
    ]
    // The extra pages sit among the real ones, so filtering is tested mid-stream.
    articles = [...articles.slice(0, 10), ...extra, ...articles.slice(10)]
    expected = articles
      .filter((a) => (a.ns ?? 0) === 0 && a.redirect === undefined)
      .flatMap((a) => {
        const result = convertPage({ title: a.title, wikitext: a.text, idPrefix: String(a.id) })
        assert.ok(result.ok)
        return result.passages
      })
    xmlPath = join(dir, 'real.xml')
    writeMediaWikiDump(articles, xmlPath)
  })

  test('yields the articles of namespace 0 as DPR passages, in dump order', async () => {
    const reader = createMediaWikiXmlReader(xmlPath, { workers: 2 })
    const items = await collect(reader)
    assert.ok(items.every((item) => item.kind === 'passage'))
    const passages = passagesOf(items)
    assert.deepEqual(passages, expected)
    assert.ok(passages.length > 900, `${passages.length} passages`)
    items.forEach((item, i) => assert.deepEqual(item.next, { records: i + 1 }))
    assert.equal(reader.totalBytes, statSync(xmlPath).size)
    assert.equal(reader.bytesRead(), reader.totalBytes)
  })

  test('pages: namespaces other than 0 and redirects are skipped, real articles kept', async () => {
    const passages = passagesOf(await collect(createMediaWikiXmlReader(xmlPath, { workers: 2 })))
    const pageIds = new Set(passages.map((p) => p.id.replace(/-\d+$/, '')))
    for (const id of ['900001', '900002', '900003']) assert.ok(!pageIds.has(id), `page ${id} skipped`)
    const text = passages.map((p) => p.text).join(' ')
    assert.ok(!/Templatewords|Talkwords|Redirectwords/.test(text))
    // 71 files: redirect.txt (#REDIRECT) and the table-only ones give no text.
    const withText = articles.filter((a) => expected.some((p) => p.id.startsWith(`${a.id}-`)))
    assert.equal(pageIds.size, withText.length)
    assert.ok(withText.length >= 65, `${withText.length} articles with text`)
    const redirectPage = articles.find((a) => a.title === 'redirect')
    assert.ok(redirectPage !== undefined && !pageIds.has(String(redirectPage.id)))
  })

  test('passages hold at most 100 words, exactly 100 except an article’s last, and keep the title', () => {
    const byPage = new Map<string, Passage[]>()
    for (const p of expected) {
      const page = p.id.replace(/-\d+$/, '')
      byPage.set(page, [...(byPage.get(page) ?? []), p])
    }
    for (const [page, passages] of byPage) {
      const article = articles.find((a) => String(a.id) === page)
      assert.ok(article !== undefined)
      passages.forEach((p, n) => {
        assert.equal(p.id, `${page}-${n}`)
        assert.equal(p.title, article.title)
        const words = p.text.split(/\s+/).length
        if (n < passages.length - 1) assert.equal(words, 100, p.id)
        else assert.ok(words >= 1 && words <= 100, p.id)
      })
    }
    const uk = expected.filter((p) => p.title === 'United-Kingdom')
    assert.ok(uk.length > 50)
  })

  test('no wiki markup is left in any passage', () => {
    for (const p of expected) {
      for (const token of FORBIDDEN) assert.ok(!p.text.includes(token), `${p.id} (${p.title}) contains ${token}`)
      assert.ok(!/'''|''/.test(p.text), `${p.id} has bold/italic quotes`)
    }
  })

  test('.xml.bz2 and multistream .bz2 give the same passages; progress counts compressed bytes', async () => {
    const bz2Path = join(dir, 'real.xml.bz2')
    const multiPath = join(dir, 'real-multistream.xml.bz2')
    writeMediaWikiDumpBz2(articles, bz2Path)
    writeMediaWikiDumpMultistream(articles, multiPath, 10)
    for (const path of [bz2Path, multiPath]) {
      const reader = createMediaWikiXmlReader(path, { workers: 2 })
      assert.deepEqual(passagesOf(await collect(reader)), expected, path)
      assert.equal(reader.totalBytes, statSync(path).size)
      assert.equal(reader.bytesRead(), reader.totalBytes)
    }
  })

  test('workers 0, 1 and 2 give the same passages in the same order', async () => {
    const one = await collect(createMediaWikiXmlReader(xmlPath, { workers: 1 }))
    const two = await collect(createMediaWikiXmlReader(xmlPath, { workers: 2 }))
    const inline = await collect(createMediaWikiXmlReader(xmlPath, { workers: 0 }))
    assert.deepEqual(two, one)
    assert.deepEqual(inline, one)
  })

  test('resume: reading from {records: k} yields exactly the tail of the full read', async () => {
    const full = await collect(createMediaWikiXmlReader(xmlPath, { workers: 2 }))
    for (const k of [1, 137, full.length - 1, full.length]) {
      const tail = await collect(createMediaWikiXmlReader(xmlPath, { workers: 2 }), { records: k })
      assert.deepEqual(tail, full.slice(k), `from ${k}`)
    }
  })

  test('a truncated .bz2 fails with the file and the compressed byte offset', async () => {
    const whole = readFileSync(join(dir, 'real.xml.bz2'))
    const path = join(dir, 'truncated.xml.bz2')
    writeFileSync(path, whole.subarray(0, Math.floor(whole.length / 2)))
    await assertReadFails(path, 'AMBIGQA_ERR_SOURCE_TRUNCATED', new RegExp(`byte ${Math.floor(whole.length / 2)}\\b`))
  })

  test('a multistream .bz2 cut mid-dump yields the passages before the cut, then fails', async () => {
    const whole = readFileSync(join(dir, 'real-multistream.xml.bz2'))
    const path = join(dir, 'truncated-multistream.xml.bz2')
    writeFileSync(path, whole.subarray(0, Math.floor(whole.length * 0.6)))
    const seen: ReadItem[] = []
    const reader = createMediaWikiXmlReader(path, { workers: 2 })
    await assert.rejects(
      async () => {
        for await (const item of reader.read({ records: 0 })) seen.push(item)
      },
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'AMBIGQA_ERR_SOURCE_TRUNCATED')
        assert.ok(err.message.includes(path))
        assert.match(err.message, /byte \d+/)
        return true
      },
    )
    assert.ok(seen.length > 100, `${seen.length} passages before the cut`)
    assert.deepEqual(passagesOf(seen), expected.slice(0, seen.length))
  })

  test('stopping early ends the workers (the test run would hang otherwise)', async () => {
    let n = 0
    for await (const item of createMediaWikiXmlReader(xmlPath, { workers: 2 }).read({ records: 0 })) {
      assert.equal(item.kind, 'passage')
      if (++n === 3) break
    }
    assert.equal(n, 3)
  })
})

describe('MediaWiki dump errors and edge cases', () => {
  const small: DumpArticle[] = [
    { title: 'Alpha', id: 1, text: "'''Alpha''' is the first [[Greek alphabet|letter]]. " + 'word '.repeat(150) },
    { title: 'Beta', id: 2, text: 'Beta is the second letter.' },
  ]

  test('a small dump: ids are "<page id>-<n>", XML escapes are decoded', async () => {
    const path = join(dir, 'small.xml')
    writeMediaWikiDump([...small, { title: 'Q & A <x>', id: 3, text: 'Fish &amp; chips: a < b & c > d "quoted"' }], path)
    const passages = passagesOf(await collect(createMediaWikiXmlReader(path, { workers: 1 })))
    assert.deepEqual(
      passages.map((p) => p.id),
      ['1-0', '1-1', '2-0', '3-0'],
    )
    assert.ok(passages[0]?.text.startsWith('Alpha is the first letter. word'))
    assert.equal(passages[3]?.title, 'Q & A <x>')
    assert.equal(passages[3]?.text, 'Fish & chips: a < b & c > d "quoted"')
  })

  test('invalid XML (a mismatched tag) fails with its line', async () => {
    const path = join(dir, 'mismatched.xml')
    const xml = dumpXml(small).split('\n')
    const line = xml.findIndex((l) => l.includes('<title>Beta</title>'))
    xml[line] = '    <title>Beta</titel>'
    writeFileSync(path, xml.join('\n'))
    await assertReadFails(path, 'AMBIGQA_ERR_SOURCE_MALFORMED', new RegExp(`line ${line + 1}\\b`))
  })

  test('binary junk fails as malformed with a line or byte', async () => {
    const junk = Buffer.alloc(4096)
    let seed = 12345
    for (let i = 0; i < junk.length; i++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      junk[i] = seed & 0xff
    }
    const path = join(dir, 'junk.xml')
    writeFileSync(path, junk)
    await assertReadFails(path, 'AMBIGQA_ERR_SOURCE_MALFORMED', /(line|byte) \d+/)
    // Junk in the middle of an otherwise good dump.
    const xml = dumpXml(small)
    const mid = join(dir, 'junk-mid.xml')
    writeFileSync(mid, Buffer.concat([Buffer.from(xml.slice(0, 900)), junk, Buffer.from(xml.slice(900))]))
    await assertReadFails(mid, 'AMBIGQA_ERR_SOURCE_MALFORMED', /(line|byte) \d+/)
  })

  test('bzip2 of junk XML fails as malformed, naming the decompressed line', async () => {
    const path = join(dir, 'junk.xml.bz2')
    writeFileSync(path, bzip2('<mediawiki>\n<page>\n</mediawiki>\n'))
    await assertReadFails(path, 'AMBIGQA_ERR_SOURCE_MALFORMED', /line 3 of the decompressed XML/)
  })

  test('a file named .bz2 that is not bzip2 fails as malformed at byte 0', async () => {
    const path = join(dir, 'plain.xml.bz2')
    writeMediaWikiDump(small, path)
    await assertReadFails(path, 'AMBIGQA_ERR_SOURCE_MALFORMED', /byte 0\b/)
  })

  test('corrupt bzip2 data fails as truncated-or-corrupt with a byte offset', async () => {
    const data = bzip2(dumpXml(small))
    data.fill(0x55, 100, 140)
    const path = join(dir, 'corrupt.xml.bz2')
    writeFileSync(path, data)
    await assertReadFails(path, 'AMBIGQA_ERR_SOURCE_TRUNCATED', /byte \d+/)
  })

  test('an XML dump cut short fails as truncated', async () => {
    const path = join(dir, 'cut.xml')
    const xml = dumpXml(small)
    writeFileSync(path, xml.slice(0, xml.indexOf('<title>Beta')))
    await assertReadFails(path, 'AMBIGQA_ERR_SOURCE_TRUNCATED', /byte \d+/)
  })

  test('empty files fail as empty, missing files as not found', async () => {
    const empty = join(dir, 'empty.xml')
    writeFileSync(empty, '')
    await assertReadFails(empty, 'AMBIGQA_ERR_SOURCE_EMPTY', /empty/)
    const emptyBz2 = join(dir, 'empty.xml.bz2')
    writeFileSync(emptyBz2, '')
    await assertReadFails(emptyBz2, 'AMBIGQA_ERR_SOURCE_EMPTY', /empty/)
    const emptyInside = join(dir, 'empty-inside.xml.bz2')
    writeFileSync(emptyInside, bzip2(''))
    await assertReadFails(emptyInside, 'AMBIGQA_ERR_SOURCE_EMPTY', /empty/)
    await assertReadFails(join(dir, 'nope.xml'), 'AMBIGQA_ERR_SOURCE_NOT_FOUND', /does not exist/)
  })

  test('a page the wikitext parser fails on is a bad record; the rest are read', async () => {
    const path = join(dir, 'bad-page.xml')
    // wtf_wikipedia 10.4 throws a TypeError on an argument-less {{gaps}} template.
    const crashing = 'Some words before {{gaps}} and after.'
    writeMediaWikiDump([small[0]!, { title: 'Gaps', id: 7, text: crashing }, { title: 'No id', id: NaN, text: 'x' }, small[1]!], path)
    for (const workers of [0, 2]) {
      const items = await collect(createMediaWikiXmlReader(path, { workers }))
      assert.deepEqual(
        items.map((item) => (item.kind === 'passage' ? item.passage.id : 'bad')),
        ['1-0', '1-1', 'bad', 'bad', '2-0'],
      )
      assert.deepEqual(items.map((item) => item.next.records), [1, 2, 3, 4, 5])
      const [deepError, idError] = items.flatMap((item) => (item.kind === 'bad-record' ? [item.error as Error & { code?: string }] : []))
      assert.equal(deepError?.code, 'AMBIGQA_ERR_SOURCE_MALFORMED')
      assert.match(deepError?.message ?? '', /line \d+: page 7 "Gaps": cannot parse its wikitext/)
      assert.match(idError?.message ?? '', /page "No id" has a bad <id> 'NaN'/)
      const tail = await collect(createMediaWikiXmlReader(path, { workers }), { records: 3 })
      assert.deepEqual(tail, items.slice(3))
    }
  })
})
