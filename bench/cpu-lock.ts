// A machine-wide lock for heavy benchmark phases, so two long runs on a small machine measure
// themselves and not each other: flock(1) on a file, held by a child shell until we release it
// or this process dies (the shell waits on our pipe; when the pipe closes, it exits and the
// kernel drops the lock), so a crashed benchmark never leaves the lock held.
import { spawn } from 'node:child_process'
import { once } from 'node:events'

/** Waits for the lock on `path`; returns the function that releases it. */
export async function holdCpuLock(path: string, log: (line: string) => void = () => undefined): Promise<() => Promise<void>> {
  const child = spawn('flock', [path, 'sh', '-c', 'echo locked; read _'], { stdio: ['pipe', 'pipe', 'inherit'] })
  const waitingSince = Date.now()
  const notice = setInterval(() => log(`waiting for the CPU lock ${path} (${Math.round((Date.now() - waitingSince) / 1000)} s)`), 60_000)
  try {
    await new Promise<void>((held, fail) => {
      child.stdout.on('data', (chunk: Buffer) => { if (chunk.toString().includes('locked')) held() })
      child.on('error', fail)
      child.on('exit', (code) => fail(new Error(`flock ${path} exited with ${code} before taking the lock`)))
    })
  } finally {
    clearInterval(notice)
  }
  return async () => {
    if (child.exitCode !== null) return
    child.stdin.end()
    await once(child, 'exit')
  }
}
