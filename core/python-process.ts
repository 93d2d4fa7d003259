// The training package's Python (train/, run in .venv-train, created by scripts/train-env): one
// place that knows where it lives and how it is started, for the CLI (blocking, output shown) and
// for jobs (asynchronous, each output line handed over). Serving never needs Python.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { join } from 'node:path'
import { ERR_INTERNAL, ERR_USAGE } from './errors.js'
import { PROJECT_ROOT } from './paths.js'


export interface PythonCommand { python: string; args: string[]; env: NodeJS.ProcessEnv }

/** The training venv's Python. */
export const TRAINING_PYTHON = join(PROJECT_ROOT, '.venv-train/bin/python')

/**
 * Why the training venv cannot be used, or undefined when it can. A venv is ready only when
 * scripts/train-env finished installing the current train/requirements.txt into it (it writes the
 * requirements' hash last): an install that failed halfway leaves a Python without torch, which
 * must read as "not installed", not as a broken trainer. `root`: the project (tests give another).
 */
export function trainingEnvironmentProblem(root = PROJECT_ROOT): string | undefined {
  const venv = join(root, '.venv-train')
  if (!existsSync(join(venv, 'bin/python'))) return `the training environment ${venv} is missing`
  const wanted = createHash('sha256').update(readFileSync(join(root, 'train/requirements.txt'))).digest('hex')
  let stamp = ''
  try {
    stamp = readFileSync(join(venv, '.requirements-sha256'), 'utf8').trim()
  } catch { /* no stamp: the install never finished */ }
  if (stamp !== wanted) return `the training environment ${venv} is not installed for the current train/requirements.txt (an install that did not finish, or older requirements)`
  return undefined
}

/** `python -m ambigqa_train.<module> ...args` in the training venv; throws when the venv is not ready. */
export function pythonCommand(module: string, args: string[], extraEnv: Record<string, string> = {}): PythonCommand {
  const problem = trainingEnvironmentProblem()
  if (problem !== undefined) throw ERR_USAGE(problem, 'Run scripts/train-env (Python 3.11; about 5 GB installed, once)')
  return { python: TRAINING_PYTHON, args: ['-m', `ambigqa_train.${module}`, ...args], env: { ...process.env, PYTHONPATH: join(PROJECT_ROOT, 'train'), HF_HUB_OFFLINE: '1', ...extraEnv } }
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
