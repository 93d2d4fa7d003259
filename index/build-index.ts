// `ambigqa index build`: sources → passages in the store → BM25 segments → state 'ready'.
// Each batch of passages is committed together with the source position after it, so a build
// killed at any moment resumes where its last commit ended and adds nothing twice. Every source
// is read at its start before anything is written (validate-source.ts), and a store that is
// already ready takes new sources as an append (append.ts): staged beside it and published whole,
// so a bad or killed append never stops it serving what it had.
import { resolve } from 'node:path'
import { ERR_SOURCE_EMPTY } from '../core/errors.js'
import { PassageStore } from '../retriever/passage-store.js'
import { appendToStore } from './append.js'
import { indexPending, ingestSource, type BuildOptions, type BuildReport } from './ingest-source.js'
import { validateSources } from './sources/validate-source.js'

export type { BuildOptions, BuildReport } from './ingest-source.js'

export async function buildIndex(options: BuildOptions): Promise<BuildReport> {
  const started = Date.now()
  const { log } = options
  await validateSources(options.sources, options.onError)
  const store = PassageStore.openForWrite(options.store)
  const report: BuildReport = { passages: 0, added: 0, skipped: 0, duplicates: 0, conflicts: 0, seconds: 0 }
  try {
    if (store.meta('state') === 'ready') {
      await appendToStore(store, options, report)
    } else {
      store.setState('building')
      const target = { store, dir: store.dir, changedFix: `Delete ${store.dir} and build again (when it was ready before this build, \`ambigqa index rollback --store ${store.dir}\` goes back to what it served)` }
      for (const spec of options.sources) await ingestSource(target, spec, options, report)
      const pending = (store.db.prepare('SELECT max(rowid) AS n FROM passages').get() as { n: number | null }).n ?? 0
      await indexPending(store, options)
      if (pending === 0) throw ERR_SOURCE_EMPTY(options.sources.map((s) => s.path).join(', '))
      store.setState('ready')
    }
    report.passages = store.count()
  } finally {
    store.close()
  }
  report.seconds = (Date.now() - started) / 1000
  log.info({ ...report, store: resolve(options.store) }, 'index build finished')
  return report
}
