// Parsing wikitext is the slow step of dump ingestion, so pages are converted on worker threads
// (core/worker-pool.ts), results handed back in page order whatever the number of workers.
import { createJobRunner, type JobRunner } from '../../core/worker-pool.js'
import { convertPage, type PageJob, type PageResult } from './wikitext-page.js'

export { orderedMap } from '../../core/worker-pool.js'

export interface PageConverter {
  convert(job: PageJob): Promise<PageResult>
  close(): Promise<void>
}

/** `workers` < 1 converts on the calling thread (same results, no parallelism). */
export function createPageConverter(workers: number): PageConverter {
  const runner: JobRunner<PageJob, PageResult> = createJobRunner(new URL('./wikitext-worker.js', import.meta.url), workers, convertPage, 'wikitext')
  return { convert: (job) => runner.run(job), close: () => runner.close() }
}

/** Jobs to keep queued so every worker stays busy while the main thread reads ahead. */
export function inFlight(workers: number): number {
  return Math.max(4, workers * 8)
}
