// Passages from a folder of raw wikitext articles (*.txt, *.wiki), one article a file: the
// title is the file name with '_' read as a space ('-' is left alone: it is also a real title
// character), ids are "wikitext:<file stem>-<n>", files are read in sorted order.
import { readdirSync, statSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { basename, extname, join } from 'node:path'
import { ERR_SOURCE_EMPTY, ERR_SOURCE_MALFORMED, ERR_SOURCE_NOT_FOUND, ERR_USAGE } from '../../core/errors.js'
import { numberRecords, type Outcome } from './page-records.js'
import type { PassageReader } from './passage.js'
import { createPageConverter, inFlight, orderedMap } from './wikitext-pool.js'

export interface WikitextDirReaderOptions {
  /** Worker threads converting wikitext; 0 converts on the calling thread. Default 2. */
  workers?: number
}

const ARTICLE_FILE = /\.(txt|wiki)$/i

export function createWikitextDirReader(dir: string, options: WikitextDirReaderOptions = {}): PassageReader {
  const workers = options.workers ?? 2
  let bytes = 0
  return {
    totalBytes: totalSize(dir),
    bytesRead: () => bytes,
    read: (from) =>
      numberRecords(from, () => {
        bytes = 0
        return outcomes(listArticleFiles(dir))
      }),
  }

  async function* articles(files: string[]): AsyncGenerator<{ file: string; text: string }> {
    for (const file of files) {
      const content = await readFile(file)
      bytes += content.length
      yield { file, text: content.toString('utf8') }
    }
  }

  async function* outcomes(files: string[]): AsyncGenerator<Outcome> {
    const converter = createPageConverter(workers)
    try {
      yield* orderedMap(articles(files), async ({ file, text }): Promise<Outcome> => {
        const stem = basename(file, extname(file))
        const result = await converter.convert({ title: stem.replace(/_/g, ' '), wikitext: text, idPrefix: `wikitext:${stem}` })
        if (result.ok) return result
        return { ok: false, error: ERR_SOURCE_MALFORMED(file, 'line 1', `cannot parse its wikitext (${result.message})`) }
      }, inFlight(workers))
    } finally {
      await converter.close()
    }
  }
}

/** The article files in `dir`, sorted by name (code-unit order, the same on every machine). */
export function listArticleFiles(dir: string): string[] {
  let names: string[]
  try {
    names = readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isFile() && ARTICLE_FILE.test(entry.name))
      .map((entry) => entry.name)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw ERR_SOURCE_NOT_FOUND(dir)
    if (code === 'ENOTDIR') throw ERR_USAGE(`${dir} is not a folder`, 'Pass a folder of *.txt or *.wiki wikitext files')
    throw err
  }
  if (names.length === 0) throw ERR_SOURCE_EMPTY(dir)
  return names.sort().map((name) => join(dir, name))
}

function totalSize(dir: string): number | undefined {
  try {
    return listArticleFiles(dir).reduce((sum, file) => sum + statSync(file).size, 0)
  } catch {
    return undefined // read() reports the problem
  }
}
