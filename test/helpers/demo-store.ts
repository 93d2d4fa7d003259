// The demo corpus (5,531 real Wikipedia passages) built into a fresh SQLite store in a temp folder.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { buildIndex } from '../../index/build-index.js'
import { silentLogger } from '../../core/log.js'

export const DEMO_CORPUS = resolve(process.cwd(), 'assets/demo/passages.tsv.gz')

export async function buildDemoStore(prefix: string): Promise<string> {
  const store = join(mkdtempSync(join(tmpdir(), prefix)), 'store')
  await buildIndex({ store, sources: [{ path: DEMO_CORPUS }], onError: 'fail', batchSize: 2000, segmentSize: 10000, workers: 1, log: silentLogger })
  return store
}
