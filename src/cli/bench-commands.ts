import type { Command } from 'commander'
import { buildIndex } from '../../index/build-index.js'
import { EVAL_300_STORE, eval300Sources } from '../eval/eval-300.js'
import { DEFAULT_SHARED_DATA } from '../core/paths.js'
import { contextFor } from './context.js'

export function registerBenchCommands(program: Command): void {
  const bench = program.command('bench').description('benchmark corpora')

  bench
    .command('corpus')
    .description('build the eval-300 benchmark store from the shared data (all corpus files + SQuAD paragraphs)')
    .option('--data <dir>', 'the shared data folder', DEFAULT_SHARED_DATA)
    .option('--store <dir>', 'store folder', EVAL_300_STORE)
    .action(async (opts, command: Command) => {
      const ctx = contextFor(command, { store: opts.store })
      const report = await buildIndex({
        store: ctx.config.store,
        sources: eval300Sources(opts.data),
        onError: 'fail',
        batchSize: ctx.config.ingest.batchSize,
        segmentSize: ctx.config.ingest.segmentSize,
        workers: ctx.config.ingest.workers,
        log: ctx.log,
      })
      ctx.out(`eval-300 corpus at ${ctx.config.store}: ${report.passages.toLocaleString('en-US')} passages in ${report.seconds.toFixed(1)} s`)
    })
}
