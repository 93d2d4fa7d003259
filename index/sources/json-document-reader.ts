// Sources that are one JSON document (SQuAD, qa-feedback): bounded in size, so they are parsed
// whole, and a resume skips the records already consumed.
import { readFileSync, statSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { ERR_SOURCE_MALFORMED, ERR_SOURCE_TRUNCATED } from '../../core/errors.js'
import type { Passage } from '../../core/passage.js'
import type { PassageReader, ReadItem, ResumePoint } from './passage.js'

export function createJsonDocumentReader(path: string, toPassages: (doc: unknown) => Passage[]): PassageReader {
  const totalBytes = statSync(path).size
  let consumed = 0
  return {
    totalBytes,
    bytesRead: () => consumed,
    async *read(from: ResumePoint): AsyncGenerator<ReadItem> {
      const passages = toPassages(parseJsonFile(path))
      consumed = totalBytes
      for (let i = from.records; i < passages.length; i++) {
        yield { kind: 'passage', passage: passages[i]!, next: { records: i + 1 } }
      }
    },
  }
}

export function parseJsonFile(path: string): unknown {
  let bytes = readFileSync(path)
  if (path.endsWith('.gz')) {
    try {
      bytes = gunzipSync(bytes)
    } catch (err) {
      throw ERR_SOURCE_TRUNCATED.withCause(err, path, `byte ${bytes.length}`, (err as Error).message)
    }
  }
  const text = bytes.toString('utf8')
  try {
    return JSON.parse(text)
  } catch (err) {
    const position = /position (\d+)/.exec((err as Error).message)?.[1]
    const where = position ? lineAndColumn(text, Number(position)) : 'end of file'
    throw ERR_SOURCE_MALFORMED(path, where, `invalid JSON (${(err as Error).message})`)
  }
}

function lineAndColumn(text: string, position: number): string {
  let line = 1
  let lastNewline = -1
  for (let i = text.indexOf('\n'); i !== -1 && i < position; i = text.indexOf('\n', i + 1)) {
    line += 1
    lastNewline = i
  }
  return `line ${line}, column ${position - lastNewline}`
}

/** SQuAD v1.1/v2.0: each paragraph one passage, titled by its article (underscores to spaces). */
export function squadPassages(path: string) {
  return (doc: unknown): Passage[] => {
    const data = (doc as { data?: unknown }).data
    if (!Array.isArray(data)) throw ERR_SOURCE_MALFORMED(path, 'top level', "expected SQuAD JSON: an object with a 'data' array")
    const passages: Passage[] = []
    data.forEach((article: { title?: unknown; paragraphs?: unknown }, a) => {
      if (typeof article.title !== 'string' || !Array.isArray(article.paragraphs)) {
        throw ERR_SOURCE_MALFORMED(path, `data[${a}]`, "expected an article with a 'title' and 'paragraphs'")
      }
      const title = article.title.replace(/_/g, ' ')
      article.paragraphs.forEach((paragraph: { context?: unknown }, p) => {
        if (typeof paragraph.context !== 'string') throw ERR_SOURCE_MALFORMED(path, `data[${a}].paragraphs[${p}]`, "missing 'context'")
        passages.push({ id: `squad:${article.title}:${p}`, title, text: paragraph.context })
      })
    })
    return passages
  }
}

/** qa-feedback's AmbigNQ grounding passages: items with passages [{content: "Title\n\ntext", wikipage}]. */
export function qaFeedbackPassages(path: string) {
  return (doc: unknown): Passage[] => {
    if (!Array.isArray(doc)) throw ERR_SOURCE_MALFORMED(path, 'top level', 'expected a JSON array of qa-feedback items')
    const passages: Passage[] = []
    doc.forEach((item: { passages?: unknown }, i) => {
      if (!Array.isArray(item.passages)) throw ERR_SOURCE_MALFORMED(path, `item ${i}`, "missing 'passages' list")
      item.passages.forEach((p: { content?: unknown; wikipage?: unknown }, j) => {
        if (typeof p.content !== 'string') throw ERR_SOURCE_MALFORMED(path, `item ${i} passage ${j}`, "missing 'content'")
        const split = p.content.indexOf('\n\n')
        const title = split === -1 ? String(p.wikipage ?? '') : p.content.slice(0, split)
        const text = split === -1 ? p.content : p.content.slice(split + 2)
        passages.push({ id: `qa-feedback:${i}:${j}`, title, text })
      })
    })
    return passages
  }
}
