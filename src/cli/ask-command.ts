import type { Command } from 'commander'
import { checkCount, checkQuestion } from '../pipeline/ask-arguments.js'
import { openPipeline } from '../pipeline/open-pipeline.js'
import { contextFor, parseNumber } from './context.js'
import { RETRIEVER_CHOICES } from '../../core/kinds.js'

export function registerAskCommand(program: Command): void {
  program
    .command('ask')
    .description('answer a question: every plausible answer, its disambiguated question and its evidence')
    .argument('<question>', 'the question')
    .option('--retrieve <n>', 'passages retrieved (default: config reader.retrieve)', parseNumber('--retrieve'))
    .option('--read <n>', 'passages the reader reads (default: config reader.read)', parseNumber('--read'))
    .option('--store <dir>', 'store folder (default: config "store")')
    .option('--retriever <name>', RETRIEVER_CHOICES)
    .option('--json', 'print JSON')
    .action(async (asked: string, opts, command: Command) => {
      const ctx = contextFor(command, { store: opts.store, retriever: opts.retriever })
      // The server's checks and limits, before any model loads.
      const question = checkQuestion(asked, ctx.config.server.maxQuestionLength)
      const retrieve = checkCount('--retrieve', opts.retrieve ?? ctx.config.reader.retrieve, ctx.config.server.maxK, 'server.maxK')
      const read = checkCount('--read', opts.read ?? ctx.config.reader.read, ctx.config.server.maxK, 'server.maxK')
      const pipeline = await openPipeline(ctx.config, ctx.log)
      try {
        const result = await pipeline.ask(question, { retrieve, read })
        if (opts.json) {
          const { passages: _retrieved, ...rest } = result
          ctx.out(JSON.stringify(rest))
          return
        }
        const t = result.timings
        ctx.out(`${question}  (${result.ambiguous ? 'ambiguous' : 'one answer'}${result.ambiguity !== undefined ? ` P=${result.ambiguity.toFixed(2)}` : ''}; ${t.totalMs.toFixed(0)} ms: retrieval ${t.retrievalMs.toFixed(0)}, reading ${(t.readMs ?? 0).toFixed(0)}, deciding ${(t.decideMs ?? 0).toFixed(0)}, disambiguation ${(t.disambiguateMs ?? 0).toFixed(0)})`)
        if (result.answers.length === 0) ctx.out('  no answer found in the passages read')
        for (const a of result.answers) {
          ctx.out(`\n- ${a.answer}  (confidence ${a.confidence.toFixed(2)})\n  ${a.question}${result.ambiguous && !a.rewritten ? '  (not rewritten: no rewrite passed the checks)' : ''}`)
          for (const p of a.evidence.slice(0, 2)) ctx.out(`  [${p.id}] ${p.title}: ${p.text.length > 160 ? `${p.text.slice(0, 160)}…` : p.text}`)
        }
      } finally {
        await pipeline.close()
      }
    })
}
