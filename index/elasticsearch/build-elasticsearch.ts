// `ambigqa index build --backend elasticsearch`: the same sources as the embedded store, into an
// Elasticsearch index (BM25 k1 0.9 / b 0.4, the english analyzer, title and text fields). The
// document _id is the passage id, so re-sending a batch changes nothing; each source's position
// is kept in the index's _meta and written after each acknowledged bulk batch, so a build killed
// at any moment resumes where its last batch ended. The index is laid out for the cluster it is
// created on (indexLayout): shards spread over the data nodes and, with two or more nodes, a
// replica of each, so losing one node loses no passage.
import type { Client } from '@elastic/elasticsearch'
import { ERR_ELASTICSEARCH_INDEX, ERR_SOURCE_EMPTY, ERR_USAGE } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import { createEsClient, esError, type EsOptions } from '../../retriever/elasticsearch-client.js'
import { createReader } from '../sources/formats.js'
import type { Passage } from '../../core/passage.js'
import type { ResumePoint } from '../sources/passage.js'
import { readInBatches } from '../sources/read-in-batches.js'
import { buildSource, finishSource, resumePoint, type SourceSpec } from '../sources/resume.js'

export interface EsBuildOptions {
  es: EsOptions
  sources: SourceSpec[]
  onError: 'fail' | 'skip'
  batchSize: number
  /** Concurrent bulk requests within a batch. */
  concurrency?: number
  bm25?: { k1: number; b: number }
  /** Primary shards and replicas per shard of a new index (an existing index keeps its own);
   * by default chosen from the cluster's data nodes (indexLayout). */
  shards?: number
  replicas?: number
  log: Logger
}

export interface IndexLayout {
  shards: number
  replicas: number
}

export interface EsBuildReport {
  passages: number
  sent: number
  skipped: number
  seconds: number
  shards: number
  replicas: number
}

interface SourceState {
  fingerprint: string
  records: number
  byteOffset?: number
  line?: number
  sent: number
  skipped: number
  done: boolean
}

type Meta = { ambigqa?: { state?: 'building' | 'ready'; sources?: Record<string, SourceState> } }

/**
 * The layout of a new index on a cluster of `dataNodes` data nodes: one primary shard per node, so
 * each node indexes and searches its share, and one replica where there is a second node to hold
 * it, so any one node can be lost. A single node gets no replica: it could never be assigned
 * there and would leave the index yellow for good.
 */
export function indexLayout(dataNodes: number, requested: Partial<IndexLayout> = {}): IndexLayout {
  const nodes = Math.max(1, dataNodes)
  const layout = { shards: requested.shards ?? nodes, replicas: requested.replicas ?? Math.min(1, nodes - 1) }
  if (!Number.isInteger(layout.shards) || layout.shards < 1 || layout.shards > 1024) throw ERR_USAGE(`--shards ${layout.shards} is not a shard count`, 'Give a whole number from 1 to 1024')
  if (!Number.isInteger(layout.replicas) || layout.replicas < 0) throw ERR_USAGE(`--replicas ${layout.replicas} is not a replica count`, 'Give a whole number, 0 or more')
  return layout
}

export function esIndexBody(bm25 = { k1: 0.9, b: 0.4 }, layout: IndexLayout = { shards: 1, replicas: 0 }) {
  return {
    settings: {
      number_of_shards: layout.shards,
      number_of_replicas: layout.replicas,
      similarity: { default: { type: 'BM25', k1: bm25.k1, b: bm25.b } },
    },
    mappings: {
      dynamic: 'strict' as const,
      _meta: { ambigqa: { state: 'building', sources: {} } },
      properties: {
        id: { type: 'keyword' as const },
        title: { type: 'text' as const, analyzer: 'english' },
        text: { type: 'text' as const, analyzer: 'english' },
      },
    },
  }
}

