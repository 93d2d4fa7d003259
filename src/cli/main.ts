// The `ambigqa` command line: one program, a subcommand per job, --help on each.
import { Command, CommanderError } from 'commander'
import { isSqliteCorruption } from '../../retriever/passage-store.js'
import { loadConfig } from '../../core/config.js'
import { DEVICES } from '../../core/kinds.js'
import { ERR_STORE_CORRUPT, isAmbigqaError } from '../../core/errors.js'
import { registerIndexCommands } from './index-commands.js'
import { registerSearchCommand } from './search-command.js'
import { registerAskCommand } from './ask-command.js'
import { registerEvalCommands } from './eval-commands.js'
import { registerErrorsCommand } from './errors-command.js'
import { registerBenchCommands } from './bench-commands.js'
import { registerScoreCommand } from './score-command.js'
import { registerServeCommand } from './serve-command.js'
import { registerTrainCommands } from './train-command.js'

export function buildProgram(): Command {
  const program = new Command('ambigqa')
    .description('Open-domain multi-answer question answering over Wikipedia (AmbigQA).')
    .option('--config <file>', 'configuration file (default: ./ambigqa.config.json when present)')
    .option('--log-level <level>', 'fatal | error | warn | info | debug | trace | silent')
    .option('--device <device>', `where the ONNX models run: ${DEVICES.join(' | ')} (sets reader.device, reranker.device and dense.device; default: the config's, cpu)`)
    .showHelpAfterError()
  registerIndexCommands(program)
  registerSearchCommand(program)
  registerAskCommand(program)
  registerEvalCommands(program)
  registerBenchCommands(program)
  registerScoreCommand(program)
  registerServeCommand(program)
  registerTrainCommands(program)
  registerErrorsCommand(program)
  return program
}

export async function main(argv: string[]): Promise<number> {
  // `ambigqa search ... | head`: the reader has gone, so stop quietly, as tools killed by
  // SIGPIPE do, and with 0: nothing failed that the user asked for.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0)
    throw err
  })
  const program = buildProgram().exitOverride()
  try {
    await program.parseAsync(argv)
    // A command that ran a child process (training) reports the child's failure this way.
    return typeof process.exitCode === 'number' ? process.exitCode : 0
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode
    // A damaged store file met after it opened (a corrupt page read by a search).
    if (isSqliteCorruption(err)) err = ERR_STORE_CORRUPT.withCause(err, storeOf(argv), (err as Error).message)
    if (isAmbigqaError(err)) {
      process.stderr.write(`ambigqa: ${err.code}: ${err.message}\n`)
      return 1
    }
    process.stderr.write(`ambigqa: AMBIGQA_ERR_INTERNAL: ${(err as Error)?.stack ?? String(err)}\n`)
    return 1
  }
}

/** The store a command line names (--store, else the configuration), for errors about it. */
function storeOf(argv: string[]): string {
  const flag = argv.indexOf('--store')
  if (flag >= 0 && argv[flag + 1]) return argv[flag + 1]!
  try {
    const file = argv.indexOf('--config')
    return loadConfig(file >= 0 && argv[file + 1] ? { file: argv[file + 1]! } : {}).store
  } catch {
    return 'the configured store'
  }
}
