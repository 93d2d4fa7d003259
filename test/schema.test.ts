import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import test from 'node:test'
import { buildSchema, isNonNullType, type GraphQLEnumType } from 'graphql'
import { RETRIEVER_KINDS, retrieverEnumName } from '../core/kinds.js'

test('schema.graphql is a valid schema with the answer-set contract', () => {
  const schema = buildSchema(readFileSync(resolve(process.cwd(), 'schema.graphql'), 'utf8'))
  const ask = schema.getQueryType()!.getFields().ask!
  assert.equal(String(ask.type), 'AnswerSet!')
  const answerSet = schema.getType('AnswerSet') as unknown as { getFields(): Record<string, { type: unknown }> }
  for (const field of ['question', 'ambiguous', 'answers', 'passages', 'timings']) assert.ok(isNonNullType(answerSet.getFields()[field]!.type as never), field)
  assert.deepEqual(Object.keys((schema.getType('Answer') as unknown as { getFields(): object }).getFields()), ['answer', 'question', 'rewritten', 'rewriteStopped', 'confidence', 'evidence'])
  assert.ok(schema.getSubscriptionType()!.getFields().jobProgress)
})

test("schema.graphql's RetrieverName enum is the declared list of retriever kinds (core/kinds.ts)", () => {
  const schema = buildSchema(readFileSync(resolve(process.cwd(), 'schema.graphql'), 'utf8'))
  const values = (schema.getType('RetrieverName') as GraphQLEnumType | undefined)?.getValues().map((v) => v.name) ?? []
  assert.ok(values.length > 0, 'schema.graphql declares no RetrieverName values')
  assert.deepEqual(values, RETRIEVER_KINDS.map(retrieverEnumName))
})
