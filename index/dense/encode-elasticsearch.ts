// `ambigqa index encode --backend elasticsearch`: dense vectors of an Elasticsearch index's
// passages in a `dense_vector` field per encoder (HNSW, dot product on unit vectors), for kNN.
// Resumable without bookkeeping: each round asks for documents still missing the field, in id
// order. The vectors come from the encoder, or from a SQLite store that already holds them for
// the same passages (`--from-store`), so a corpus is encoded once for both backends.
import type { Client } from '@elastic/elasticsearch'
import { ERR_ELASTICSEARCH_INDEX, ERR_MODEL_MISSING, ERR_USAGE } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import { Progress } from '../../core/progress.js'
import { DenseEncoder } from '../../retriever/dense-encoder.js'
import { encodePassages } from './store-vectors.js'
import { loadVectors } from '../../retriever/dense-vectors.js'
import { createEsClient, esError, type EsOptions } from '../../retriever/elasticsearch-client.js'
import { PassageStore } from '../../retriever/passage-store.js'
import { vectorField, vectorMapping } from '../../retriever/dense-es-retriever.js'

export interface EsEncodeOptions {
  es: EsOptions
  model: string
  modelsDir: string
  batchSize: number
  threads?: number
  /** A SQLite store with this model's vectors of the same passages (same ids). */
  fromStore?: string
  log: Logger
}

type Doc = { id: string; title: string; text: string }

export async function encodeElasticsearch(o: EsEncodeOptions): Promise<{ encoded: number; seconds: number }> {
  const started = Date.now()
  const field = vectorField(o.model)
  const source = o.fromStore ? storeVectors(o.fromStore, o.model) : undefined
  const encoder = source ? undefined : await DenseEncoder.load(o.model, o.modelsDir, o.threads)
  const client = createEsClient({ requestTimeoutMs: 60_000, maxRetries: 3, ...o.es })
  let encoded = 0
  try {
    const dims = source?.dim ?? (await encoder!.encode(['dimension probe'], 'passage'))[0]!.length
    await ensureField(client, o.es, field, dims)
    const missing = { bool: { must_not: { exists: { field } } } }
    const total = (await client.count({ index: o.es.index, query: missing })).count
    if (total === 0) o.log.info({ field }, 'every passage already has its vector')
    const progress = new Progress({ label: `encoding ${o.es.index} with ${o.model}`, unit: 'passages', log: o.log, fraction: () => encoded / Math.max(1, total) })
    let after: string | undefined
    for (;;) {
      const page = await client.search<Doc>({
        index: o.es.index, size: o.batchSize, query: missing, sort: [{ id: 'asc' }], _source: ['id', 'title', 'text'],
        ...(after !== undefined ? { search_after: [after] } : {}),
      })
      const docs = page.hits.hits.map((h) => ({ _id: h._id!, ...h._source! }))
      if (docs.length === 0) break
      const vectors = source ? docs.map((d) => source.byId(d.id)) : await encodePassages(encoder!, docs, o.batchSize)
      const res = await client.bulk({ operations: docs.flatMap((d, i) => [{ update: { _index: o.es.index, _id: d._id } }, { doc: { [field]: Array.from(vectors[i]!) } }]) })
      if (res.errors) {
        const first = res.items.find((it) => it.update?.error)?.update?.error
        throw ERR_ELASTICSEARCH_INDEX(o.es.url, o.es.index, `a vector update was rejected: ${first?.reason ?? 'unknown reason'}`, 'Fix the cause and run the same command again: it resumes')
      }
      encoded += docs.length
      progress.update(encoded)
      after = docs.at(-1)!.id
    }
    progress.done(encoded)
    await client.indices.refresh({ index: o.es.index })
  } catch (err) {
    throw esError(err, o.es)
  } finally {
    await client.close()
    await encoder?.close()
    source?.close()
  }
  return { encoded, seconds: (Date.now() - started) / 1000 }
}

async function ensureField(client: Client, es: EsOptions, field: string, dims: number): Promise<void> {
  const mapping = await client.indices.getMapping({ index: es.index })
  const existing = (mapping[es.index]?.mappings?.properties as Record<string, { type?: string; dims?: number }> | undefined)?.[field]
  if (!existing) {
    await client.indices.putMapping({ index: es.index, properties: { [field]: vectorMapping(dims) } })
  } else if (existing.type !== 'dense_vector' || existing.dims !== dims) {
    throw ERR_ELASTICSEARCH_INDEX(es.url, es.index, `has a field ${field} that is not a ${dims}-dimensional dense_vector`, 'Rebuild the index with ambigqa index build --backend elasticsearch')
  }
}

function storeVectors(dir: string, model: string): { dim: number; byId: (id: string) => Float32Array; close: () => void } {
  const store = PassageStore.openReadOnly(dir)
  const loaded = loadVectors(store, model)
  if (!loaded) {
    store.close()
    throw ERR_MODEL_MISSING(`the ${model} vectors of ${dir}`, `ambigqa index encode --store ${dir} --model ${model}`)
  }
  const rowid = store.db.prepare('SELECT rowid FROM passages WHERE id = ?').pluck()
  return {
    dim: loaded.dim,
    byId: (id) => {
      const row = rowid.get(id) as number | undefined
      if (row === undefined) throw ERR_USAGE(`passage ${id} of the index is not in ${dir}`, 'Give --from-store a store built from the same sources, or leave it out to encode')
      return loaded.vectors.subarray(row * loaded.dim, (row + 1) * loaded.dim)
    },
    close: () => store.close(),
  }
}
