// Which reader reads a source: by --format, else by the file name, else by its first bytes.
import { closeSync, openSync, readSync, statSync } from 'node:fs'
import { ERR_SOURCE_EMPTY, ERR_SOURCE_FORMAT_UNKNOWN, ERR_SOURCE_NOT_FOUND } from '../../core/errors.js'
import { createDprTsvReader } from './dpr-tsv-reader.js'
import { createJsonDocumentReader, qaFeedbackPassages, squadPassages } from './json-document-reader.js'
import { createJsonlReader } from './jsonl-reader.js'
import type { PassageReader } from './passage.js'

export const SOURCE_FORMATS = ['dpr-tsv', 'jsonl', 'squad', 'qa-feedback', 'mediawiki-xml', 'wikitext-dir'] as const
export type SourceFormat = (typeof SOURCE_FORMATS)[number]

export interface ReaderOptions {
  workers?: number
}

export function isSourceFormat(value: string): value is SourceFormat {
  return (SOURCE_FORMATS as readonly string[]).includes(value)
}

export function detectFormat(path: string): SourceFormat {
  let stats
  try {
    stats = statSync(path)
  } catch {
    throw ERR_SOURCE_NOT_FOUND(path)
  }
  if (stats.isDirectory()) return 'wikitext-dir'
  if (stats.size === 0) throw ERR_SOURCE_EMPTY(path)
  const name = path.toLowerCase()
  if (/\.tsv(\.gz)?$/.test(name)) return 'dpr-tsv'
  if (/\.jsonl(\.gz)?$/.test(name)) return 'jsonl'
  if (/\.xml(\.bz2)?$/.test(name) || name.endsWith('.bz2')) return 'mediawiki-xml'
  if (name.endsWith('.gz')) throw ERR_SOURCE_FORMAT_UNKNOWN(path, 'a gzip file whose name does not say what it holds', SOURCE_FORMATS)
  const head = firstBytes(path, 64)
  const text = head.toString('utf8').trimStart()
  if (head.subarray(0, 3).toString('latin1') === 'BZh' || text.startsWith('<')) return 'mediawiki-xml'
  if (text.startsWith('id\t')) return 'dpr-tsv'
  if (text.startsWith('[')) return 'qa-feedback'
  if (text.startsWith('{')) return name.endsWith('.json') ? 'squad' : 'jsonl'
  const binary = [...head].some((byte) => byte === 0)
  throw ERR_SOURCE_FORMAT_UNKNOWN(path, binary ? 'it looks like binary data' : `it starts with '${text.slice(0, 20)}'`, SOURCE_FORMATS)
}

export async function createReader(path: string, format: SourceFormat, options: ReaderOptions = {}): Promise<PassageReader> {
  if (format !== 'wikitext-dir' && statSync(path).size === 0) throw ERR_SOURCE_EMPTY(path)
  switch (format) {
    case 'dpr-tsv':
      return createDprTsvReader(path)
    case 'jsonl':
      return createJsonlReader(path)
    case 'squad':
      return createJsonDocumentReader(path, squadPassages(path))
    case 'qa-feedback':
      return createJsonDocumentReader(path, qaFeedbackPassages(path))
    case 'mediawiki-xml': {
      const { createMediaWikiXmlReader } = await import('./mediawiki-xml-reader.js')
      return createMediaWikiXmlReader(path, options)
    }
    case 'wikitext-dir': {
      const { createWikitextDirReader } = await import('./wikitext-dir-reader.js')
      return createWikitextDirReader(path, options)
    }
  }
}

function firstBytes(path: string, n: number): Buffer {
  const fd = openSync(path, 'r')
  try {
    const buffer = Buffer.alloc(n)
    return buffer.subarray(0, readSync(fd, buffer, 0, n, 0))
  } finally {
    closeSync(fd)
  }
}
