// The package answers with its default configuration: every file of every model folder that
// configuration loads is in what `npm pack` would publish. The folders are read from the
// configuration's defaults (the answer reader its reader.kind names, the QD model, the
// calibration, the encoder its question-only model was fit on and the verifier it stacks, the dense retriever's encoder,
// a reranker when one is set), so a new default model cannot be forgotten in package.json `files`.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { test } from 'node:test'
import { defaults } from '../core/config.js'
import type { BaseRetrieverKind } from '../core/kinds.js'
import { DEFAULT_LM_BASE_DIR, PROJECT_ROOT } from '../core/paths.js'
import { isLmFolder } from '../reader/generation/llama-lm.js'
import { CALIBRATION_FILE } from '../reader/answer-set-decider.js'
import { PAGE_DIR } from '../src/server/ask-page.js'
import { prerequisite } from './helpers/prerequisite.js'

/** The model folders the default configuration opens, each with why. */
function defaultModelFolders(): { why: string; dir: string }[] {
  const { reader, dense, reranker, hybrid } = defaults
  const folders = [
    { why: `reader.${reader.kind} (reader.kind)`, dir: reader[reader.kind] },
    { why: 'reader.qd', dir: reader.qd },
  ]
  // A decoder-only QD folder loads its base from models/base (scripts/assets lm-base).
  if (isLmFolder(reader.qd)) folders.push({ why: 'reader.qd\'s base model', dir: DEFAULT_LM_BASE_DIR })
  if (reader.calibration !== '') {
    folders.push({ why: 'reader.calibration', dir: reader.calibration })
    const calibration = JSON.parse(readFileSync(join(reader.calibration, CALIBRATION_FILE), 'utf8')) as { questionOnly: { encoder: string }; verifier?: unknown }
    folders.push({ why: 'the calibration\'s question encoder', dir: join(dense.modelsDir, calibration.questionOnly.encoder) })
    if (calibration.verifier) folders.push({ why: 'reader.verifier (the calibration stacks it)', dir: reader.verifier })
  }
  const retrievers: readonly BaseRetrieverKind[] = defaults.retriever === 'hybrid' ? hybrid.retrievers : [defaults.retriever]
  if (retrievers.some((r) => r === 'dense' || r === 'dense-es')) folders.push({ why: 'dense.model', dir: join(dense.modelsDir, dense.model) })
  if (reranker.model !== '') folders.push({ why: 'reranker.model', dir: reranker.model })
  return folders
}

let listing: Set<string> | undefined
/** The files `npm pack` would publish, listed once for the tests here (npm reads every file it lists, the models' too). */
function packed(): Set<string> {
  if (!listing) {
    // --ignore-scripts: listing the files must not rebuild dist/ under the tests that run from it.
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: PROJECT_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 })
    listing = new Set((JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path))
  }
  return listing
}

const folders = defaultModelFolders()
const absent = folders.find((f) => !existsSync(f.dir))
const skip = prerequisite(absent ? `needs ${relative(PROJECT_ROOT, absent.dir)} (${absent.why}): run scripts/assets for an encoder or lm-base` : false)

test('npm pack lists every file of every model folder the default configuration loads', { skip }, () => {
  const wanted = folders.flatMap(({ why, dir }) => {
    const inside = relative(PROJECT_ROOT, dir)
    assert.ok(!inside.startsWith('..'), `${why} (${dir}) lies outside the project: a package cannot ship it`)
    // Dotfiles (scripts/assets' .sha256) are bookkeeping, not what the model loads; folders are made
    // where the package runs (models/base/merged: each install merges its own adapter once).
    const files = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isFile() && !e.name.startsWith('.')).map((e) => join(inside, e.name).split(sep).join('/'))
    assert.ok(files.length > 0, `${why}: ${dir} holds no files`)
    return files
  })
  assert.ok(wanted.length > 0)
  const listed = packed()
  assert.ok(listed.size > 0, 'npm pack listed no files')
  const missing = wanted.filter((f) => !listed.has(f))
  assert.deepEqual(missing, [], `package.json "files" leaves out model files the default configuration loads:\n${missing.join('\n')}`)
})

test('npm pack lists every file of the ask page (assets/page), which `ambigqa serve` reads at start', () => {
  const page = readdirSync(PAGE_DIR).map((name) => relative(PROJECT_ROOT, join(PAGE_DIR, name)).split(sep).join('/'))
  assert.ok(page.includes('assets/page/index.html'), `no index.html in ${PAGE_DIR}`)
  const listed = packed()
  assert.deepEqual(page.filter((f) => !listed.has(f)), [], 'package.json "files" leaves out the page')
})
