import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, test } from 'node:test'
import type { Passage } from '../core/passage.js'
import type { ReadItem } from '../index/sources/passage.js'
import { splitIntoPassages } from '../index/sources/split-passages.js'
import { createWikitextDirReader } from '../index/sources/wikitext-dir-reader.js'
import { wikitextToText } from '../index/sources/wikitext-to-text.js'
import { prerequisite } from './helpers/prerequisite.js'

const CORPUS = resolve(process.cwd(), '../shared/data/corpus/wikitext')
const NO_CORPUS = prerequisite(existsSync(CORPUS) ? false : `the real articles are absent (${CORPUS}); put the shared data folder beside the project`)
const FORBIDDEN = ['{{', '}}', '[[', ']]', '<ref', '{|', '[[Category:', '[[Kategorie:', '[[File:', '[[Datei:', '<!--']

describe('splitIntoPassages', () => {
  test('cuts the word stream into consecutive 100-word passages that keep the title', () => {
    const words = Array.from({ length: 250 }, (_, i) => `w${i}`)
    const text = `${words.slice(0, 120).join(' ')}\n\n  ${words.slice(120).join('\t')}\n`
    const passages = splitIntoPassages('Title', text, '42')
    assert.deepEqual(
      passages.map((p) => [p.id, p.title, p.text.split(' ').length]),
      [['42-0', 'Title', 100], ['42-1', 'Title', 100], ['42-2', 'Title', 50]],
    )
    assert.equal(passages.map((p) => p.text).join(' '), words.join(' '))
  })

  test('empty or blank text gives no passages; other sizes are honoured', () => {
    assert.deepEqual(splitIntoPassages('T', '', 'x'), [])
    assert.deepEqual(splitIntoPassages('T', ' \n\t ', 'x'), [])
    assert.deepEqual(splitIntoPassages('T', 'a b c d e', 'p', 2), [
      { id: 'p-0', title: 'T', text: 'a b' },
      { id: 'p-1', title: 'T', text: 'c d' },
      { id: 'p-2', title: 'T', text: 'e' },
    ])
    assert.throws(() => splitIntoPassages('T', 'a', 'p', 0), RangeError)
  })
})