export async function buildElasticsearchIndex(options: EsBuildOptions): Promise<EsBuildReport> {
  const started = Date.now()
  const client = createEsClient({ maxRetries: 3, ...options.es })
  const report: EsBuildReport = { passages: 0, sent: 0, skipped: 0, seconds: 0, shards: 0, replicas: 0 }
  try {
    const meta = await ensureIndex(client, options)
    for (const spec of options.sources) await ingestSource(client, meta, spec, options, report)
    await writeMeta(client, options.es.index, { ...meta, state: 'ready' }).catch((err) => { throw esError(err, options.es) })
    await client.indices.refresh({ index: options.es.index })
    report.passages = (await client.count({ index: options.es.index })).count
    if (report.passages === 0) throw ERR_SOURCE_EMPTY(options.sources.map((s) => s.path).join(', '))
    const settings = (await client.indices.getSettings({ index: options.es.index }))[options.es.index]?.settings?.index
    report.shards = Number(settings?.number_of_shards)
    report.replicas = Number(settings?.number_of_replicas)
  } catch (err) {
    throw esError(err, options.es)
  } finally {
    await client.close()
  }
  report.seconds = (Date.now() - started) / 1000
  options.log.info({ ...report, url: options.es.url, index: options.es.index }, 'elasticsearch index build finished')
  return report
}

async function ensureIndex(client: Client, options: EsBuildOptions): Promise<Required<NonNullable<Meta['ambigqa']>>> {
  const { index } = options.es
  if (!(await client.indices.exists({ index }))) {
    const dataNodes = (await client.cluster.health()).number_of_data_nodes
    const layout = indexLayout(dataNodes, options)
    if (layout.replicas >= dataNodes) {
      options.log.warn({ dataNodes, replicas: layout.replicas }, 'more replicas than the cluster has other nodes for: some stay unassigned and the index stays yellow')
    }
    await client.indices.create({ index, ...esIndexBody(options.bm25, layout) })
    options.log.info({ index, dataNodes, ...layout }, 'elasticsearch index created')
  }
  const mapping = await client.indices.getMapping({ index })
  const m = mapping[index]?.mappings
  const props = m?.properties as Record<string, { analyzer?: string }> | undefined
  if (props?.text?.analyzer !== 'english' || props?.title?.analyzer !== 'english') {
    throw ERR_ELASTICSEARCH_INDEX(options.es.url, index, 'exists but was not created by ambigqa (title and text must use the english analyzer)', 'Delete it or choose another index name')
  }
  const meta = (m?._meta as Meta | undefined)?.ambigqa
  return { state: meta?.state ?? 'building', sources: meta?.sources ?? {} }
}

async function writeMeta(client: Client, index: string, meta: NonNullable<Meta['ambigqa']>): Promise<void> {
  await client.indices.putMapping({ index, _meta: { ambigqa: meta } })
}

async function ingestSource(client: Client, meta: Required<NonNullable<Meta['ambigqa']>>, spec: SourceSpec, options: EsBuildOptions, report: EsBuildReport): Promise<void> {
  const { log } = options
  const index = options.es.index
  const source = buildSource(spec)
  const { path, format, key, fingerprint } = source
  const kept = meta.sources[key]
  const from = resumePoint(source, kept, `${options.es.url}/${index}`, log)
  if (!from) return
  const state = kept ?? { fingerprint, records: 0, sent: 0, skipped: 0, done: false }
  meta.sources[key] = state
  const reader = await createReader(path, format)

  const flush = async (docs: Passage[], skippedInBatch: number, position: ResumePoint) => {
    if (docs.length > 0) {
      const result = await client.helpers.bulk<Passage>({
        datasource: docs,
        onDocument: (doc) => ({ index: { _index: index, _id: doc.id } }),
        concurrency: options.concurrency ?? 2,
        flushBytes: 5_000_000,
        retries: 5,
        wait: 1000,
        refreshOnCompletion: false,
        onDrop: (dropped) => log.warn({ status: dropped.status, id: dropped.document.id, error: dropped.error }, 'elasticsearch dropped a document'),
      })
      if (result.failed > 0 || result.aborted) {
        throw ERR_ELASTICSEARCH_INDEX(options.es.url, index, `${result.failed} documents of a bulk batch were rejected`, 'See the warnings above, fix the cause and run the same build again: it resumes')
      }
      report.sent += docs.length
      state.sent += docs.length
    }
    state.records = position.records
    if (position.byteOffset !== undefined) state.byteOffset = position.byteOffset
    if (position.line !== undefined) state.line = position.line
    state.skipped += skippedInBatch
    await writeMeta(client, index, meta)
  }
  const read = await readInBatches(reader, from, { label: `sending ${spec.path} to elasticsearch`, onError: options.onError, batchSize: options.batchSize, log, ...(spec.idPrefix ? { idPrefix: spec.idPrefix } : {}) }, flush)
  report.skipped += read.skipped
  finishSource(source, state.sent, state.skipped, log)
  state.done = true
  await writeMeta(client, index, meta)
}

