// Parsing wikitext is the slow step of ingestion, so pages are converted on worker threads.
// The store checksums passages in insertion order, so results must come back in input order
// whatever the number of workers: orderedMap starts jobs as they are read and yields results
// strictly in that order, and each worker answers its jobs first-in first-out.
import { Worker } from 'node:worker_threads'
import { ERR_INTERNAL } from '../src/errors.js'
import { convertPage, type PageJob, type PageResult } from './wikitext-page.js'

export interface PageConverter {
  convert(job: PageJob): Promise<PageResult>
  close(): Promise<void>
}

/** `workers` < 1 converts on the calling thread, with no parallelism. Results match the
 * worker path except on pathologically nested pages, where the main thread's smaller stack
 * can overflow (a bad record) where a worker's 4 MB stack does not. */
export function createPageConverter(workers: number): PageConverter {
  if (workers < 1) {
    return { convert: async (job) => convertPage(job), close: async () => {} }
  }
  return new WorkerPool(Math.floor(workers))
}

/** Jobs to keep queued so every worker stays busy while the main thread reads ahead. */
export function inFlight(workers: number): number {
  return Math.max(4, workers * 8)
}

interface Pending {
  resolve: (result: PageResult) => void
  reject: (err: Error) => void
}

interface Slot {
  worker: Worker
  pending: Pending[]
}

class WorkerPool implements PageConverter {
  private readonly slots: Slot[] = []
  private failure: Error | undefined
  private closing = false

  constructor(size: number) {
    // Resolved next to this file, so it works from dist/index/ as compiled.
    const script = new URL('./wikitext-worker.js', import.meta.url)
    for (let i = 0; i < size; i++) {
      const slot: Slot = { worker: new Worker(script), pending: [] }
      slot.worker.on('message', (result: PageResult) => slot.pending.shift()?.resolve(result))
      slot.worker.on('error', (err) => this.fail(`a wikitext worker crashed (${err.message})`, err))
      slot.worker.on('exit', (code) => {
        if (!this.closing) this.fail(`a wikitext worker exited unexpectedly with code ${code}`)
      })
      this.slots.push(slot)
    }
  }

  convert(job: PageJob): Promise<PageResult> {
    const promise = new Promise<PageResult>((resolve, reject) => {
      if (this.failure !== undefined) return reject(this.failure)
      const slot = this.slots.reduce((a, b) => (b.pending.length < a.pending.length ? b : a))
      slot.pending.push({ resolve, reject })
      slot.worker.postMessage(job)
    })
    // The caller awaits results in order, possibly long after a failure: keep Node from
    // reporting the rejection as unhandled in between.
    promise.catch(() => {})
    return promise
  }

  async close(): Promise<void> {
    this.closing = true
    await Promise.all(this.slots.map((slot) => slot.worker.terminate()))
  }

  private fail(problem: string, cause?: unknown): void {
    this.failure ??= ERR_INTERNAL.withCause(cause, problem)
    for (const slot of this.slots) {
      for (const pending of slot.pending.splice(0)) pending.reject(this.failure)
    }
    if (!this.closing) void this.close()
  }
}

/**
 * Maps `items` through `start` with up to `maxInFlight` results outstanding, yielding them in
 * item order. If `items` throws, the results already started are yielded before the error, so
 * a reader hands over everything that came before a broken spot.
 */
export async function* orderedMap<T, R>(
  items: AsyncIterable<T>,
  start: (item: T) => Promise<R>,
  maxInFlight: number,
): AsyncGenerator<R> {
  const queue: { result: Promise<R>; settled: boolean }[] = []
  const iterator = items[Symbol.asyncIterator]()
  let sourceError: { error: unknown } | undefined
  try {
    for (;;) {
      let next: IteratorResult<T>
      try {
        next = await iterator.next()
      } catch (error) {
        sourceError = { error }
        break
      }
      if (next.done === true) break
      const entry = { result: start(next.value), settled: false }
      const settle = (): void => {
        entry.settled = true
      }
      entry.result.then(settle, settle)
      queue.push(entry)
      while (queue.length >= maxInFlight || queue[0]?.settled === true) yield await queue.shift()!.result
    }
    while (queue.length > 0) yield await queue.shift()!.result
    if (sourceError !== undefined) throw sourceError.error
  } finally {
    if (sourceError === undefined) await iterator.return?.()
  }
}
