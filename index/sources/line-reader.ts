// Streams a text file line by line with the byte offset and number of each line, starting
// anywhere, so line-based sources resume without re-reading what was already indexed.
import { createReadStream } from 'node:fs'
import { createGunzip } from 'node:zlib'
import type { Readable } from 'node:stream'
import { ERR_SOURCE_TRUNCATED } from '../../core/errors.js'

export interface Line {
  text: string
  /** Offset of the line's first byte (in the decompressed stream for .gz files). */
  byteOffset: number
  /** 1-based. */
  number: number
  /** Offset just past the line's newline: where the next line starts. */
  nextOffset: number
  /** Set when the line's bytes are not valid UTF-8 (the text then holds U+FFFD in their place). */
  invalidUtf8?: true
}

export interface LineSource {
  lines(fromOffset?: number, fromLine?: number): AsyncGenerator<Line>
  /** Bytes of the file consumed so far (compressed bytes for .gz). */
  bytesRead(): number
}

export function openLineSource(path: string): LineSource {
  const gzipped = path.endsWith('.gz')
  let consumed = 0
  return {
    bytesRead: () => consumed,
    async *lines(fromOffset = 0, fromLine = 1) {
      // A gzip stream cannot seek: decompress from the start and drop bytes up to fromOffset.
      const file = createReadStream(path, gzipped ? {} : { start: fromOffset })
      file.on('data', (chunk) => { consumed += chunk.length })
      consumed = gzipped ? 0 : fromOffset
      let stream: Readable = file
      if (gzipped) {
        const gunzip = createGunzip()
        file.on('error', (err) => gunzip.destroy(err))
        stream = file.pipe(gunzip)
      }
      let offset = gzipped ? 0 : fromOffset
      let lineNumber = fromLine
      let pending: Buffer[] = []
      let pendingStart = offset
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          let start = 0
          for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
            pending.push(chunk.subarray(start, nl))
            const bytes = pending.length === 1 ? pending[0]! : Buffer.concat(pending)
            const lineStart = pendingStart
            pendingStart = offset + nl + 1
            pending = []
            start = nl + 1
            if (lineStart < fromOffset) continue
            yield { ...decode(bytes), byteOffset: lineStart, number: lineNumber++, nextOffset: pendingStart }
          }
          if (start < chunk.length) pending.push(chunk.subarray(start))
          offset += chunk.length
        }
      } catch (err) {
        if (gzipped) throw ERR_SOURCE_TRUNCATED.withCause(err, path, `decompressed byte ${offset}`, (err as Error).message)
        throw err
      }
      if (pending.length > 0) {
        const bytes = Buffer.concat(pending)
        if (bytes.length > 0 && pendingStart >= fromOffset) {
          yield { ...decode(bytes), byteOffset: pendingStart, number: lineNumber, nextOffset: offset }
        }
      }
    },
  }
}

// Fatal decoding tells bytes that are not UTF-8 from a real U+FFFD in the text.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

function decode(bytes: Buffer): { text: string; invalidUtf8?: true } {
  let text: string
  let invalid = false
  try {
    text = strictUtf8.decode(bytes)
  } catch {
    text = bytes.toString('utf8')
    invalid = true
  }
  if (text.endsWith('\r')) text = text.slice(0, -1)
  return invalid ? { text, invalidUtf8: true } : { text }
}

/** Why a line cannot be text: a NUL byte or bytes that are not UTF-8. Null when it is fine. */
export function binaryProblem(line: Line): string | null {
  if (line.invalidUtf8) return 'bytes that are not valid UTF-8'
  if (line.text.includes('\u0000')) return 'binary data (NUL byte)'
  return null
}
