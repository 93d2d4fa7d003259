// Tiny real models for the readers' tests, made by train/: a seq2seq (train/tests/fixture.py)
// trained for seconds on a copy task, exported to ONNX (fp32 and int8), with transformers' own
// generations in reference.json; an extractive reader (train/tests/extractive_fixture.py) with
// PyTorch's best spans. Built once per version of the
// Python code that makes them and cached in .cache/; tests skip, saying why, without the venv
// (fail under AMBIGQA_TEST_REQUIRE_ALL=1). The seq2seq fixture trains on a built-in list, never on
// ../shared, so that it is the same model on a fresh clone as in CI.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { PROJECT_ROOT as ROOT } from '../../core/paths.js'
import { TRAINING_PYTHON as PYTHON, trainingEnvironmentProblem } from '../../core/python-process.js'
import { prerequisite } from './prerequisite.js'

const SOURCES = join(ROOT, 'train', 'ambigqa_train')
const FIXTURES = join(ROOT, 'train', 'tests')
const FIXTURE_SCRIPTS = ['fixture.py', 'extractive_fixture.py']

export type Fixture = { dir: string; skip: false } | { dir: undefined; skip: string }

function version(): string {
  const hash = createHash('sha256')
  for (const name of readdirSync(SOURCES).filter((f) => f.endsWith('.py')).sort()) hash.update(name).update(readFileSync(join(SOURCES, name)))
  for (const name of FIXTURE_SCRIPTS) hash.update(name).update(readFileSync(join(FIXTURES, name)))
  hash.update(readFileSync(join(ROOT, 'train', 'requirements.txt')))
  return hash.digest('hex').slice(0, 16)
}

export const readerFixture = (): Fixture => pythonFixture('fixture', 'reader-fixture')
export const extractiveFixture = (): Fixture => pythonFixture('extractive_fixture', 'extractive-fixture')

/** Why the Python training package cannot do `what` here (false when it can): switched off, or no ready venv. */
export function pythonMissing(what: string): string | false {
  if (process.env.AMBIGQA_TEST_SKIP_PYTHON === '1') return `AMBIGQA_TEST_SKIP_PYTHON=1: ${what} needs the Python training package`
  const venv = trainingEnvironmentProblem()
  return venv === undefined ? false : `${venv}; ${what} needs it: run scripts/train-env`
}

function pythonFixture(module: string, name: string): Fixture {
  const skip = prerequisite(pythonMissing(`making the ${name}`))
  if (skip !== false) return { dir: undefined, skip }
  const dir = join(ROOT, '.cache', `${name}-${version()}`)
  if (existsSync(join(dir, 'reference.json'))) return { dir, skip: false }
  // Test files run in parallel: each builds beside the target and the first rename wins.
  const tmp = `${dir}.tmp-${process.pid}`
  mkdirSync(tmp, { recursive: true })
  const run = spawnSync(PYTHON, [join(FIXTURES, `${module}.py`), '--out', tmp], {
    cwd: ROOT,
    env: { ...process.env, PYTHONPATH: join(ROOT, 'train'), HF_HUB_OFFLINE: '1' },
    encoding: 'utf8',
    timeout: 15 * 60_000,
  })
  if (run.status !== 0) {
    rmSync(tmp, { recursive: true, force: true })
    throw new Error(`making the ${name} failed (exit ${run.status}):\n${run.stderr.slice(-3000)}`)
  }
  try {
    renameSync(tmp, dir)
  } catch {
    rmSync(tmp, { recursive: true, force: true })
  }
  return { dir, skip: false }
}
