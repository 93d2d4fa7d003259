import type { Command } from 'commander'
import { buildElasticsearchIndex } from '../../index/elasticsearch/build-elasticsearch.js'
import { buildIndex } from '../../index/build-index.js'
import { readStagedAppend, rollbackStore } from '../../index/append.js'
import type { SourceSpec } from '../../index/sources/resume.js'
import { encodeElasticsearch } from '../../index/dense/encode-elasticsearch.js'
import { isSourceFormat, SOURCE_FORMATS } from '../../index/sources/formats.js'
import { ENCODER_NAMES } from '../../retriever/dense-encoder.js'
import { encodeStore } from '../../index/dense/store-vectors.js'
import { ANN_DEFAULTS, ANN_MIN_PASSAGES, ANN_QUANTIZATIONS, ANN_WHEN, annWanted, buildAnnIndex, type AnnBuildOptions, type AnnWhen } from '../../index/dense/ann-index.js'
import { asStoreError, PassageStore, type StoreStats } from '../../retriever/passage-store.js'
import { checkStore } from '../../index/store-check.js'
import { DEFAULT_ENCODERS_DIR } from '../../core/paths.js'
import { ERR_STORE_CORRUPT, ERR_USAGE } from '../../core/errors.js'
import { encodeStoreInPython, parseEncodeDevice } from '../../index/dense/encode-on-device.js'
import { contextFor, parseNumber } from './context.js'

