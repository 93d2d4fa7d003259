// JSON Lines passages in the three shapes met in practice: {id, title, text}; Pyserini's
// {id, contents: "\"Title\"\ntext"} (title quoted or not); and retrieval outputs {question, ctxs: [{title, text}]}
// (NQ gold paragraphs), whose passages get ids from the file name, line and position.
import { basename } from 'node:path'
import { createLineBasedReader } from './line-based-reader.js'
import type { Passage } from '../../core/passage.js'
import type { PassageReader } from './passage.js'

export function createJsonlReader(path: string): PassageReader {
  const stem = basename(path).replace(/\.jsonl(\.gz)?$/, '')
  return createLineBasedReader(path, (line) => {
    let record: unknown
    try {
      record = JSON.parse(line.text)
    } catch (err) {
      throw new Error(`invalid JSON (${(err as Error).message})`)
    }
    if (record === null || typeof record !== 'object' || Array.isArray(record)) throw new Error('expected a JSON object')
    const r = record as Record<string, unknown>
    if (Array.isArray(r.ctxs)) {
      return r.ctxs.map((ctx, j) => {
        const c = ctx as Record<string, unknown>
        const id = c.id !== undefined ? String(c.id) : `${stem}:${line.number}:${j}`
        return { id, title: stringField(c, 'title', `ctxs[${j}].`), text: stringField(c, 'text', `ctxs[${j}].`) }
      })
    }
    if (r.id === undefined || r.id === null || String(r.id).trim() === '') throw new Error("missing 'id'")
    const id = String(r.id)
    if (typeof r.contents === 'string') return [fromContents(id, r.contents)]
    return [{ id, title: stringField(r, 'title'), text: stringField(r, 'text') }]
  })
}

function stringField(r: Record<string, unknown>, key: string, prefix = ''): string {
  const value = r[key]
  if (typeof value !== 'string') throw new Error(`'${prefix}${key}' must be a string`)
  return value
}

/** Pyserini's contents: the title (quoted or not) on the first line, the text after it. */
function fromContents(id: string, contents: string): Passage {
  const newline = contents.indexOf('\n')
  if (newline === -1) return { id, title: '', text: contents }
  const first = contents.slice(0, newline)
  const title = first.length >= 2 && first.startsWith('"') && first.endsWith('"') ? first.slice(1, -1) : first
  return { id, title, text: contents.slice(newline + 1) }
}
