// Who may start a job and what it may read. Jobs read the server's files, so they are off unless
// the operator turns them on, then need the operator's token and may read only under the data
// roots: the path as given and the file it finally names (symbolic links followed) both.
import { createHash, timingSafeEqual } from 'node:crypto'
import { realpathSync } from 'node:fs'
import { isAbsolute, relative, resolve, sep } from 'node:path'
import { ERR_JOBS_DISABLED, ERR_PATH_NOT_ALLOWED, ERR_SOURCE_NOT_FOUND, ERR_UNAUTHORIZED } from '../../core/errors.js'

export interface JobAccess {
  enabled: boolean
  authToken: string
  dataRoots: readonly string[]
}

/** Throws unless jobs are on and `authorization` is 'Bearer <token>'. */
export function authorizeJob(field: string, access: JobAccess, authorization: string | undefined): void {
  if (!access.enabled) throw ERR_JOBS_DISABLED(field)
  const given = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1]
  // Hashes first: equal lengths for timingSafeEqual, and no early exit that times the prefix.
  const digest = (s: string) => createHash('sha256').update(s).digest()
  if (!given || access.authToken === '' || !timingSafeEqual(digest(given), digest(access.authToken))) throw ERR_UNAUTHORIZED(field)
}

/**
 * The real path of `path` when it lies under a data root; a relative path is taken from the
 * first root. What is outside is refused before the file system is asked, so the answer does
 * not tell whether it exists.
 */
export function resolveDataPath(path: string, access: JobAccess): string {
  if (access.dataRoots.length === 0) throw ERR_PATH_NOT_ALLOWED(path, 'the server has no data roots')
  if (path.split(/[\\/]/).includes('..')) throw ERR_PATH_NOT_ALLOWED(path, "it contains '..'")
  const roots = access.dataRoots.map((r) => resolve(r))
  const wanted = isAbsolute(path) ? resolve(path) : resolve(roots[0]!, path)
  const root = roots.find((r) => inside(wanted, r))
  if (root === undefined) throw ERR_PATH_NOT_ALLOWED(path, 'it is outside the data roots')
  let real: string
  try {
    real = realpathSync(wanted)
  } catch {
    throw ERR_SOURCE_NOT_FOUND(path)
  }
  if (!inside(real, realpathSync(root))) throw ERR_PATH_NOT_ALLOWED(path, 'a symbolic link leads outside the data roots')
  return real
}

function inside(path: string, root: string): boolean {
  const rel = relative(root, path)
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel))
}
