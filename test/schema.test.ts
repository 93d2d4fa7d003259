import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import test from 'node:test'
import { buildSchema, isNonNullType } from 'graphql'

test('schema.graphql is a valid schema with the answer-set contract', () => {
  const schema = buildSchema(readFileSync(resolve(process.cwd(), 'schema.graphql'), 'utf8'))
  const ask = schema.getQueryType()!.getFields().ask!
  assert.equal(String(ask.type), 'AnswerSet!')
  const answerSet = schema.getType('AnswerSet') as unknown as { getFields(): Record<string, { type: unknown }> }
  for (const field of ['question', 'ambiguous', 'answers', 'passages', 'timings']) assert.ok(isNonNullType(answerSet.getFields()[field]!.type as never), field)
  assert.deepEqual(Object.keys((schema.getType('Answer') as unknown as { getFields(): object }).getFields()), ['answer', 'question', 'rewritten', 'confidence', 'evidence'])
  assert.ok(schema.getSubscriptionType()!.getFields().jobProgress)
})
