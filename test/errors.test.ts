import assert from 'node:assert/strict'
import test from 'node:test'
import { AmbigqaError, catalogue, ERR_SOURCE_MALFORMED, ERR_STORE_NOT_FOUND } from '../src/core/errors.js'

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
