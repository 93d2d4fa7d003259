// A dump file as a stream of decoded text, bzip2 or not, read a chunk at a time. The bzip2
// decoder (unbzip2-stream, pure JS) also reads multistream dumps, which are bzip2 streams laid
// end to end. We drive it by hand, write a chunk and take what it emitted, instead of piping, so
// the reader pulls: nothing is read ahead of what the parser and the workers can take.
import { closeSync, createReadStream, openSync, readSync, statSync } from 'node:fs'
import unbzip2 from 'unbzip2-stream'
import { ERR_SOURCE_EMPTY, ERR_SOURCE_MALFORMED, ERR_SOURCE_NOT_FOUND, ERR_SOURCE_TRUNCATED } from '../../core/errors.js'

export interface DumpInput {
  readonly compressed: boolean
  /** Bytes of the file itself (compressed bytes for bzip2) consumed so far. */
  bytesRead(): number
  /** The decoded text; throws ERR_SOURCE_TRUNCATED naming the compressed byte offset on bad bzip2. */
  text(): AsyncGenerator<string>
}

const BZIP2_MAGIC = 'BZh'

/** Opens lazily: nothing is read until text() is iterated. Throws NOT_FOUND, EMPTY, MALFORMED. */
export function openDumpInput(path: string): DumpInput {
  let size: number
  try {
    size = statSync(path).size
  } catch {
    throw ERR_SOURCE_NOT_FOUND(path)
  }
  if (size === 0) throw ERR_SOURCE_EMPTY(path)
  const compressed = firstBytes(path, BZIP2_MAGIC.length) === BZIP2_MAGIC
  if (!compressed && /\.bz2$/i.test(path)) {
    throw ERR_SOURCE_MALFORMED(path, 'byte 0', 'the file is named .bz2 but is not bzip2 data (no "BZh" signature)')
  }
  let bytes = 0
  const chunks = async function* (): AsyncGenerator<Buffer> {
    for await (const chunk of createReadStream(path)) {
      bytes += (chunk as Buffer).length
      yield chunk as Buffer
    }
  }
  return {
    compressed,
    bytesRead: () => bytes,
    text: () => decodeText(compressed ? bunzip(path, chunks(), () => bytes) : chunks()),
  }
}

async function* decodeText(buffers: AsyncIterable<Buffer>): AsyncGenerator<string> {
  // Not fatal: a stray invalid byte in an article becomes U+FFFD rather than losing the dump.
  const decoder = new TextDecoder('utf-8')
  for await (const buffer of buffers) {
    const text = decoder.decode(buffer, { stream: true })
    if (text !== '') yield text
  }
  const tail = decoder.decode()
  if (tail !== '') yield tail
}

async function* bunzip(path: string, input: AsyncIterable<Buffer>, offset: () => number): AsyncGenerator<Buffer> {
  const decoder = unbzip2()
  const output: Buffer[] = []
  let failure: Error | undefined
  decoder.on('data', (data: Buffer) => output.push(data))
  decoder.on('error', (err: Error) => {
    failure ??= err
  })
  // The decoder holds up to one bzip2 block (≤ 900 kB) back, so a corrupt block is reported
  // at most that far past where it starts; a truncation is reported at the end of the file.
  const check = (atEnd: boolean): void => {
    if (failure === undefined) return
    const problem = atEnd
      ? `the bzip2 data ends in the middle of a block or stream (${failure.message})`
      : `corrupt bzip2 data in the block before this offset (${failure.message})`
    throw ERR_SOURCE_TRUNCATED.withCause(failure, path, `byte ${offset()}`, problem)
  }
  // What was decoded before a failure is good data: hand it on first, so the pages before a
  // bad spot are still read.
  for await (const chunk of input) {
    decoder.write(chunk)
    yield* output.splice(0)
    check(false)
  }
  decoder.end()
  yield* output.splice(0)
  check(true)
}

function firstBytes(path: string, n: number): string {
  const fd = openSync(path, 'r')
  try {
    const buffer = Buffer.alloc(n)
    return buffer.subarray(0, readSync(fd, buffer, 0, n, 0)).toString('latin1')
  } finally {
    closeSync(fd)
  }
}
