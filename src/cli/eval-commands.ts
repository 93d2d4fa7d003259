import type { Command } from 'commander'
import { openRetriever } from '../../retriever/open-retriever.js'
import { ERR_USAGE } from '../../core/errors.js'
import { evaluateAmbigNq } from '../eval/eval-ambignq.js'
import { evaluateRetriever, percentile } from '../eval/evaluate-retriever.js'
import { loadIdList, loadQuestions } from '../eval/questions.js'
import { openPipeline } from '../pipeline/open-pipeline.js'
import { contextFor, parseNumber } from './context.js'
import { RETRIEVER_CHOICES } from '../../core/kinds.js'

export function registerEvalCommands(program: Command): void {
  const evaluate = program.command('eval').description('evaluate the pipeline and its stages')

  evaluate
    .command('retrieval')
    .description('answer recall@k (DPR) and answer-set coverage@k of the configured retriever')
    .requiredOption('--questions <file>', 'AmbigNQ light JSON, NQ-open TSV or NQ-open JSON Lines')
    .option('--ids <file>', 'evaluate only these question ids (one per line), e.g. splits/eval-300.txt')
    .option('--k <list>', 'cut-offs, comma-separated', '1,5,20,100')
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--retriever <name>', RETRIEVER_CHOICES)
    .option('--k1 <k1>', 'BM25 k1', parseNumber('--k1'))
    .option('--b <b>', 'BM25 b', parseNumber('--b'))
    .option('--json', 'print {"recall": {...}, "coverage": {...}, "n": N} (percent)')
    .action(async (opts, command: Command) => {
      const ctx = contextFor(command, { store: opts.store, retriever: opts.retriever, 'bm25.k1': opts.k1, 'bm25.b': opts.b })
      const ks = parseKs(opts.k)
      const questions = loadQuestions(opts.questions, opts.ids ? loadIdList(opts.ids) : undefined)
      const retriever = await openRetriever(ctx.config, ctx.log)
      try {
        const { metrics, latenciesMs } = await evaluateRetriever(retriever, questions, ks, ctx.log)
        if (opts.json) {
          ctx.out(JSON.stringify(metrics))
          return
        }
        ctx.out(`${metrics.n} questions, ${retriever.name} on ${ctx.config.store}`)
        ctx.out(`k        ${ks.map((k) => String(k).padStart(7)).join('')}`)
        ctx.out(`recall   ${ks.map((k) => metrics.recall[k]!.toFixed(1).padStart(7)).join('')}`)
        ctx.out(`coverage ${ks.map((k) => metrics.coverage[k]!.toFixed(1).padStart(7)).join('')}`)
        ctx.out(`latency  p50 ${percentile(latenciesMs, 50).toFixed(2)} ms, p99 ${percentile(latenciesMs, 99).toFixed(2)} ms`)
      } finally {
        await retriever.close()
      }
    })

  evaluate
    .command('ambignq')
    .description('answer AmbigNQ questions with the whole pipeline and score them with the official metric (resumable)')
    .requiredOption('--data <file>', 'AmbigNQ JSON (e.g. ../shared/data/ambignq/dev_light.json)')
    .option('--ids <file>', 'evaluate only these question ids (one per line), e.g. splits/eval-300.txt')
    .requiredOption('--out <dir>', 'output folder: progress.jsonl (resumable), predictions.json, predictions-answers.json, metrics.json, report.html')
    .option('--retrieve <n>', 'passages retrieved (default: config reader.retrieve)', parseNumber('--retrieve'))
    .option('--read <n>', 'passages the reader reads (default: config reader.read)', parseNumber('--read'))
    .option('--concurrency <n>', 'questions in flight (default: config reader.maxBatch)', parseNumber('--concurrency'))
    .option('--limit <n>', 'evaluate only the first n questions', parseNumber('--limit'))
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--retriever <name>', RETRIEVER_CHOICES)
    .option('--json', 'print metrics.json')
    .option('--answers-only', 'no rewritten questions (faster: F1 answer as always; BLEU and EDIT-F1 then score the prompt as asked)')
    .option('--answers-from <run>', 'take each answer set from that finished run (made with these settings, question disambiguation\'s aside) and only rewrite: two QD models compared on the same answers')
    .action(async (opts, command: Command) => {
      const ctx = contextFor(command, { store: opts.store, retriever: opts.retriever })
      const retrieve = positiveInt('--retrieve', opts.retrieve ?? ctx.config.reader.retrieve, 10_000)
      const read = positiveInt('--read', opts.read ?? ctx.config.reader.read, 1_000)
      if (read > retrieve) throw ERR_USAGE(`--read ${read} is more than --retrieve ${retrieve}`, 'Read at most the passages retrieved')
      const concurrency = positiveInt('--concurrency', opts.concurrency ?? ctx.config.reader.maxBatch, 1_024)
      const limit = opts.limit === undefined ? undefined : positiveInt('--limit', opts.limit, Number.MAX_SAFE_INTEGER)
      const { metrics, files } = await evaluateAmbigNq(
        { dataPath: opts.data, ...(opts.ids ? { idsPath: opts.ids } : {}), outDir: opts.out, retrieve, read, concurrency, ...(limit ? { limit } : {}), ...(opts.answersOnly ? { disambiguate: false } : {}), ...(opts.answersFrom ? { answersFrom: opts.answersFrom } : {}) },
        { config: ctx.config, log: ctx.log, openPipeline: () => openPipeline(ctx.config, ctx.log) },
      )
      if (opts.json) {
        ctx.out(JSON.stringify(metrics))
        return
      }
      const f = (x: number | null | undefined) => (x === null || x === undefined || Number.isNaN(x) ? '-' : (x * 100).toFixed(1))
      const m = metrics
      ctx.out(`${m.n_all} questions (${m.n_multi} multi; ${m.run.resumed} resumed, ${m.run.answeredNow} answered now)`)
      ctx.out(`F1 answer   all ${f(m['F1 answer'].all)}  multi ${f(m['F1 answer'].multi)}`)
      ctx.out(`F1 BLEU-4   multi ${f(m['F1 bleu4']?.multi)}   F1 EDIT-F1 multi ${f(m['F1 edit-f1']?.multi)}`)
      ctx.out(`latency     p50 ${m.timings.total.p50Ms.toFixed(0)} ms, p99 ${m.timings.total.p99Ms.toFixed(0)} ms`)
      ctx.out(`wrote ${files.predictions}, ${files.answers}, ${files.metrics}, ${files.report}`)
    })
}

function positiveInt(name: string, value: number, max: number): number {
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw ERR_USAGE(`${name} must be a whole number from 1 to ${max}, got ${value}`, `Pass e.g. ${name} 10`)
  }
  return value
}

export function parseKs(list: string): number[] {
  const ks = list.split(',').map((part) => Number(part.trim()))
  if (ks.length === 0 || ks.some((k) => !Number.isInteger(k) || k < 1 || k > 10_000)) {
    throw ERR_USAGE(`--k '${list}' is not a list of positive integers`, 'Use e.g. --k 1,5,20,100')
  }
  return ks
}
