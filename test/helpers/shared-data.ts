// Tests read the real shared data beside the project and skip, saying why, when it is absent
// (fail under AMBIGQA_TEST_REQUIRE_ALL=1: helpers/prerequisite.ts).
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { prerequisite } from './prerequisite.js'

export const SHARED_DATA = resolve(process.cwd(), '..', 'shared', 'data')

/** The path of a shared file, or a skip reason for node:test when it is missing. */
export function sharedFile(relative: string): { path: string; skip: false } | { path: string; skip: string } {
  const path = join(SHARED_DATA, relative)
  const skip = prerequisite(existsSync(path) ? false : `needs ${path} (the shared data folder beside the project), which is absent`)
  return skip === false ? { path, skip: false } : { path, skip }
}
