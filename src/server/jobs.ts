// Background jobs (index builds) with their state, published to `jobProgress` subscribers.
// One writer per store: a second indexing job on a store being written is refused at once
// (AMBIGQA_ERR_STORE_BUSY), not queued; the client retries when the first job has finished.
// A job's message never quotes what it read: a failure gives its code, the log has the rest.
import { randomUUID } from 'node:crypto'
import { EventEmitter, on } from 'node:events'
import { resolve } from 'node:path'
import { buildIndex } from '../../index/build-index.js'
import { buildLockHolder } from '../../retriever/passage-store.js'
import { ERR_STORE_BUSY } from '../core/errors.js'
import type { Logger } from '../core/log.js'

export type JobState = 'QUEUED' | 'RUNNING' | 'SUCCEEDED' | 'FAILED'

export interface Job {
  id: string
  kind: string
  state: JobState
  progress: number | null
  message: string | null
  startedAt: string | null
  finishedAt: string | null
}

const terminal = (job: Job) => job.state === 'SUCCEEDED' || job.state === 'FAILED'

export class Jobs {
  private readonly jobs = new Map<string, Job>()
  private readonly events = new EventEmitter()
  private readonly running = new Set<Promise<void>>()
  /** Store folder → the job writing it. */
  private readonly writing = new Map<string, string>()

  constructor(private readonly log: Logger) {
    this.events.setMaxListeners(0)
  }

  get(id: string): Job | undefined { return this.jobs.get(id) }

  private update(job: Job, change: Partial<Job>): void {
    Object.assign(job, change)
    this.events.emit(job.id, { ...job })
  }

  /**
   * Builds (or resumes) the store at `store` from `source`, as a job; `shownAs` is the path as
   * the client gave it. Throws AMBIGQA_ERR_STORE_BUSY when a job or another process writes the store.
   */
  startIndexing(source: string, shownAs: string, format: string | undefined, store: string): Job {
    const dir = resolve(store)
    const writer = this.writing.get(dir)
    if (writer !== undefined) throw ERR_STORE_BUSY(dir, `indexing job ${writer} of this server`)
    const holder = buildLockHolder(dir)
    if (holder !== undefined) throw ERR_STORE_BUSY(dir, holder === process.pid ? 'another writer in this server' : `process ${holder}`)
    const job: Job = { id: randomUUID(), kind: 'indexing', state: 'QUEUED', progress: 0, message: null, startedAt: null, finishedAt: null }
    this.jobs.set(job.id, job)
    this.writing.set(dir, job.id)
    const run = (async () => {
      await new Promise((r) => setImmediate(r))
      this.update(job, { state: 'RUNNING', startedAt: new Date().toISOString(), message: `ingesting ${shownAs}` })
      try {
        const report = await buildIndex({
          store: dir, sources: [{ path: source, ...(format ? { format } : {}) } as never], onError: 'fail', batchSize: 2000, segmentSize: 1000, workers: 1, log: this.log,
          onProgress: ({ indexed, total }) => this.update(job, { progress: total > 0 ? indexed / total : null, message: `indexed ${indexed} of ${total} passages` }),
        })
        this.update(job, { state: 'SUCCEEDED', progress: 1, finishedAt: new Date().toISOString(), message: `${report.passages} passages in ${dir}` })
      } catch (error) {
        const code = (error as { code?: unknown }).code
        this.log.warn({ job: job.id, err: error }, 'indexing job failed')
        this.update(job, {
          state: 'FAILED', finishedAt: new Date().toISOString(),
          message: `failed with ${typeof code === 'string' && code.startsWith('AMBIGQA_ERR_') ? code : 'AMBIGQA_ERR_INTERNAL'}; the server log has the details (job ${job.id})`,
        })
      } finally {
        this.writing.delete(dir)
      }
    })()
    this.running.add(run)
    void run.finally(() => this.running.delete(run))
    return { ...job }
  }

  /** The job's current state, then every change until it finishes. */
  async *watch(id: string): AsyncGenerator<Job> {
    const job = this.jobs.get(id)
    if (!job) return
    const controller = new AbortController()
    const changes = on(this.events, id, { signal: controller.signal })
    try {
      yield { ...job }
      if (terminal(job)) return
      for await (const [next] of changes) {
        yield next as Job
        if (terminal(next as Job)) return
      }
    } finally {
      controller.abort()
    }
  }

  /** Waits for running jobs (graceful shutdown). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.running])
  }
}
