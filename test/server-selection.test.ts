// What a query selects below ask: the resolver reads it to run question disambiguation only for
// a client that selects an answer's question or rewritten. Queries parsed by graphql itself.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parse, type FieldNode, type FragmentDefinitionNode, type OperationDefinitionNode } from 'graphql'
import { disambiguates, selectsRewrites } from '../src/server/selection.js'

/** The resolve info of the query's first top-level field, as graphql-js gives it. */
function infoOf(query: string) {
  const document = parse(query)
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!
  const fragments = Object.fromEntries(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === 'FragmentDefinition').map((f) => [f.name.value, f]))
  return { fieldNodes: [operation.selectionSet.selections[0] as FieldNode], fragments }
}

const rewrites = (query: string) => selectsRewrites(infoOf(query))

test('an answer\'s question or rewritten selected directly, aliased, or through fragments counts', () => {
  assert.equal(rewrites('{ ask(question: "q") { answers { answer question } } }'), true)
  assert.equal(rewrites('{ ask(question: "q") { answers { rewritten } } }'), true)
  assert.equal(rewrites('{ ask(question: "q") { answers { asked: question } } }'), true)
  assert.equal(rewrites('{ ask(question: "q") { answers { ... on Answer { question } } } }'), true)
  assert.equal(rewrites('{ ask(question: "q") { ...Set } } fragment Set on AnswerSet { answers { ...A } } fragment A on Answer { rewritten }'), true)
  assert.equal(rewrites('{ ask(question: "q") { answers { answer } answers { question } } }'), true)
  assert.equal(rewrites('{ askMany(questions: ["q"]) { answers { question } } }'), true)
})

test('the set\'s own question, or answers without question and rewritten, do not count', () => {
  assert.equal(rewrites('{ ask(question: "q") { question answers { answer confidence evidence { id title } } } }'), false)
  assert.equal(rewrites('{ ask(question: "q") { ambiguous ambiguity } }'), false)
  assert.equal(rewrites('{ ask(question: "q") { answers { ...A } } } fragment A on Answer { answer confidence }'), false)
  // A fragment the document lacks is refused by validation; here it selects nothing.
  assert.equal(rewrites('{ ask(question: "q") { answers { ...Missing } } }'), false)
})

test('one decision whether a call disambiguates: what the query selects, and a call without a query does', () => {
  assert.equal(disambiguates(infoOf('{ ask(question: "q") { answers { answer rewritten } } }')), true)
  assert.equal(disambiguates(infoOf('{ ask(question: "q") { answers { answer confidence } } }')), false)
  assert.equal(disambiguates(infoOf('{ search(question: "q") { id } }')), false)
  // A direct call reads the whole answer, rewrites included (the limiter counts it so too).
  assert.equal(disambiguates(undefined), true)
})
