// The retriever the configuration names, opened on the configured store.
import type { Config } from '../src/config.js'
import { Bm25SqliteRetriever } from './bm25-sqlite-retriever.js'
import { PassageStore } from './passage-store.js'
import type { Retriever } from './retriever.js'

export function openRetriever(config: Config): Retriever {
  switch (config.retriever) {
    case 'bm25-sqlite':
      return new Bm25SqliteRetriever(PassageStore.openReadOnly(config.store), config.bm25)
  }
}
