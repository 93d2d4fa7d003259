// A lock file holding the owner's pid, for folders one process at a time may write (a store
// being built, an evaluation's output). A lock left by a killed process is taken over.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'

/** The pid of another live process holding `path`, if any. */
export function lockHolder(path: string): number | undefined {
  if (!existsSync(path)) return undefined
  const pid = Number(readFileSync(path, 'utf8').trim())
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid) ? pid : undefined
}

/** Writes this process's pid to `path`, or calls `busy` with the live holder's pid (which throws). */
export function takePidLock(path: string, busy: (pid: number) => never): void {
  const holder = lockHolder(path)
  if (holder !== undefined) busy(holder)
  writeFileSync(path, `${process.pid}\n`)
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
