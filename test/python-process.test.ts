// The training venv counts as installed only when scripts/train-env stamped it with the current
// requirements: CI once met a venv whose install had failed halfway (a Python without torch) and
// every test that needed it failed on "No module named 'torch'" instead of naming the cause.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { PROJECT_ROOT } from '../core/paths.js'
import { trainingEnvironmentProblem } from '../core/python-process.js'

test('the training venv: missing, unfinished or stale reads as not ready; stamped with the requirements, ready', () => {
  const root = mkdtempSync(join(tmpdir(), 'venv-'))
  mkdirSync(join(root, 'train'))
  const requirements = readFileSync(join(PROJECT_ROOT, 'train/requirements.txt'))
  writeFileSync(join(root, 'train/requirements.txt'), requirements)
  assert.match(trainingEnvironmentProblem(root) ?? '', /\.venv-train is missing/)

  mkdirSync(join(root, '.venv-train/bin'), { recursive: true })
  writeFileSync(join(root, '.venv-train/bin/python'), '')
  assert.match(trainingEnvironmentProblem(root) ?? '', /not installed for the current train\/requirements\.txt \(an install that did not finish/)

  writeFileSync(join(root, '.venv-train/.requirements-sha256'), 'an older hash\n')
  assert.match(trainingEnvironmentProblem(root) ?? '', /or older requirements/)

  writeFileSync(join(root, '.venv-train/.requirements-sha256'), `${createHash('sha256').update(requirements).digest('hex')}\n`)
  assert.equal(trainingEnvironmentProblem(root), undefined)
})
