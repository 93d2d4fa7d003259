import { spawn, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'

export const CLI = resolve(process.cwd(), 'bin', 'ambigqa.js')

export interface CliResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** Runs the CLI with BM25 over SQLite unless `env` says otherwise: the CLI tests' stores are not
 * encoded for the default dense retriever (test/default-reader.test.ts covers that default). */
export function runCli(args: string[], options: { env?: NodeJS.ProcessEnv; onSpawn?: (child: ChildProcess) => void } = {}): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, AMBIGQA_LOG_LEVEL: 'warn', AMBIGQA_RETRIEVER: 'bm25-sqlite', ...options.env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('error', fail)
    child.on('close', (code, signal) => done({ code, signal, stdout, stderr }))
    options.onSpawn?.(child)
  })
}

/** Runs the CLI and SIGKILLs it the moment its stderr first holds `marker` (a log line saying the
 * point to die at has come, e.g. a checkpoint saved). */
export function runCliKilledAt(args: string[], marker: string, env?: NodeJS.ProcessEnv): Promise<CliResult> {
  return runCli(args, {
    ...(env ? { env } : {}),
    onSpawn: (child) => {
      let seen = ''
      child.stderr!.on('data', (chunk) => {
        seen += chunk
        if (seen.includes(marker)) child.kill('SIGKILL')
      })
    },
  })
}
