// CPU-bound jobs (wikitext parsing, segment indexing) on worker threads, with results handed
// back in job order: the store checksums passages in insertion order, so parallelism must
// never change what is written or in which order.
import { parentPort, Worker, type TransferListItem } from 'node:worker_threads'
import { ERR_INTERNAL } from './errors.js'

export interface JobRunner<J, R> {
  run(job: J): Promise<R>
  close(): Promise<void>
}

/** `workers` < 1 runs jobs on the calling thread: same results, no parallelism. */
export function createJobRunner<J, R>(script: URL, workers: number, inline: (job: J) => R, label: string): JobRunner<J, R> {
  if (workers < 1) return { run: async (job) => inline(job), close: async () => {} }
  return new WorkerPool<J, R>(script, Math.floor(workers), label)
}

interface Pending<R> {
  resolve: (result: R) => void
  reject: (err: Error) => void
}

class WorkerPool<J, R> implements JobRunner<J, R> {
  private readonly slots: { worker: Worker; pending: Pending<R>[] }[] = []
  private failure: Error | undefined
  private closing = false

  constructor(script: URL, size: number, private readonly label: string) {
    for (let i = 0; i < size; i++) {
      const slot = { worker: new Worker(script), pending: [] as Pending<R>[] }
      // Each worker answers its jobs first-in first-out.
      slot.worker.on('message', (result: R) => slot.pending.shift()?.resolve(result))
      slot.worker.on('error', (err) => this.fail(`a ${label} worker crashed (${err.message})`, err))
      slot.worker.on('exit', (code) => {
        if (!this.closing) this.fail(`a ${label} worker exited unexpectedly with code ${code}`)
      })
      this.slots.push(slot)
    }
  }

  run(job: J): Promise<R> {
    const promise = new Promise<R>((resolve, reject) => {
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
    for (const slot of this.slots) for (const pending of slot.pending.splice(0)) pending.reject(this.failure)
    if (!this.closing) void this.close()
  }
}

/** The worker side: answers each job with handler(job), transferring the buffers it names. */
export function serveJobs<J, R>(handler: (job: J) => R, transfer: (result: R) => TransferListItem[] = () => []): void {
  if (parentPort === null) throw new Error('this module must be started as a worker thread')
  const port = parentPort
  port.on('message', (job: J) => {
    const result = handler(job)
    port.postMessage(result, transfer(result))
  })
}

/**
 * Maps `items` through `start` with up to `maxInFlight` results outstanding, yielding them in
 * item order. If `items` throws, the results already started are yielded before the error, so
 * a reader hands over everything that came before a broken spot.
 */
export async function* orderedMap<T, R>(items: AsyncIterable<T> | Iterable<T>, start: (item: T) => Promise<R>, maxInFlight: number): AsyncGenerator<R> {
  const queue: { result: Promise<R>; settled: boolean }[] = []
  const iterator = Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : (items as Iterable<T>)[Symbol.iterator]()
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
