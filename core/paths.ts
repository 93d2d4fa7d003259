// Where the project and the shared data live, from this module's own location (dist/core/),
// so commands behave the same from any working directory.
import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ERR_DATA_MISSING } from './errors.js'

/** The one project root: every other path of the project is found from it. */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The shared data folder (../shared/data beside the project), unless a command is given --data. */
export const DEFAULT_SHARED_DATA = resolve(PROJECT_ROOT, '..', 'shared', 'data')

/** Where scripts/assets lays out the sentence encoders. */
export const DEFAULT_ENCODERS_DIR = join(PROJECT_ROOT, 'models', 'encoders')

/** Where `scripts/assets lm-base` puts the pretrained decoder's GGUF (too big for the repository). */
export const DEFAULT_LM_BASE_DIR = join(PROJECT_ROOT, 'models', 'base')

/** The trained reader models the demo uses (small int8 exports kept in the repository). */
export const DEFAULT_READER_DIR = join(PROJECT_ROOT, 'assets', 'models')

export function requireSharedFile(dataDir: string, relative: string, what: string): string {
  const path = join(dataDir, relative)
  if (!existsSync(path)) throw ERR_DATA_MISSING(path, what)
  return path
}
