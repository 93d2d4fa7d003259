// The shared loop of line-based sources (DPR TSV, JSON Lines): one record per line, resumable
// at the byte offset of the next line, and every bad line named by file and line number.
import { statSync } from 'node:fs'
import { ERR_SOURCE_MALFORMED } from '../../core/errors.js'
import type { Passage } from '../../core/passage.js'
import type { PassageReader, ReadItem, ResumePoint } from './passage.js'
import { binaryProblem, openLineSource, type Line } from './line-reader.js'

/** Turns one line into passages, or throws a plain Error describing what is wrong with it. */
export type LineParser = (line: Line) => Passage[]

export function createLineBasedReader(
  path: string,
  parse: LineParser,
  options: { header?: (line: Line) => void } = {},
): PassageReader {
  const source = openLineSource(path)
  return {
    totalBytes: statSync(path).size,
    bytesRead: source.bytesRead,
    async *read(from: ResumePoint): AsyncGenerator<ReadItem> {
      let records = from.records
      const lines = source.lines(from.byteOffset ?? 0, from.line ?? 1)
      for await (const line of lines) {
        if (line.number === 1 && options.header) {
          options.header(line)
          continue
        }
        const next: ResumePoint = { records: records + 1, byteOffset: line.nextOffset, line: line.number + 1 }
        records += 1
        if (line.text.trim() === '') continue
        const binary = binaryProblem(line)
        if (binary) {
          // Junk rarely stops at one line: give up at once rather than report thousands.
          throw ERR_SOURCE_MALFORMED(path, `line ${line.number} (byte ${line.byteOffset})`, binary)
        }
        let passages: Passage[]
        try {
          passages = parse(line)
        } catch (err) {
          yield { kind: 'bad-record', error: ERR_SOURCE_MALFORMED(path, `line ${line.number}`, (err as Error).message), next }
          continue
        }
        // Only the last passage of a line moves the resume point past it: a resume re-reads a
        // line whose passages were not all stored, and the store ignores the ones it has.
        const here: ResumePoint = { records: records - 1, byteOffset: line.byteOffset, line: line.number }
        for (let i = 0; i < passages.length; i++) {
          yield { kind: 'passage', passage: passages[i]!, next: i === passages.length - 1 ? next : here }
        }
      }
    },
  }
}
