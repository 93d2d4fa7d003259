// A lock file holding the owner's pid, for folders one writer at a time may write (a store
// being built, an evaluation's output). A lock left by a killed process is taken over.
// The file appears whole or not at all (written aside, then hard-linked into place, which fails
// when it exists), so two processes starting together cannot both take it. Within one process
// the pid in the file cannot tell two writers apart (two indexing jobs of one server), so the
// paths this process holds are remembered here as well.
// Not guarded: two processes taking over the same stale lock at the same instant.
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'

const held = new Set<string>()

/** The pid of a live writer holding `path` (this process's own pid when it holds it), if any. */
export function lockHolder(path: string): number | undefined {
  const abs = resolve(path)
  if (held.has(abs)) return process.pid
  const pid = readPid(abs)
  return pid !== undefined && pid !== process.pid && processAlive(pid) ? pid : undefined
}

/** Takes `path` for this process, or calls `busy` with the live holder's pid (which throws). */
export function takePidLock(path: string, busy: (pid: number) => never): void {
  const abs = resolve(path)
  if (held.has(abs)) busy(process.pid)
  const aside = `${abs}.${process.pid}.tmp`
  writeFileSync(aside, `${process.pid}\n`)
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(aside, abs)
        held.add(abs)
        return
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      }
      const holder = lockHolder(abs)
      if (holder !== undefined) busy(holder)
      // Left by a killed process (or by this one before a crash it survived): take it over.
      rmSync(abs, { force: true })
    }
    busy(readPid(abs) ?? 0)
  } finally {
    rmSync(aside, { force: true })
  }
}

/** Gives `path` back, when this process holds it. */
export function releasePidLock(path: string): void {
  const abs = resolve(path)
  if (!held.delete(abs)) return
  if (readPid(abs) === process.pid) rmSync(abs, { force: true })
}

function readPid(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim())
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
