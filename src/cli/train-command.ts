// `ambigqa data build` and `ambigqa train ...`: thin wrappers over the Python package in train/
// (run in .venv-train, created by scripts/train-env). Serving never needs Python.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Command } from 'commander'
import { ERR_USAGE } from '../errors.js'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')

/** Run `python -m ambigqa_train.<module> ...args` in the training venv; returns its exit code. */
export function runPython(module: string, args: string[]): number {
  const python = join(ROOT, '.venv-train/bin/python')
  if (!existsSync(python)) {
    throw ERR_USAGE(`the training environment ${python} is missing`, 'Run scripts/train-env first (about 3 GB, once)')
  }
  const env = { ...process.env, PYTHONPATH: join(ROOT, 'train'), HF_HUB_OFFLINE: '1' }
  const res = spawnSync(python, ['-m', `ambigqa_train.${module}`, ...args], { stdio: 'inherit', env })
  return res.status ?? 1
}

function exitWith(code: number): void {
  if (code !== 0) process.exitCode = code
}

export function registerTrainCommands(program: Command): void {
  const data = program.command('data').description('training data (Python, .venv-train)')
  data
    .command('build')
    .description('build the training sets (JSON Lines) from ../shared/data, never from an eval-300 question')
    .option('--data <dir>', 'shared data folder', '../shared/data')
    .option('--out <dir>', 'output folder', 'data/train')
    .option('--seed <n>', 'seed', '13')
    .action((o: { data: string; out: string; seed: string }) => {
      exitWith(runPython('data', ['build', '--data', o.data, '--out', o.out, '--seed', o.seed]))
    })
  const train = program.command('train').description('train and export models (Python, .venv-train)')
  for (const [name, module] of [['seq2seq', 'train_seq2seq'], ['reranker', 'train_reranker']] as const) {
    train
      .command(name)
      .description(`train the ${name} from a config file (train/configs/*.json); resumes from its checkpoint`)
      .requiredOption('--config <file>', 'config file')
      .option('--seed <n>', 'seed', '0')
      .action((o: { config: string; seed: string }) => {
        exitWith(runPython(module, ['--config', o.config, '--seed', o.seed]))
      })
  }
  train
    .command('export <kind> <checkpoint> <out>')
    .description('export a checkpoint to ONNX (kind: seq2seq | cross-encoder)')
    .action((kind: string, checkpoint: string, out: string) => {
      exitWith(runPython('export_onnx', [kind, checkpoint, out]))
    })
}
