// Concurrent requests share one model: items submitted while a batch runs wait and go together
// in the next batch (up to maxBatch), so sessions are never duplicated and the CPU runs one
// batched generation at a time.

interface Pending<T, R> {
  item: T
  signal: AbortSignal | undefined
  resolve: (result: R) => void
  reject: (error: unknown) => void
}

export class BatchQueue<T, R> {
  private pending: Pending<T, R>[] = []
  private running = false

  constructor(private readonly runBatch: (items: T[]) => Promise<R[]>, private readonly maxBatch: number) {}

  submit(item: T, signal?: AbortSignal): Promise<R> {
    signal?.throwIfAborted()
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, signal, resolve, reject })
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
        const batch = this.pending.splice(0, this.maxBatch).filter((p) => {
          if (!p.signal?.aborted) return true
          p.reject(p.signal.reason)
          return false
        })
        if (batch.length === 0) continue
        try {
          const results = await this.runBatch(batch.map((p) => p.item))
          batch.forEach((p, i) => p.resolve(results[i]!))
        } catch (error) {
          for (const p of batch) p.reject(error)
        }
      }
    } finally {
      this.running = false
    }
  }
}