export function registerIndexCommands(program: Command): void {
  const index = program.command('index').description('build and inspect passage stores')

  index
    .command('build')
    .description('ingest passages from one or more sources into a store and index them for BM25 (resumable)')
    .requiredOption('--source <path...>', 'DPR TSV, JSON Lines, SQuAD JSON, qa-feedback JSON, MediaWiki XML(.bz2) dump, or a folder of wikitext files')
    .option('--format <format>', `source format (default: detected): ${SOURCE_FORMATS.join(' | ')}`)
    .option('--id-prefix <prefix>', 'prepend to every passage id of these sources (keeps ids of different sources apart)')
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--on-error <mode>', 'fail (default) stops at the first bad record; skip skips and counts bad records')
    .option('--batch-size <n>', 'passages committed per transaction', parseNumber('--batch-size'))
    .option('--segment-size <n>', 'passages per index segment', parseNumber('--segment-size'))
    .option('--workers <n>', 'worker threads for dump parsing', parseNumber('--workers'))
    .option('--backend <backend>', 'sqlite (default): the embedded store; elasticsearch: an Elasticsearch index', 'sqlite')
    .option('--es-url <url>', 'Elasticsearch URL, or the URLs of several nodes of one cluster separated by commas (default: config "elasticsearch.url")')
    .option('--es-index <name>', 'Elasticsearch index (default: config "elasticsearch.index")')
    .option('--shards <n>', 'elasticsearch: primary shards of a new index (default: one per data node)', parseNumber('--shards', { min: 1, max: 1024 }))
    .option('--replicas <n>', 'elasticsearch: replicas of each shard of a new index (default: 1 on a cluster of two or more nodes, else 0)', parseNumber('--replicas', { min: 0, max: 16 }))
    .option('--json', 'print the build report as JSON')
    .action(async (opts, command: Command) => {
      const ctx = contextFor(command, {
        store: opts.store,
        'elasticsearch.url': opts.esUrl,
        'elasticsearch.index': opts.esIndex,
        'ingest.onError': opts.onError,
        'ingest.batchSize': opts.batchSize,
        'ingest.segmentSize': opts.segmentSize,
        'ingest.workers': opts.workers,
      })
      if (opts.format !== undefined && !isSourceFormat(opts.format)) {
        throw ERR_USAGE(`unknown --format '${opts.format}'`, `Use one of: ${SOURCE_FORMATS.join(', ')}`)
      }
      const sources: SourceSpec[] = (opts.source as string[]).map((path) => ({
        path,
        ...(opts.format ? { format: opts.format } : {}),
        ...(opts.idPrefix ? { idPrefix: opts.idPrefix } : {}),
      }))
      if (opts.backend !== 'sqlite' && opts.backend !== 'elasticsearch') {
        throw ERR_USAGE(`unknown --backend '${opts.backend}'`, 'Use sqlite or elasticsearch')
      }
      if (opts.backend === 'elasticsearch') {
        const es = ctx.config.elasticsearch
        const r = await buildElasticsearchIndex({
          es: { ...es, requestTimeoutMs: Math.max(es.requestTimeoutMs, 30_000), maxRetries: 3 }, sources, onError: ctx.config.ingest.onError, batchSize: ctx.config.ingest.batchSize, bm25: ctx.config.bm25, log: ctx.log,
          ...(opts.shards !== undefined ? { shards: opts.shards } : {}), ...(opts.replicas !== undefined ? { replicas: opts.replicas } : {}),
        })
        if (opts.json) ctx.out(JSON.stringify(r))
        else ctx.out(`elasticsearch ${es.url} index ${es.index}: ${r.passages.toLocaleString('en-US')} passages (${r.sent} sent, ${r.skipped} bad records skipped; ${r.shards} shards, ${r.replicas} replicas each) in ${r.seconds.toFixed(1)} s`)
        return
      }
      const report = await buildIndex({
        store: ctx.config.store,
        sources,
        onError: ctx.config.ingest.onError,
        batchSize: ctx.config.ingest.batchSize,
        segmentSize: ctx.config.ingest.segmentSize,
        workers: ctx.config.ingest.workers,
        log: ctx.log,
      })
      if (opts.json) ctx.out(JSON.stringify(report))
      else {
        ctx.out(`store ${ctx.config.store}: ${report.passages.toLocaleString('en-US')} passages (${report.added} added, ` +
          `${report.duplicates} already present, ${report.skipped} bad records skipped) in ${report.seconds.toFixed(1)} s`)
      }
    })

  index
    .command('encode')
    .description('encode every passage of a store with a dense sentence encoder (resumable)')
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--model <name>', `encoder: ${ENCODER_NAMES.join(' | ')}`, 'e5-small-v2-int8')
    .option('--models-dir <dir>', 'where scripts/assets put the encoders', DEFAULT_ENCODERS_DIR)
    .option('--batch-size <n>', 'passages per ONNX run', parseNumber('--batch-size'), 32)
    .option('--threads <n>', 'ONNX intra-op threads', parseNumber('--threads'), 2)
    .option('--backend <backend>', 'sqlite (default): vectors in the store; elasticsearch: a dense_vector field of the index, for kNN', 'sqlite')
    .option('--es-url <url>', 'Elasticsearch URL, or the URLs of several nodes of one cluster separated by commas (default: config "elasticsearch.url")')
    .option('--es-index <name>', 'Elasticsearch index (default: config "elasticsearch.index")')
    .option('--from-store <dir>', 'elasticsearch: copy the vectors of this SQLite store (same sources, already encoded) instead of encoding')
    .option('--device <device>', 'cpu: onnxruntime-node (default); cuda: the same encoder rebuilt in PyTorch (.venv-train) on an NVIDIA GPU, same vectors in the same table')
    .option('--ann <when>', `sqlite: build the ANN index after encoding: auto (from ${ANN_MIN_PASSAGES.toLocaleString('en-US')} passages on, or when the store has one), always, never`, 'auto')
    .action(async (opts, command: Command) => {
      // The program's --device takes the flag wherever it stands on the line: read it from there.
      const device = parseEncodeDevice(command.optsWithGlobals<{ device?: string }>().device ?? 'cpu')
      const ctx = contextFor(command, { store: opts.store, 'elasticsearch.url': opts.esUrl, 'elasticsearch.index': opts.esIndex })
      if (opts.backend !== 'sqlite' && opts.backend !== 'elasticsearch') {
        throw ERR_USAGE(`unknown --backend '${opts.backend}'`, 'Use sqlite or elasticsearch')
      }
      if (opts.backend === 'elasticsearch') {
        if (device !== 'cpu') throw ERR_USAGE(`--device ${device} encodes into a SQLite store only`, 'Encode the SQLite store with --device cuda, then copy its vectors with --backend elasticsearch --from-store <store>')
        const es = ctx.config.elasticsearch
        // As for the build: bulk writes of vectors outlast the query timeout, and one slow reply must not end an hour's copy.
        const { encoded, seconds } = await encodeElasticsearch({
          es: { ...es, requestTimeoutMs: Math.max(es.requestTimeoutMs, 60_000), maxRetries: Math.max(es.maxRetries, 3) }, model: opts.model, modelsDir: opts.modelsDir, batchSize: opts.batchSize, threads: opts.threads, log: ctx.log, ...(opts.fromStore ? { fromStore: opts.fromStore } : {}),
        })
        ctx.out(`elasticsearch ${es.url} index ${es.index}: ${encoded.toLocaleString('en-US')} passages given ${opts.model} vectors in ${seconds.toFixed(1)} s`)
        return
      }
      if (!(ANN_WHEN as readonly string[]).includes(opts.ann)) throw ERR_USAGE(`--ann ${opts.ann} is not one of ${ANN_WHEN.join(', ')}`, 'Leave it out (auto) to build the ANN index for large stores')
      const encodeOptions = { store: ctx.config.store, model: opts.model, modelsDir: opts.modelsDir, batchSize: opts.batchSize, threads: opts.threads, log: ctx.log }
      const { encoded, seconds } = device === 'cpu' ? await encodeStore(encodeOptions) : await encodeStoreInPython({ ...encodeOptions, device })
      ctx.out(`encoded ${encoded.toLocaleString('en-US')} passages of ${ctx.config.store} with ${opts.model} on ${device} in ${seconds.toFixed(1)} s`)
      if (annWanted(ctx.config.store, opts.model, opts.ann as AnnWhen)) annReport(ctx.out, await buildAnnIndex({ store: ctx.config.store, model: opts.model, log: ctx.log }))
    })

  index
    .command('ann')
    .description(`build (or resume, or bring up to date) the on-disk ANN index of a store's dense vectors: \`index encode\` does it from ${ANN_MIN_PASSAGES.toLocaleString('en-US')} passages on`)
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--model <name>', `encoder whose vectors to index: ${ENCODER_NAMES.join(' | ')}`, 'e5-small-v2-int8')
    .option('--quantization <q>', `the graph's copy of each vector: ${ANN_QUANTIZATIONS.join(' | ')} (results are rescored in float32 either way)`, ANN_DEFAULTS.quantization)
    .option('--connectivity <m>', 'HNSW M, neighbours per node', parseNumber('--connectivity', { min: 4, max: 64 }), ANN_DEFAULTS.connectivity)
    .option('--expansion-add <ef>', 'HNSW ef_construction', parseNumber('--expansion-add', { min: 16, max: 1024 }), ANN_DEFAULTS.expansionAdd)
    .option('--threads <n>', 'build threads (default: every core)', parseNumber('--threads', { min: 1, max: 256 }))
    .option('--checkpoint-seconds <s>', 'seconds between saves of the unfinished graph: what a killed build loses at most', parseNumber('--checkpoint-seconds', { min: 0, max: 86_400 }), 180)
    .option('--batch-rows <n>', 'vectors added between progress reports and checkpoints', parseNumber('--batch-rows', { min: 1, max: 1_000_000 }), 20_000)
    .action(async (opts, command: Command) => {
      const ctx = contextFor(command, { store: opts.store })
      const options: AnnBuildOptions = {
        store: ctx.config.store, model: opts.model, quantization: opts.quantization, connectivity: opts.connectivity, expansionAdd: opts.expansionAdd,
        checkpointSeconds: opts.checkpointSeconds, batchRows: opts.batchRows, log: ctx.log, ...(opts.threads !== undefined ? { threads: opts.threads } : {}),
      }
      annReport(ctx.out, await buildAnnIndex(options))
    })

  index
    .command('rollback')
    .description('drop an unfinished append (a build of new sources into a ready store that failed or was killed): the store keeps serving what it had')
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--json', 'print JSON')
    .action((opts, command: Command) => {
      const ctx = contextFor(command, { store: opts.store })
      const r = rollbackStore(ctx.config.store, ctx.log)
      if (opts.json) ctx.out(JSON.stringify(r))
      else if (r.undone === 'nothing') ctx.out(`store ${ctx.config.store}: nothing to roll back (${r.passages.toLocaleString('en-US')} passages, ready)`)
      else {
        ctx.out(`store ${ctx.config.store}: dropped the unfinished ${r.undone === 'append' ? 'append' : 'build'} of ${r.sources.join(', ') || 'no source'} ` +
          `(${r.dropped.toLocaleString('en-US')} passages); it serves its ${r.passages.toLocaleString('en-US')} passages as before`)
      }
    })

  index
    .command('stats')
    .description('passage count, content checksum, index size and sources of a store')
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--verify', 'also check the store: SQLite quick_check over every page, and every BM25 segment re-derived from its passages (as long as indexing them); exit 1 with AMBIGQA_ERR_STORE_CORRUPT when anything is wrong')
    .option('--json', 'print JSON')
    .action((opts, command: Command) => {
      const ctx = contextFor(command, { store: opts.store })
      const store = PassageStore.openForInspection(ctx.config.store)
      try {
        let stats: StoreStats
        try {
          stats = store.stats()
        } catch (err) {
          throw asStoreError(err, store.dir)
        }
        const check = opts.verify ? checkStore(store, 'full') : undefined
        const staged = readStagedAppend(store.dir, store.meta('append_published'))
        const append = staged && !staged.published ? { passages: staged.passages, sources: staged.sources } : undefined
        if (opts.json) {
          ctx.out(JSON.stringify({ ...stats, ...(append ? { append } : {}), ...(check ? { verify: check } : {}) }))
        } else {
          ctx.out(`store      ${store.dir}`)
          ctx.out(`state      ${stats.state}`)
          ctx.out(`passages   ${stats.passages}`)
          ctx.out(`checksum   ${stats.checksum}`)
          ctx.out(`segments   ${stats.segments}`)
          ctx.out(`terms      ${stats.terms}`)
          ctx.out(`postings   ${stats.postings}`)
          ctx.out(`size       ${(stats.bytes / 2 ** 20).toFixed(1)} MiB`)
          for (const s of stats.sources) ctx.out(`source     ${s.path} (${s.format}): ${s.passages} passages, ${s.skipped} skipped${s.done ? '' : ', unfinished'}`)
          if (append) {
            ctx.out(`append     unfinished, not served: ${append.passages} passages staged from ${append.sources.map((s) => s.path).join(', ')} ` +
              `(the same build resumes it; ambigqa index rollback --store ${store.dir} drops it)`)
          }
          if (check) ctx.out(`verify     ${check.ok ? 'ok' : `${check.problems.length} problems`} (${(check.ms / 1000).toFixed(1)} s)`)
        }
        if (check && !check.ok) throw ERR_STORE_CORRUPT(store.dir, check.problems.join('; '))
      } finally {
        store.close()
      }
    })
}

function annReport(out: (line: string) => void, r: Awaited<ReturnType<typeof buildAnnIndex>>): void {
  const m = r.manifest
  out(r.built
    ? `ANN index of ${m.rows.toLocaleString('en-US')} ${m.model} vectors (HNSW ${m.quantization}, M ${m.connectivity}) built in ${r.seconds.toFixed(1)} s${r.resumedAt > 0 ? ` (resumed at ${r.resumedAt.toLocaleString('en-US')})` : ''}`
    : `ANN index of ${m.rows.toLocaleString('en-US')} ${m.model} vectors is up to date (built ${m.builtAt})`)
  if (r.released.rows > 0) out(`${r.released.rows.toLocaleString('en-US')} ${m.model} vectors released from the store: the ANN rows file is their one copy`)
}