describe('wikitextToText', () => {
  test('keeps link text and prose; drops markup, templates, refs, tables, files, categories', () => {
    const wikitext = [
      '{{Infobox person|name=Ada|birth_date={{birth date|1815|12|10}}}}',
      "'''Ada Lovelace''' was an ''English'' [[mathematician]] who worked on [[Charles Babbage|Babbage]]'s",
      '[[Analytical Engine]].<ref name="a">{{cite book|title=Ada}}</ref> She wrote notes.<ref name="b" />',
      '<!-- a hidden comment -->',
      '[[File:Ada.jpg|thumb|A [[portrait]] of Ada]]',
      '== Life ==',
      'She was <small>born</small> in London &amp; died&nbsp;young &ndash; aged 36.',
      '{| class="wikitable"',
      '|-',
      '! Year !! Event',
      '|-',
      '| 1843 || Notes',
      '|}',
      '* A listed item',
      '[[Category:Mathematicians]]',
      '[[de:Ada Lovelace]]',
    ].join('\n')
    const text = wikitextToText(wikitext)
    for (const token of FORBIDDEN) assert.ok(!text.includes(token), `contains ${token}: ${text}`)
    assert.match(text, /^Ada Lovelace was an English mathematician who worked on Babbage's Analytical Engine\. She wrote notes\./)
    assert.match(text, /She was born in London & died young – aged 36\./)
    assert.match(text, /A listed item/)
    for (const gone of ['Infobox', 'cite book', 'hidden comment', 'portrait', 'Mathematicians', 'wikitable', '1843', "''", 'Life']) {
      assert.ok(!text.includes(gone), `still has "${gone}": ${text}`)
    }
  })

  test('redirects become empty text', () => {
    assert.equal(wikitextToText('#REDIRECT [[Toronto]]'), '')
  })

  test('repairs the residue of broken markup', () => {
    const text = wikitextToText('Before {{unclosed template and text.\n\nA stray }} brace, a [[broken link and &lt;ref&gt;escaped ref&lt;/ref&gt; end.')
    for (const token of FORBIDDEN) assert.ok(!text.includes(token), `contains ${token}: ${text}`)
    assert.match(text, /end\.$/)
  })
})

describe('the real articles', { skip: NO_CORPUS }, () => {
  const read = (name: string): string => readFileSync(join(CORPUS, name), 'utf8')

  test('no markup is left in any of them, and most have text', () => {
    const files = readdirSync(CORPUS).filter((f) => f.endsWith('.txt'))
    assert.equal(files.length, 71)
    let withText = 0
    for (const file of files) {
      const text = wikitextToText(read(file))
      for (const token of FORBIDDEN) assert.ok(!text.includes(token), `${file} contains ${token}`)
      if (text.length > 0) withText++
    }
    assert.ok(withText >= 65, `${withText} articles with text`)
  })

  test('link text survives, files and categories go (English)', () => {
    const toronto = wikitextToText(read('toronto.txt'))
    // [[Southern Ontario]], [[Lake Ontario]], [[history of Toronto]] in the lead.
    assert.match(toronto, /It is located in Southern Ontario on the northwestern shore of Lake Ontario\. The history of Toronto began/)
    const bodmin = wikitextToText(read('Bodmin.txt'))
    assert.ok(!bodmin.includes('Civil parishes in Cornwall'), 'Bodmin keeps no [[Category:]] text')
    const statoil = wikitextToText(read('statoil.txt'))
    assert.ok(!statoil.includes('Statoil (koncern)'), 'the [[sv:...]] interlanguage link is dropped')
  })

  test('link text survives, files go (German)', () => {
    const keilwelle = wikitextToText(read('Keilwelle.txt'))
    // [[Welle (Mechanik)|Wellen]], [[Formschluss]], [[Nabe]], [[Mitnehmer]]n
    assert.match(keilwelle, /^Als Keilwellen werden Wellen bezeichnet, bei denen ein Formschluss zur Nabe \(Welle-Nabe-Verbindung\) durch eine Vielzahl von Mitnehmern hergestellt wird/)
    // The [[Datei:...|thumb|caption]] images at the top are gone, captions and all.
    assert.ok(!keilwelle.includes('Antriebswelle mit zwei Keilprofilen'))
    assert.ok(!keilwelle.includes('Keilprofil-6K.JPG'))
  })
})

describe('wikitext folder reader', () => {
  async function collect(dir: string, workers: number, records = 0): Promise<ReadItem[]> {
    const items: ReadItem[] = []
    for await (const item of createWikitextDirReader(dir, { workers }).read({ records })) items.push(item)
    return items
  }
  const passagesOf = (items: ReadItem[]): Passage[] => items.flatMap((i) => (i.kind === 'passage' ? [i.passage] : []))

  test('reads the real articles in sorted file order with titles and ids from file names', { skip: NO_CORPUS }, async () => {
    const items = await collect(CORPUS, 2)
    const passages = passagesOf(items)
    assert.equal(items.length, passages.length)
    items.forEach((item, i) => assert.deepEqual(item.next, { records: i + 1 }))
    const stems = [...new Set(passages.map((p) => p.id.replace(/^wikitext:(.*)-\d+$/, '$1')))]
    assert.deepEqual(stems, [...stems].sort())
    const firefox = passages.find((p) => p.id === 'wikitext:Mozilla-Firefox-0')
    assert.equal(firefox?.title, 'Mozilla-Firefox')
    const senate = passages.find((p) => p.id === 'wikitext:Senate_of_Pakistan-0')
    assert.equal(senate?.title, 'Senate of Pakistan')
    assert.ok(!passages.some((p) => p.id.startsWith('wikitext:redirect-')))
    for (const p of passages) for (const token of FORBIDDEN) assert.ok(!p.text.includes(token), p.id)
    assert.deepEqual(await collect(CORPUS, 1), items, 'workers 1 and 2 agree')
    assert.deepEqual(await collect(CORPUS, 2, 500), items.slice(500), 'resume gives the tail')
  })

  test('takes *.txt and *.wiki only; an empty or missing folder fails clearly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambigqa-wikitext-'))
    try {
      await assert.rejects(collect(dir, 1), { code: 'AMBIGQA_ERR_SOURCE_EMPTY' })
      writeFileSync(join(dir, 'b_article.wiki'), "'''B''' is [[second]].")
      writeFileSync(join(dir, 'A_article.txt'), "'''A''' is [[first|one]].")
      writeFileSync(join(dir, 'notes.md'), 'not an article')
      const passages = passagesOf(await collect(dir, 0))
      assert.deepEqual(passages, [
        { id: 'wikitext:A_article-0', title: 'A article', text: 'A is one.' },
        { id: 'wikitext:b_article-0', title: 'b article', text: 'B is second.' },
      ])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    await assert.rejects(collect(join(dir, 'gone'), 1), { code: 'AMBIGQA_ERR_SOURCE_NOT_FOUND' })
  })
})
