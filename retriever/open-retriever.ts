// The retriever the configuration names, opened on the configured store.
import type { Config } from '../src/config.js'
import { Bm25EsRetriever } from './bm25-es-retriever.js'
import { Bm25SqliteRetriever } from './bm25-sqlite-retriever.js'
import { DenseEncoder } from './dense-encoder.js'
import { DenseRetriever } from './dense-retriever.js'
import { HybridRetriever } from './hybrid-retriever.js'
import { PassageStore } from './passage-store.js'
import type { Retriever } from './retriever.js'

export async function openRetriever(config: Config): Promise<Retriever> {
  switch (config.retriever) {
    case 'bm25-sqlite':
      return new Bm25SqliteRetriever(PassageStore.openReadOnly(config.store), config.bm25)
    case 'bm25-es':
      return new Bm25EsRetriever(config.elasticsearch)
    case 'dense':
      return openDense(config)
    case 'hybrid': {
      const { fusion, rrfK, alpha, depth } = config.hybrid
      const bm25 = new Bm25SqliteRetriever(PassageStore.openReadOnly(config.store), config.bm25)
      const dense = await openDense(config)
      return new HybridRetriever([bm25, dense], { fusion: fusion === 'rrf' ? { kind: 'rrf', k: rrfK } : { kind: 'weighted', weights: [alpha, 1 - alpha] }, depth })
    }
  }
}

async function openDense(config: Config): Promise<Retriever> {
  const encoder = await DenseEncoder.load(config.dense.model, config.dense.modelsDir, config.dense.threads)
  try {
    return new DenseRetriever(PassageStore.openReadOnly(config.store), encoder)
  } catch (err) {
    await encoder.close()
    throw err
  }
}
