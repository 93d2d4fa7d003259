// The folder an evaluation run writes and resumes from: made and probed before any work, locked
// to one process, its settings recorded so a resume cannot mix answers made with other ones, its
// JSON Lines appended one line per write, and its final files replaced atomically.
import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { ERR_OUTPUT_UNWRITABLE, ERR_USAGE } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import { writeAtomic } from '../../core/write-atomic.js'
import { releasePidLock, takePidLock } from '../../core/pid-lock.js'

export const PROGRESS_FILE = 'progress.jsonl'
export const PASSAGES_FILE = 'passages.jsonl'
export const SETTINGS_FILE = 'settings.json'
export const LOCK_FILE = '.lock'

/** Creates the output folder and proves it can be written to. */
export function prepareOutDir(outDir: string): void {
  try {
    mkdirSync(outDir, { recursive: true })
    if (!statSync(outDir).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' })
    const probe = join(outDir, `.write-test-${process.pid}`)
    writeFileSync(probe, '')
    unlinkSync(probe)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    const problem = code === 'EEXIST' || code === 'ENOTDIR' ? 'it or a parent is a file, not a folder'
      : code === 'EACCES' || code === 'EPERM' ? 'permission denied'
      : code === 'EROFS' ? 'read-only file system'
      : code ?? (err as Error).message
    throw ERR_OUTPUT_UNWRITABLE.withCause(err, outDir, problem)
  }
}

/** Takes <out>/.lock for this process; refuses when a live process holds it. Returns the release. */
export function lockOutDir(outDir: string): () => void {
  const path = join(outDir, LOCK_FILE)
  takePidLock(path, (pid) => {
    throw ERR_USAGE(`${outDir} is in use by another evaluation (process ${pid})`, 'Wait for it to finish, stop it, or pass another --out')
  })
  return () => releasePidLock(path)
}

/** Records the run's settings, or checks them against the ones the folder's progress was made with. */
export function checkSettings(outDir: string, settings: Record<string, unknown>): void {
  const path = join(outDir, SETTINGS_FILE)
  if (existsSync(path) && existsSync(join(outDir, PROGRESS_FILE))) {
    let previous: unknown
    try {
      previous = JSON.parse(readFileSync(path, 'utf8'))
    } catch {
      previous = undefined
    }
    // Compared key by key, not as text: the order of the keys is no setting.
    const diffs = previous === undefined ? [] : differences(previous, settings)
    if (diffs.length > 0) {
      throw ERR_USAGE(
        `${outDir} holds answers made with other settings (${diffs.slice(0, 5).join('; ')})`,
        'Resume with the same settings, or pass another --out (or delete the folder) to start over',
      )
    }
  }
  writeAtomic(path, `${JSON.stringify(settings, null, 2)}\n`)
}

/** Where two settings objects differ, key by key: "reader.qd: was ..., now ...". */
export function differences(a: unknown, b: unknown, prefix = ''): string[] {
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && !Array.isArray(a) && !Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)])
    return [...keys].flatMap((k) => differences((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], prefix ? `${prefix}.${k}` : k))
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [`${prefix || 'settings'}: was ${JSON.stringify(a)}, now ${JSON.stringify(b)}`]
}

/**
 * Reads a JSON Lines file written by appendLine. A kill can leave a partial last line: it is cut
 * off the file (so the next append starts on a fresh line) and reported in `dropped`.
 */
export function readJsonLines<T>(path: string, log?: Logger): { items: T[]; dropped: number } {
  if (!existsSync(path)) return { items: [], dropped: 0 }
  const buffer = readFileSync(path)
  const end = buffer.lastIndexOf(0x0a) + 1
  let dropped = 0
  if (end < buffer.length) {
    // The tail after the last newline is a line a kill interrupted: drop it.
    const fd = openSync(path, 'r+')
    try {
      ftruncateSync(fd, end)
    } finally {
      closeSync(fd)
    }
    dropped++
    log?.warn({ file: path, bytes: buffer.length - end }, 'dropped a truncated last line (an interrupted run); its question is answered again')
  }
  const items: T[] = []
  const lines = buffer.subarray(0, end).toString('utf8').split('\n')
  lines.forEach((line, i) => {
    if (line.trim() === '') return
    try {
      items.push(JSON.parse(line) as T)
    } catch {
      dropped++
      log?.warn({ file: path, line: i + 1 }, 'skipped a line that is not JSON')
    }
  })
  return { items, dropped }
}

/** Appends lines with one write each (O_APPEND), so a kill loses at most the line being written. */
export class LineAppender {
  private readonly fd: number
  constructor(readonly path: string) {
    this.fd = openSync(path, 'a')
  }
  append(value: unknown): void {
    writeSync(this.fd, `${JSON.stringify(value)}\n`)
  }
  close(): void {
    closeSync(this.fd)
  }
}

