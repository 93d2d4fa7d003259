// `ambigqa errors`: the error catalogue (core/errors.ts) as a list, or as the page
// docs/errors.md, so that page is made from the catalogue and never drifts from it.
import type { Command } from 'commander'
import { catalogue } from '../../core/errors.js'

const byCode = () => [...catalogue].sort((a, b) => a.code.localeCompare(b.code))

/** docs/errors.md: every code with its HTTP status, meaning and fix. */
export function errorsMarkdown(): string {
  const lines = [
    '# Errors',
    '',
    'Every error the server and the CLI give has a code `AMBIGQA_ERR_*`, a message that names the',
    'problem and the fix in particular, and an HTTP status (the server answers with it; the CLI',
    'prints `ambigqa: <code>: <message>` and exits 1). This page is made from the one catalogue,',
    '`core/errors.ts`, by `ambigqa errors --markdown > docs/errors.md`; `test/errors.test.ts`',
    'fails when it is not current.',
    '',
    '| code | HTTP |',
    '|---|---|',
    ...byCode().map((e) => `| [\`${e.code}\`](#${e.code.toLowerCase()}) | ${e.statusCode} |`),
  ]
  for (const e of byCode()) lines.push('', `## ${e.code}`, '', `HTTP ${e.statusCode}. ${e.help.meaning}`, '', `**Fix:** ${e.help.fix}`)
  return `${lines.join('\n')}\n`
}

export function registerErrorsCommand(program: Command): void {
  program
    .command('errors')
    .description('list every error code with its meaning and fix')
    .option('--markdown', 'print the page docs/errors.md')
    .action((opts: { markdown?: boolean }) => {
      if (opts.markdown) process.stdout.write(errorsMarkdown())
      else for (const e of byCode()) process.stdout.write(`${e.code} (${e.statusCode}): ${e.help.meaning} Fix: ${e.help.fix}\n`)
    })
}
