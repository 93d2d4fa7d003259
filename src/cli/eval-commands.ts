import type { Command } from 'commander'
import { openRetriever } from '../../retriever/open-retriever.js'
import { ERR_USAGE } from '../errors.js'
import { evaluateRetriever, percentile } from '../eval/evaluate-retriever.js'
import { loadIdList, loadQuestions } from '../eval/questions.js'
import { contextFor, parseNumber } from './context.js'

export function registerEvalCommands(program: Command): void {
  const evaluate = program.command('eval').description('evaluate the pipeline and its stages')

  evaluate
    .command('retrieval')
    .description('answer recall@k (DPR) and answer-set coverage@k of the configured retriever')
    .requiredOption('--questions <file>', 'AmbigNQ light JSON, NQ-open TSV or NQ-open JSON Lines')
    .option('--ids <file>', 'evaluate only these question ids (one per line), e.g. splits/eval-300.txt')
    .option('--k <list>', 'cut-offs, comma-separated', '1,5,20,100')
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--retriever <name>', 'bm25-sqlite | dense | hybrid (default: config "retriever")')
    .option('--k1 <k1>', 'BM25 k1', parseNumber('--k1'))
    .option('--b <b>', 'BM25 b', parseNumber('--b'))
    .option('--json', 'print {"recall": {...}, "coverage": {...}, "n": N} (percent)')
    .action(async (opts, command: Command) => {
      const ctx = contextFor(command, { store: opts.store, retriever: opts.retriever, 'bm25.k1': opts.k1, 'bm25.b': opts.b })
      const ks = parseKs(opts.k)
      const questions = loadQuestions(opts.questions, opts.ids ? loadIdList(opts.ids) : undefined)
      const retriever = await openRetriever(ctx.config)
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
}

export function parseKs(list: string): number[] {
  const ks = list.split(',').map((part) => Number(part.trim()))
  if (ks.length === 0 || ks.some((k) => !Number.isInteger(k) || k < 1 || k > 10_000)) {
    throw ERR_USAGE(`--k '${list}' is not a list of positive integers`, 'Use e.g. --k 1,5,20,100')
  }
  return ks
}
