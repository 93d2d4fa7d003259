// The retriever the configuration names, opened on the configured store.
import { Bm25EsRetriever } from './bm25-es-retriever.js'
import { Bm25SqliteRetriever } from './bm25-sqlite-retriever.js'
import { DenseEncoder } from './dense-encoder.js'
import { DenseEsRetriever } from './dense-es-retriever.js'
import { DenseRetriever } from './dense-retriever.js'
import { HybridRetriever } from './hybrid-retriever.js'
import { PassageStore } from './passage-store.js'
import type { BaseRetrieverKind, Device, RetrieverKind } from '../core/kinds.js'
import type { Logger } from '../core/log.js'
import type { Retriever } from '../core/retriever.js'
import type { Bm25Parameters } from './bm25-sqlite-retriever.js'
import type { EsOptions } from './elasticsearch-client.js'

/** What opening a retriever reads of the configuration (the app's config has these keys; see
 * core/config.ts): the retriever's own settings, so this library does not depend on the app's. */
export interface RetrieverSettings {
  retriever: RetrieverKind
  store: string
  bm25: Bm25Parameters
  elasticsearch: EsOptions
  dense: { model: string; modelsDir: string; threads: number; device: Device }
  hybrid: { retrievers: readonly BaseRetrieverKind[]; fusion: 'rrf' | 'weighted'; rrfK: number; alpha: number; depth: number }
}

/** `logger` hears a GPU device that could not start (the encoder then runs on the CPU). */
export async function openRetriever(config: RetrieverSettings, logger?: Logger): Promise<Retriever> {
  if (config.retriever !== 'hybrid') return openBase(config, config.retriever, logger)
  const { retrievers, fusion, rrfK, alpha, depth } = config.hybrid
  const sources: Retriever[] = []
  try {
    for (const kind of retrievers) sources.push(await openBase(config, kind, logger))
  } catch (err) {
    await Promise.all(sources.map((s) => s.close()))
    throw err
  }
  const weights = sources.length === 2 ? [alpha, 1 - alpha] : sources.map(() => 1 / sources.length)
  return new HybridRetriever(sources, { fusion: fusion === 'rrf' ? { kind: 'rrf', k: rrfK } : { kind: 'weighted', weights }, depth })
}

async function openBase(config: RetrieverSettings, kind: BaseRetrieverKind, logger?: Logger): Promise<Retriever> {
  switch (kind) {
    case 'bm25-sqlite':
      return new Bm25SqliteRetriever(PassageStore.openReadOnly(config.store), config.bm25)
    case 'bm25-es':
      return new Bm25EsRetriever(config.elasticsearch)
    case 'dense':
    case 'dense-es': {
      const encoder = await DenseEncoder.shared(config.dense.model, config.dense.modelsDir, config.dense.threads, { device: config.dense.device, ...(logger ? { logger } : {}) })
      let store: PassageStore | undefined
      try {
        if (kind === 'dense-es') return new DenseEsRetriever(config.elasticsearch, encoder)
        store = PassageStore.openReadOnly(config.store)
        return new DenseRetriever(store, encoder, logger ? { logger } : {})
      } catch (err) {
        // A server opens retrievers on request (search(retriever:)): a failed open must not leak handles.
        store?.close()
        await encoder.close()
        throw err
      }
    }
  }
}
