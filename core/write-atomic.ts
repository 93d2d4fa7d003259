// A file replaced whole or not at all: written beside its name, then renamed over it, so a
// reader (or a run killed mid-write) never sees half of one.
import { renameSync, unlinkSync, writeFileSync } from 'node:fs'
import { ERR_OUTPUT_UNWRITABLE } from './errors.js'

export function writeAtomic(path: string, content: string | Uint8Array): void {
  const tmp = `${path}.tmp-${process.pid}`
  try {
    writeFileSync(tmp, content)
    renameSync(tmp, path)
  } catch (err) {
    try { unlinkSync(tmp) } catch { /* never written */ }
    throw ERR_OUTPUT_UNWRITABLE.withCause(err, path, (err as NodeJS.ErrnoException).code ?? (err as Error).message)
  }
}
