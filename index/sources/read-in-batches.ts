// The read loop every build shares (SQLite store, Elasticsearch): passages in batches, each batch
// handed to `flush` with the source position after it, so a backend commits both together; bad
// records stop the build or are skipped and counted; what was read before a failure is flushed.
import { createHash } from 'node:crypto'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { Logger } from '../../core/log.js'
import { Progress } from '../../core/progress.js'
import type { Passage } from '../../core/passage.js'
import type { PassageReader, ResumePoint } from './passage.js'

export interface ReadOptions {
  label: string
  onError: 'fail' | 'skip'
  batchSize: number
  /** Prepended to every passage id. */
  idPrefix?: string
  log: Logger
}

/** Receives a batch, how many bad records were skipped with it, and where the source stands after it. */
export type Flush = (batch: Passage[], skipped: number, position: ResumePoint) => void | Promise<void>

export async function readInBatches(reader: PassageReader, from: ResumePoint, options: ReadOptions, flush: Flush): Promise<{ passages: number; skipped: number }> {
  const { log } = options
  const progress = new Progress({
    label: options.label,
    unit: 'passages',
    log,
    fraction: () => (reader.totalBytes ? reader.bytesRead() / reader.totalBytes : undefined),
  })
  let batch: Passage[] = []
  let skippedInBatch = 0
  let position = from
  let passages = 0
  let skipped = 0
  const send = async () => {
    const [b, s] = [batch, skippedInBatch]
    batch = []
    skippedInBatch = 0
    await flush(b, s, position)
  }
  try {
    for await (const item of reader.read(from)) {
      if (item.kind === 'bad-record') {
        if (options.onError === 'fail') throw item.error
        skippedInBatch += 1
        skipped += 1
        if (skipped <= 10) log.warn({ source: options.label }, `skipped: ${item.error.message}`)
      } else {
        const p = item.passage
        batch.push(options.idPrefix ? { ...p, id: options.idPrefix + p.id } : p)
        passages += 1
      }
      position = item.next
      if (batch.length + skippedInBatch >= options.batchSize) {
        await send()
        progress.update(passages)
      }
    }
  } catch (err) {
    // Keep what was read before the failure: a later build resumes after it.
    await Promise.resolve(send()).catch(() => undefined)
    throw err
  }
  await send()
  progress.done(passages)
  return { passages, skipped }
}

/** Size and modification time (of each file, for a folder): enough to notice that a source
 * changed under a paused build. */
export function fingerprintOf(path: string): string {
  const stats = statSync(path)
  if (!stats.isDirectory()) return `${stats.size}:${Math.round(stats.mtimeMs)}`
  const hash = createHash('sha256')
  for (const name of readdirSync(path).sort()) {
    const s = statSync(join(path, name))
    hash.update(`${name}:${s.size}:${Math.round(s.mtimeMs)}\n`)
  }
  return `dir:${hash.digest('hex')}`
}
