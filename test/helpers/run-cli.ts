import { spawn, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'

export const CLI = resolve(process.cwd(), 'bin', 'ambigqa.js')

export interface CliResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export function runCli(args: string[], options: { env?: NodeJS.ProcessEnv; onSpawn?: (child: ChildProcess) => void } = {}): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, AMBIGQA_LOG_LEVEL: 'warn', ...options.env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('error', fail)
    child.on('close', (code, signal) => done({ code, signal, stdout, stderr }))
    options.onSpawn?.(child)
  })
}
