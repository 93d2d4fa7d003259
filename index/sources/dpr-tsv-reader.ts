// DPR's psgs_w100.tsv: a header `id<TAB>text<TAB>title`, then one passage per line, fields
// CSV-quoted when they hold quotes (a quote inside a quoted field is doubled).
import { ERR_SOURCE_MALFORMED } from '../../core/errors.js'
import { createLineBasedReader } from './line-based-reader.js'
import type { PassageReader } from './passage.js'

export function createDprTsvReader(path: string): PassageReader {
  let columns = { id: 0, text: 1, title: 2 }
  return createLineBasedReader(
    path,
    (line) => {
      const fields = splitTsvRow(line.text)
      if (fields.length !== 3) throw new Error(`expected 3 tab-separated fields (id, text, title), found ${fields.length}`)
      const id = fields[columns.id]!.trim()
      if (id === '') throw new Error('empty passage id')
      return [{ id, text: fields[columns.text]!, title: fields[columns.title]! }]
    },
    {
      header: (line) => {
        const names = splitTsvRow(line.text).map((name) => name.trim())
        const id = names.indexOf('id')
        const text = names.indexOf('text')
        const title = names.indexOf('title')
        if (names.length !== 3 || id < 0 || text < 0 || title < 0) {
          throw ERR_SOURCE_MALFORMED(path, 'line 1', `expected the DPR header 'id<TAB>text<TAB>title', found '${line.text.slice(0, 80)}'`)
        }
        columns = { id, text, title }
      },
    },
  )
}

/** Splits one TSV row, undoing CSV quoting ("a ""b"" c" → a "b" c). */
export function splitTsvRow(row: string): string[] {
  const fields: string[] = []
  let i = 0
  for (;;) {
    if (row[i] === '"') {
      let value = ''
      let j = i + 1
      for (;;) {
        const close = row.indexOf('"', j)
        if (close === -1) throw new Error(`unterminated quoted field starting at column ${i + 1}`)
        value += row.slice(j, close)
        if (row[close + 1] === '"') {
          value += '"'
          j = close + 2
          continue
        }
        i = close + 1
        break
      }
      if (i < row.length && row[i] !== '\t') throw new Error(`unexpected text after a closing quote at column ${i + 1}`)
      fields.push(value)
    } else {
      const tab = row.indexOf('\t', i)
      fields.push(row.slice(i, tab === -1 ? row.length : tab))
      i = tab === -1 ? row.length : tab
    }
    if (i >= row.length) return fields
    i += 1 // the tab
  }
}
