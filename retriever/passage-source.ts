// Where `passage(id)` and `health` read passages: the store the configured retriever searches.
// With Elasticsearch alone that is the index, not a local SQLite store that may differ from it.
import type { Client } from '@elastic/elasticsearch'
import type { Passage } from '../core/passage.js'
import { createEsClient, esRead, type EsOptions } from './elasticsearch-client.js'
import { asStoreError, type PassageStore } from './passage-store.js'

export interface PassageSource {
  /** Which backend: the dependency's name in health. */
  readonly kind: 'store' | 'elasticsearch'
  /** What it is, for health: a store folder or an Elasticsearch URL and index. */
  readonly name: string
  byId(id: string): Promise<Passage | undefined>
  /** How many passages it holds; throws a coded error when it cannot be read. */
  count(): Promise<number>
  close(): Promise<void>
}

export class SqlitePassageSource implements PassageSource {
  readonly kind = 'store'
  readonly name: string
  private passages: number | undefined

  constructor(private readonly store: PassageStore) {
    this.name = store.dir
  }

  async byId(id: string): Promise<Passage | undefined> {
    try {
      return this.store.byId(id)
    } catch (err) {
      throw asStoreError(err, this.store.dir)
    }
  }

  async count(): Promise<number> {
    try {
      // A served store is read-only: counting once is enough, but every probe reads the file.
      this.store.meta('state')
      return (this.passages ??= this.store.count())
    } catch (err) {
      throw asStoreError(err, this.store.dir)
    }
  }

  async close(): Promise<void> {
    this.store.close()
  }
}

export class EsPassageSource implements PassageSource {
  readonly kind = 'elasticsearch'
  readonly name: string
  private readonly client: Client

  private readonly options: EsOptions

  constructor(options: EsOptions) {
    this.name = `${options.url} index ${options.index}`
    this.options = { requestTimeoutMs: 5_000, maxRetries: 0, ...options }
    this.client = createEsClient(this.options)
  }

  async byId(id: string): Promise<Passage | undefined> {
    const res = await esRead(this.options, (attempt) => this.client.get<{ id: string; title: string; text: string }>({ index: this.options.index, id, _source: ['id', 'title', 'text'] }, { ...attempt, ignore: [404] }))
    if (!res.found || !res._source) return undefined
    return { id: res._source.id ?? id, title: res._source.title ?? '', text: res._source.text ?? '' }
  }

  async count(): Promise<number> {
    return (await esRead(this.options, (attempt) => this.client.count({ index: this.options.index }, attempt))).count
  }

  async close(): Promise<void> {
    await this.client.close()
  }
}
