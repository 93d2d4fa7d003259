// The `ambigqa` command line: one program, a subcommand per job, --help on each.
import { Command, CommanderError } from 'commander'
import { isAmbigqaError } from '../errors.js'
import { registerIndexCommands } from './index-commands.js'
import { registerSearchCommand } from './search-command.js'
import { registerAskCommand } from './ask-command.js'
import { registerEvalCommands } from './eval-commands.js'
import { registerBenchCommands } from './bench-commands.js'
import { registerScoreCommand } from './score-command.js'
import { registerServeCommand } from './serve-command.js'
import { registerTrainCommands } from './train-command.js'

export function buildProgram(): Command {
  const program = new Command('ambigqa')
    .description('Open-domain multi-answer question answering over Wikipedia (AmbigQA).')
    .option('--config <file>', 'configuration file (default: ./ambigqa.config.json when present)')
    .option('--log-level <level>', 'fatal | error | warn | info | debug | trace | silent')
    .showHelpAfterError()
  registerIndexCommands(program)
  registerSearchCommand(program)
  registerAskCommand(program)
  registerEvalCommands(program)
  registerBenchCommands(program)
  registerScoreCommand(program)
  registerServeCommand(program)
  registerTrainCommands(program)
  return program
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram().exitOverride()
  try {
    await program.parseAsync(argv)
    // A command that ran a child process (training) reports the child's failure this way.
    return typeof process.exitCode === 'number' ? process.exitCode : 0
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode
    if (isAmbigqaError(err)) {
      process.stderr.write(`ambigqa: ${err.code}: ${err.message}\n`)
      return 1
    }
    process.stderr.write(`ambigqa: AMBIGQA_ERR_INTERNAL: ${(err as Error)?.stack ?? String(err)}\n`)
    return 1
  }
}
