// Passages from a MediaWiki XML dump (.xml, .xml.bz2, multistream .bz2): main-namespace
// articles only, redirects skipped, wikitext to text on worker threads, DPR 100-word passages
// with ids "<page id>-<n>". The file is streamed, never held whole.
import { statSync } from 'node:fs'
import { ERR_SOURCE_MALFORMED } from '../../core/errors.js'
import { openDumpInput, type DumpInput } from './dump-input.js'
import { readMediaWikiPages, type RawPage } from './mediawiki-pages.js'
import { numberRecords, type Outcome } from './page-records.js'
import type { PassageReader } from './passage.js'
import { createPageConverter, inFlight, orderedMap } from './wikitext-pool.js'

export interface WikitextReaderOptions {
  /** Worker threads converting wikitext; 0 converts on the calling thread. Default 2. */
  workers?: number
}

export function createMediaWikiXmlReader(path: string, options: WikitextReaderOptions = {}): PassageReader {
  const workers = options.workers ?? 2
  let input: DumpInput | undefined
  return {
    totalBytes: fileSize(path),
    bytesRead: () => input?.bytesRead() ?? 0,
    read: (from) =>
      numberRecords(from, () => {
        input = openDumpInput(path)
        return outcomes(path, input, workers)
      }),
  }
}

async function* outcomes(path: string, input: DumpInput, workers: number): AsyncGenerator<Outcome> {
  const converter = createPageConverter(workers)
  try {
    yield* orderedMap(readMediaWikiPages(path, input), (page) => startPage(page), inFlight(workers))
  } finally {
    await converter.close()
  }

  function startPage(page: RawPage): Promise<Outcome> {
    if (page.ns !== 0 || page.redirect) return Promise.resolve({ ok: true, passages: [] })
    if (!/^\d+$/.test(page.id)) {
      const problem = `page "${page.title}" has ${page.id === '' ? 'no <id>' : `a bad <id> '${page.id}'`}`
      return Promise.resolve({ ok: false, error: ERR_SOURCE_MALFORMED(path, `line ${page.line}`, problem) })
    }
    return converter.convert({ title: page.title, wikitext: page.text, idPrefix: page.id }).then((result) =>
      result.ok
        ? result
        : {
            ok: false,
            error: ERR_SOURCE_MALFORMED(path, `line ${page.line}`, `page ${page.id} "${page.title}": cannot parse its wikitext (${result.message})`),
          },
    )
  }
}

function fileSize(path: string): number | undefined {
  try {
    return statSync(path).size
  } catch {
    return undefined // read() reports the missing file
  }
}
