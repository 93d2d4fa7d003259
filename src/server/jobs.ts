// Background jobs (index builds, co-training runs) with their state, published to `jobProgress` subscribers.
// One writer per store: a second indexing job on a store being written is refused at once
// (AMBIGQA_ERR_STORE_BUSY), not queued; the client retries when the first job has finished.
// A job's message never quotes what it read: a failure gives its code, the log has the rest.
import { randomUUID } from 'node:crypto'
import { EventEmitter, on } from 'node:events'
import { resolve } from 'node:path'
import { buildIndex } from '../../index/build-index.js'
import { buildLockHolder } from '../../retriever/passage-store.js'
import { ERR_JOB_BUSY, ERR_STORE_BUSY } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'

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

/** Runs a co-training config file to its end, reporting progress; resolves with the final message. */
export type CoTrainingRunner = (configFile: string, onProgress: (p: { fraction: number | null; message: string }) => void, signal: AbortSignal) => Promise<string>

const terminal = (job: Job) => job.state === 'SUCCEEDED' || job.state === 'FAILED'

export class Jobs {
  private readonly jobs = new Map<string, Job>()
  private readonly events = new EventEmitter()
  private readonly running = new Set<Promise<void>>()
  /** Store folder → the job writing it. */
  private readonly writing = new Map<string, string>()
  /** Co-training jobs' abort controllers: a shutdown stops them (every step resumes later). */
  private readonly aborts = new Set<AbortController>()

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
    const job = this.launch('indexing', `ingesting ${shownAs}`, async (report) => {
      const built = await buildIndex({
        store: dir, sources: [{ path: source, ...(format ? { format } : {}) } as never], onError: 'fail', batchSize: 2000, segmentSize: 1000, workers: 1, log: this.log,
        onProgress: ({ indexed, total }) => report(total > 0 ? indexed / total : null, `indexed ${indexed} of ${total} passages`),
      })
      return `${built.passages} passages in ${dir}`
    }, () => this.writing.delete(dir))
    this.writing.set(dir, job.id)
    return job
  }

  /**
   * Runs a co-training config (`run` is `runCoTraining` bound to the server's configuration) as
   * a job; one at a time, as it takes every core for hours. Its progress is the run's: the stage,
   * the share done and a line with examples/s and the ETA.
   */
  startCoTraining(configFile: string, shownAs: string, run: CoTrainingRunner): Job {
    const busy = [...this.jobs.values()].find((j) => j.kind === 'cotraining' && !terminal(j))
    if (busy) throw ERR_JOB_BUSY('cotraining', busy.id)
    const controller = new AbortController()
    this.aborts.add(controller)
    return this.launch('cotraining', `co-training ${shownAs}`, (report) => run(configFile, (p) => report(p.fraction, p.message), controller.signal), () => this.aborts.delete(controller))
  }

  /** A job running `work` (which reports its progress and returns the final message). */
  private launch(kind: string, startMessage: string, work: (report: (progress: number | null, message: string) => void) => Promise<string>, cleanup: () => void): Job {
    const job: Job = { id: randomUUID(), kind, state: 'QUEUED', progress: 0, message: null, startedAt: null, finishedAt: null }
    this.jobs.set(job.id, job)
    const run = (async () => {
      await new Promise((r) => setImmediate(r))
      this.update(job, { state: 'RUNNING', startedAt: new Date().toISOString(), message: startMessage })
      try {
        const message = await work((progress, text) => this.update(job, { progress, message: text }))
        this.update(job, { state: 'SUCCEEDED', progress: 1, finishedAt: new Date().toISOString(), message })
      } catch (error) {
        const code = (error as { code?: unknown }).code
        this.log.warn({ job: job.id, err: error }, `${kind} job failed`)
        this.update(job, {
          state: 'FAILED', finishedAt: new Date().toISOString(),
          message: `failed with ${typeof code === 'string' && code.startsWith('AMBIGQA_ERR_') ? code : 'AMBIGQA_ERR_INTERNAL'}; the server log has the details (job ${job.id})`,
        })
      } finally {
        cleanup()
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
    for (const controller of this.aborts) controller.abort()
    await Promise.allSettled([...this.running])
  }
}
