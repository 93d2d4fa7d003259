// The training package's Python (train/, run in .venv-train, created by scripts/train-env): one
// place that knows where it lives and how it is started, for the CLI (blocking, output shown) and
// for jobs (asynchronous, each output line handed over). Serving never needs Python.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ERR_INTERNAL, ERR_USAGE } from '../core/errors.js'

/** The project root (this file is compiled to dist/src/training/). */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')

export interface PythonCommand { python: string; args: string[]; env: NodeJS.ProcessEnv }

/** `python -m ambigqa_train.<module> ...args` in the training venv; throws when the venv is missing. */
export function pythonCommand(module: string, args: string[], extraEnv: Record<string, string> = {}): PythonCommand {
  const python = join(PROJECT_ROOT, '.venv-train/bin/python')
  if (!existsSync(python)) {
    throw ERR_USAGE(`the training environment ${python} is missing`, 'Run scripts/train-env first (Python 3.11; about 5 GB installed, once)')
  }
  return { python, args: ['-m', `ambigqa_train.${module}`, ...args], env: { ...process.env, PYTHONPATH: join(PROJECT_ROOT, 'train'), HF_HUB_OFFLINE: '1', ...extraEnv } }
}

/**
 * Runs the module, each line of its standard output given to `onLine`, its standard error to
 * `onError`; resolves when it exits with 0. An abort kills it (SIGTERM): every step it takes is
 * resumable, so the next start goes on from there.
 */
export async function runPythonLines(module: string, args: string[], onLine: (line: string) => void, options: { signal?: AbortSignal; env?: Record<string, string>; onError?: (line: string) => void } = {}): Promise<void> {
  const command = pythonCommand(module, args, options.env)
  const child = spawn(command.python, command.args, { env: command.env, stdio: ['ignore', 'pipe', 'pipe'], ...(options.signal ? { signal: options.signal } : {}) })
  createInterface({ input: child.stdout }).on('line', onLine)
  createInterface({ input: child.stderr }).on('line', (line) => options.onError?.(line))
  const code = await new Promise<number | null>((done, fail) => {
    child.once('error', fail)
    child.once('close', (status) => done(status))
  })
  if (code !== 0) throw ERR_INTERNAL(`python -m ambigqa_train.${module} exited with ${code ?? 'a signal'}`)
}
