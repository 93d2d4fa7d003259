// Concurrent requests share one model: items submitted while a batch runs wait and go together
// in the next batch (up to maxBatch), so sessions are never duplicated and the CPU runs one
// batched generation at a time. A request's abort signal reaches its item: aborted while it waits,
// it leaves the queue at once; aborted while its batch runs, it is answered with the abort at once,
// and the batch itself is aborted when every item in it was (its work then stops between steps).

interface Pending<T, R> {
  item: T
  signal: AbortSignal | undefined
  resolve: (result: R) => void
  reject: (error: unknown) => void
  /** Stops listening to the request's signal. */
  release: () => void
}

export class BatchQueue<T, R> {
  private pending: Pending<T, R>[] = []
  private running = false

  constructor(private readonly runBatch: (items: T[], signal: AbortSignal) => Promise<R[]>, private readonly maxBatch: number) {}

  submit(item: T, signal?: AbortSignal): Promise<R> {
    signal?.throwIfAborted()
    return new Promise<R>((resolve, reject) => {
      const entry: Pending<T, R> = { item, signal, resolve, reject, release: () => {} }
      if (signal) {
        const onAbort = () => {
          const i = this.pending.indexOf(entry)
          if (i >= 0) this.pending.splice(i, 1)
          reject(signal.reason)
        }
        signal.addEventListener('abort', onAbort, { once: true })
        entry.release = () => signal.removeEventListener('abort', onAbort)
      }
      this.pending.push(entry)
      // Wait a turn of the event loop so requests arriving together share the first batch.
      if (!this.running) setImmediate(() => void this.drain())
    })
  }

  get waiting(): number {
    return this.pending.length
  }

  private async drain(): Promise<void> {
    if (this.running) return
    this.running = true
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, this.maxBatch)
        const controller = new AbortController()
        const signals = batch.map((p) => p.signal)
        // Without a signal an item can never abort, so neither can its batch.
        const onAbort = () => { if (signals.every((s) => s?.aborted)) controller.abort(new DOMException('every request in the batch was aborted', 'AbortError')) }
        if (signals.every((s) => s !== undefined)) for (const s of signals) s!.addEventListener('abort', onAbort, { once: true })
        try {
          const results = await this.runBatch(batch.map((p) => p.item), controller.signal)
          batch.forEach((p, i) => p.resolve(results[i]!))
        } catch (error) {
          for (const p of batch) p.reject(error)
        } finally {
          for (const p of batch) p.release()
          for (const s of signals) s?.removeEventListener('abort', onAbort)
        }
      }
    } finally {
      this.running = false
    }
  }
}
