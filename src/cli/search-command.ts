import type { Command } from 'commander'
import { openRetriever } from '../../retriever/open-retriever.js'
import { checkCount, checkQuestion } from '../pipeline/ask-arguments.js'
import { defaults } from '../../core/config.js'
import { contextFor, parseNumber } from './context.js'
import { RETRIEVER_CHOICES } from '../../core/kinds.js'

export function registerSearchCommand(program: Command): void {
  program
    .command('search')
    .description('retrieve the passages that best match a question')
    .argument('<question>', 'the question')
    .option('-k, --k <n>', 'number of passages', parseNumber('--k'), 5)
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--retriever <name>', RETRIEVER_CHOICES)
    .option('--k1 <k1>', `BM25 k1 (default ${defaults.bm25.k1})`, parseNumber('--k1'))
    .option('--b <b>', `BM25 b (default ${defaults.bm25.b})`, parseNumber('--b'))
    .option('--json', 'print JSON')
    .action(async (asked: string, opts, command: Command) => {
      const ctx = contextFor(command, { store: opts.store, retriever: opts.retriever, 'bm25.k1': opts.k1, 'bm25.b': opts.b })
      const question = checkQuestion(asked, ctx.config.server.maxQuestionLength)
      const k = checkCount('--k', opts.k, ctx.config.server.maxK, 'server.maxK')
      const retriever = await openRetriever(ctx.config, ctx.log)
      try {
        const started = performance.now()
        const hits = await retriever.search(question, k)
        const ms = performance.now() - started
        if (opts.json) {
          ctx.out(JSON.stringify({ question, ms, hits }))
          return
        }
        ctx.out(`${hits.length} passages for "${question}" (${retriever.name}, ${ms.toFixed(1)} ms)`)
        hits.forEach((hit, i) => {
          const text = hit.text.length > 300 ? `${hit.text.slice(0, 300)}…` : hit.text
          ctx.out(`\n${i + 1}. [${hit.id}] ${hit.title}  (score ${hit.score.toFixed(3)})\n   ${text}`)
        })
      } finally {
        await retriever.close()
      }
    })
}
