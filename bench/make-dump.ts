// Builds MediaWiki XML export dumps for tests and benchmarks, in the shape dumps.wikimedia.org
// serves (export-0.10), plain or bzip2-compressed with the system `bzip2` binary; multistream
// dumps compress groups of pages separately and concatenate the streams, as Wikimedia does.
// It lives in bench/, as the Lucene peer does, because tests may import a benchmark's tools but a
// benchmark never reaches into test/.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export interface DumpArticle {
  title: string
  id: number
  text: string
  /** Namespace; 0 (articles) unless given. */
  ns?: number
  /** Target title: makes the page a redirect. */
  redirect?: string
}

export function xmlEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

const HEADER =
  '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" ' +
  'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="0.10" xml:lang="en">\n' +
  '  <siteinfo>\n    <sitename>Wikipedia</sitename>\n    <dbname>enwiki</dbname>\n' +
  '    <base>https://en.wikipedia.org/wiki/Main_Page</base>\n    <generator>MediaWiki 1.41</generator>\n' +
  '    <case>first-letter</case>\n    <namespaces>\n      <namespace key="0" case="first-letter" />\n' +
  '      <namespace key="10" case="first-letter">Template</namespace>\n    </namespaces>\n  </siteinfo>\n'
const FOOTER = '</mediawiki>\n'

export function pageXml(article: DumpArticle): string {
  const redirect = article.redirect === undefined ? '' : `    <redirect title="${xmlEscape(article.redirect)}" />\n`
  return (
    '  <page>\n' +
    `    <title>${xmlEscape(article.title)}</title>\n` +
    `    <ns>${article.ns ?? 0}</ns>\n` +
    `    <id>${article.id}</id>\n` +
    redirect +
    '    <revision>\n' +
    `      <id>${article.id * 10 + 7}</id>\n` +
    '      <timestamp>2018-01-01T00:00:00Z</timestamp>\n' +
    '      <model>wikitext</model>\n      <format>text/x-wiki</format>\n' +
    `      <text bytes="${Buffer.byteLength(article.text)}" xml:space="preserve">${xmlEscape(article.text)}</text>\n` +
    '    </revision>\n' +
    '  </page>\n'
  )
}

export function dumpXml(articles: DumpArticle[]): string {
  return HEADER + articles.map(pageXml).join('') + FOOTER
}

export function writeMediaWikiDump(articles: DumpArticle[], path: string): void {
  writeFileSync(path, dumpXml(articles))
}

export function bzip2(data: string | Buffer): Buffer {
  return execFileSync('bzip2', ['-c', '-9'], { input: data, maxBuffer: 1 << 30 })
}

/** One bzip2 stream for the whole dump. */
export function writeMediaWikiDumpBz2(articles: DumpArticle[], path: string): void {
  writeFileSync(path, bzip2(dumpXml(articles)))
}

/** Wikimedia's multistream layout: the header, every `pagesPerStream` pages, and the footer
 * each compressed as a separate bzip2 stream, the streams concatenated. */
export function writeMediaWikiDumpMultistream(articles: DumpArticle[], path: string, pagesPerStream = 100): void {
  const parts: Buffer[] = [bzip2(HEADER)]
  for (let i = 0; i < articles.length; i += pagesPerStream) {
    parts.push(bzip2(articles.slice(i, i + pagesPerStream).map(pageXml).join('')))
  }
  parts.push(bzip2(FOOTER))
  writeFileSync(path, Buffer.concat(parts))
}

/** The shared real articles (../shared/data/corpus/wikitext), as dump pages with ids 1..n in
 * file-name order; titles from file names as the wikitext folder reader makes them. */
export function realArticles(dir: string): DumpArticle[] {
  return readdirSync(dir)
    .filter((name) => /\.(txt|wiki)$/i.test(name))
    .sort()
    .map((name, i) => ({
      title: name.replace(/\.(txt|wiki)$/i, '').replace(/_/g, ' '),
      id: i + 1,
      text: readFileSync(join(dir, name), 'utf8'),
    }))
}
