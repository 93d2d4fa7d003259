// Throughput of Wikipedia dump ingestion on a SYNTHETIC dump: the 71 real articles of
// ../shared/data/corpus/wikitext repeated (fresh page ids each round) until the dump is big
// enough to take ~10 s per run. Prints passages/s and MB/s for .xml and .xml.bz2 with 1 and 2
// workers, plus bzip2 decompression and XML parsing alone.
//
//   npx tsc -p . && node dist/bench/dump-ingest.js [repeats=30]
//
// Runs one thing at a time: the machine has 2 cores, and the 2-worker runs need both.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { buildIndex } from '../index/build-index.js'
import { openDumpInput } from '../index/sources/dump-input.js'
import { silentLogger } from '../core/log.js'
import { readMediaWikiPages } from '../index/sources/mediawiki-pages.js'
import { createMediaWikiXmlReader } from '../index/sources/mediawiki-xml-reader.js'
import { realArticles, writeMediaWikiDump, writeMediaWikiDumpMultistream, type DumpArticle } from './make-dump.js'

const corpus = resolve(process.cwd(), '../shared/data/corpus/wikitext')
if (!existsSync(corpus)) {
  console.error(`the real articles are absent (${corpus}); run from the project root with ../shared beside it`)
  process.exit(1)
}
const repeats = Number(process.argv[2] ?? 30)

const base = realArticles(corpus)
const articles: DumpArticle[] = []
for (let r = 0; r < repeats; r++) {
  for (const a of base) articles.push({ ...a, id: r * 1000 + a.id, title: r === 0 ? a.title : `${a.title} (${r})` })
}
const dir = mkdtempSync(join(tmpdir(), 'ambigqa-dump-bench-'))
const xml = join(dir, 'synthetic.xml')
const bz2 = join(dir, 'synthetic-multistream.xml.bz2')
writeMediaWikiDump(articles, xml)
writeMediaWikiDumpMultistream(articles, bz2, 100)
const xmlMB = statSync(xml).size / 1e6
const bz2MB = statSync(bz2).size / 1e6
console.log(`synthetic dump: ${repeats} × ${base.length} real articles = ${articles.length} pages, ` +
  `${xmlMB.toFixed(1)} MB XML, ${bz2MB.toFixed(1)} MB multistream bz2 (${dir})`)
console.log(`node ${process.version}, ${(await import('node:os')).cpus().length} cores`)

const seconds = (start: number): number => (performance.now() - start) / 1000
const row = (label: string, s: number, extra: string): void =>
  console.log(`${label.padEnd(34)} ${s.toFixed(2).padStart(7)} s  ${extra}`)

try {
  // bzip2 decompression alone: unbzip2-stream (what the reader uses) and the system binary.
  {
    const start = performance.now()
    let chars = 0
    for await (const text of openDumpInput(bz2).text()) chars += text.length
    const s = seconds(start)
    row('bunzip2, unbzip2-stream (pure JS)', s, `${(xmlMB / s).toFixed(1)} MB/s out, ${(bz2MB / s).toFixed(1)} MB/s in`)
    const t = performance.now()
    execFileSync('sh', ['-c', `bzip2 -dc '${bz2}' > /dev/null`])
    const sys = seconds(t)
    row('bunzip2, system bzip2 -dc', sys, `${(xmlMB / sys).toFixed(1)} MB/s out (for comparison only)`)
  }
  // XML parsing alone (saxes), no wikitext conversion.
  {
    const start = performance.now()
    let pages = 0
    for await (const _page of readMediaWikiPages(xml, openDumpInput(xml))) pages++
    const s = seconds(start)
    row('XML pages only (saxes)', s, `${(pages / s).toFixed(0)} pages/s, ${(xmlMB / s).toFixed(1)} MB/s`)
  }
  for (const [label, path, mb] of [['.xml', xml, xmlMB], ['.xml.bz2 (multistream)', bz2, bz2MB]] as const) {
    for (const workers of [1, 2]) {
      const start = performance.now()
      let passages = 0
      for await (const item of createMediaWikiXmlReader(path, { workers }).read({ records: 0 })) {
        if (item.kind === 'passage') passages++
      }
      const s = seconds(start)
      const compressed = path === bz2 ? `, ${(mb / s).toFixed(2)} MB/s compressed` : ''
      row(`reader ${label}, workers ${workers}`, s,
        `${passages} passages, ${(passages / s).toFixed(0)} passages/s, ${(xmlMB / s).toFixed(2)} MB/s XML${compressed}`)
    }
  }
  // The whole `ambigqa index build` (read, convert, store, index) from the multistream dump.
  {
    const start = performance.now()
    const report = await buildIndex({ store: join(dir, 'store'), sources: [{ path: bz2 }], onError: 'fail', batchSize: 2000, segmentSize: 200_000, workers: 2, log: silentLogger })
    const s = seconds(start)
    row('index build .xml.bz2, workers 2', s, `${report.passages} passages, ${(report.passages / s).toFixed(0)} passages/s end to end`)
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
