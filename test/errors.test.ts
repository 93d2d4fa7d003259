import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import test from 'node:test'
import { errorsMarkdown } from '../src/cli/errors-command.js'
import { AmbigqaError, catalogue, ERR_SOURCE_MALFORMED, ERR_STORE_NOT_FOUND } from '../core/errors.js'
import { PROJECT_ROOT } from '../core/paths.js'

test('every error code is unique and prefixed AMBIGQA_ERR_', () => {
  const codes = catalogue.map((factory) => factory.code)
  assert.equal(new Set(codes).size, codes.length)
  for (const code of codes) assert.match(code, /^AMBIGQA_ERR_[A-Z_]+$/)
})

test('errors carry their code, status, a message naming the problem and the fix, and a cause', () => {
  const err = ERR_SOURCE_MALFORMED('/x/psgs.tsv', 'line 7', 'expected 3 fields')
  assert.ok(err instanceof AmbigqaError)
  assert.equal(err.code, 'AMBIGQA_ERR_SOURCE_MALFORMED')
  assert.equal(err.statusCode, 400)
  assert.match(err.message, /\/x\/psgs\.tsv, line 7: expected 3 fields/)
  assert.match(err.message, /--on-error skip/)
  const cause = new Error('disk')
  const withCause = ERR_STORE_NOT_FOUND.withCause(cause, '/s')
  assert.equal(withCause.cause, cause)
  assert.match(withCause.message, /ambigqa index build/)
})

test('every error of core/errors.ts is in the catalogue, with a meaning and a fix', async () => {
  const factories = Object.entries(await import('../core/errors.js')).filter(([name]) => name.startsWith('ERR_'))
  assert.equal(factories.length, catalogue.length, 'an ERR_* export is missing from the catalogue')
  for (const [name, factory] of factories) {
    assert.ok(catalogue.includes(factory as (typeof catalogue)[number]), `${name} is not in the catalogue`)
    const { meaning, fix } = (factory as (typeof catalogue)[number]).help
    assert.ok(meaning.length > 10 && fix.length > 10, `${name} needs a meaning and a fix`)
  }
})

test('docs/errors.md is the catalogue as it is now (`ambigqa errors --markdown > docs/errors.md` remakes it)', () => {
  const page = readFileSync(join(PROJECT_ROOT, 'docs', 'errors.md'), 'utf8')
  assert.equal(page, errorsMarkdown())
  for (const factory of catalogue) assert.ok(page.includes(`## ${factory.code}\n`))
})
