import type { Command } from 'commander'
import { buildIndex } from '../../index/build-index.js'
import { basename, dirname, join, resolve } from 'node:path'
import { asqaKnowledgeSource, EVAL_300_STORE, EVAL_ASQA_STORE, eval300Sources } from '../eval/eval-300.js'
import { DEFAULT_SHARED_DATA } from '../../core/paths.js'
import { contextFor } from './context.js'

export function registerBenchCommands(program: Command): void {
  const bench = program.command('bench').description('benchmark corpora')

  bench
    .command('corpus')
    .description('build the eval-300 benchmark store from the shared data (all corpus files + SQuAD paragraphs)')
    .option('--data <dir>', 'the shared data folder', DEFAULT_SHARED_DATA)
    .option('--store <dir>', 'store folder (data/eval-asqa with --asqa-knowledge)')
    .option('--asqa-knowledge', 'add the ASQA dev knowledge snippets of the questions outside eval-300 (the asqa-tune and asqa-second sets); a copy of an encoded eval-300 store gains only these')
    .action(async (opts: { data: string; store?: string; asqaKnowledge?: boolean }, command: Command) => {
      const ctx = contextFor(command, { store: opts.store ?? (opts.asqaKnowledge ? EVAL_ASQA_STORE : EVAL_300_STORE) })
      const sources = eval300Sources(opts.data)
      if (opts.asqaKnowledge) sources.push(asqaKnowledgeSource(opts.data, join(dirname(resolve(ctx.config.store)), `${basename(ctx.config.store)}.asqa-knowledge.jsonl`)))
      const report = await buildIndex({
        store: ctx.config.store,
        sources,
        onError: 'fail',
        batchSize: ctx.config.ingest.batchSize,
        segmentSize: ctx.config.ingest.segmentSize,
        workers: ctx.config.ingest.workers,
        log: ctx.log,
      })
      ctx.out(`${opts.asqaKnowledge ? 'eval-300 + ASQA knowledge' : 'eval-300'} corpus at ${ctx.config.store}: ${report.passages.toLocaleString('en-US')} passages in ${report.seconds.toFixed(1)} s`)
    })
}
