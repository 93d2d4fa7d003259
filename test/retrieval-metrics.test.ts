import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'node:test'
import { dprTokens, hasAnswer } from '../core/has-answer.js'
import { loadIdList, loadQuestions, parsePythonStringList } from '../src/eval/questions.js'
import { corpusCeiling, retrievalMetrics } from '../src/eval/retrieval-metrics.js'
import { sharedFile } from './helpers/shared-data.js'

test("DPR's answer match: token runs, case and accents folded by NFD, not substrings", () => {
  assert.deepEqual(dprTokens('Röntgen, 1901!'), ['ro\u0308ntgen', ',', '1901', '!'])
  assert.ok(hasAnswer('The first prize went to Wilhelm Conrad Röntgen in 1901.', ['wilhelm conrad röntgen']))
  assert.ok(!hasAnswer('Goldwynne starred', ['Goldwyn']))
  assert.ok(hasAnswer('cost $666.66 then', ['$666.66']))
  assert.ok(!hasAnswer('anything', ['']))
})

test('recall counts any gold answer; coverage takes the best annotation, averaged', () => {
  const questions = [
    { id: 'a', question: 'q1', annotations: [[['Paris']], [['Lyon'], ['Nice'], ['Lille']]] },
    { id: 'b', question: 'q2', annotations: [[['Rome'], ['Milan']]] },
  ]
  const hits = [
    ['Lyon is big', 'Nice is sunny', 'nothing'],
    ['Milan has fashion', 'Rome is old'],
  ]
  const m = retrievalMetrics(questions, hits, [1, 2])
  assert.equal(m.n, 2)
  assert.deepEqual(m.recall, { '1': 100, '2': 100 })
  // q1: k=1 best annotation covers 1/3 (Lyon) vs 0/1 (Paris); k=2: 2/3. q2: 1/2 then 2/2.
  assert.ok(Math.abs(m.coverage['1']! - (100 * (1 / 3 + 1 / 2)) / 2) < 1e-9)
  assert.ok(Math.abs(m.coverage['2']! - (100 * (2 / 3 + 1)) / 2) < 1e-9)
})

test('the corpus ceiling equals the metrics with every passage retrieved; no answer spans two passages', () => {
  const questions = [
    { id: 'a', question: 'q1', annotations: [[['Paris']], [['Lyon'], ['Nice'], ['Lille']]] },
    { id: 'b', question: 'q2', annotations: [[['Rome'], ['Milan']]] },
    { id: 'c', question: 'q3', annotations: [[['New York']]] },
  ]
  const passages = ['Lyon is big', 'Nice is sunny', 'Milan has fashion', 'Rome is old', 'we went to new', 'york is far']
  const all = retrievalMetrics(questions, questions.map(() => passages), [passages.length])
  assert.deepEqual(corpusCeiling(questions, passages), { recall: all.recall[passages.length], coverage: all.coverage[passages.length] })
  assert.equal(corpusCeiling(questions, passages).recall, (100 * 2) / 3)
})

test('question files: NQ-open TSV with Python lists and doubled quotes, JSON Lines, id lists, errors', () => {
  assert.deepEqual(parsePythonStringList(`['a', "b's", 'c\\'d']`), ['a', "b's", "c'd"])
  const dir = mkdtempSync(join(tmpdir(), 'q-'))
  const tsv = join(dir, 'q.tsv')
  writeFileSync(tsv, `who sang it\t['Linda Davis']\nwhat did he say\t"['the ""big"" one', 'x']"\n`)
  const questions = loadQuestions(tsv)
  assert.deepEqual(questions.map((q) => q.annotations), [[[['Linda Davis']]], [[['the "big" one', 'x']]]])
  const jsonl = join(dir, 'q.jsonl')
  writeFileSync(jsonl, '{"question": "q", "answer": ["a"]}\nnot json\n')
  assert.throws(() => loadQuestions(jsonl), /q\.jsonl, line 2: invalid JSON/)
  const idsFile = join(dir, 'ids.txt')
  writeFileSync(idsFile, 'line-2\nline-9\n')
  assert.throws(() => loadQuestions(tsv, loadIdList(idsFile)), /1 ids of the id list are not in it \(first: line-9\)/)
  assert.throws(() => loadQuestions(join(dir, 'missing.json')), { code: 'AMBIGQA_ERR_QUESTIONS_FILE' })
})

const nqDev = sharedFile('nq-open/nq-open-dev.tsv')
const dev = sharedFile('ambignq/dev_light.json')
test('the real NQ-open dev TSV and AmbigNQ dev load whole', { skip: nqDev.skip || dev.skip }, () => {
  const nq = loadQuestions(nqDev.path)
  assert.equal(nq.length, 8757)
  assert.ok(nq.every((q) => q.annotations[0]![0]!.length > 0 && q.annotations[0]![0]!.every((a) => !a.includes('""'))))
  const ambig = loadQuestions(dev.path)
  assert.equal(ambig.length, 2002)
  const multi = ambig.filter((q) => q.annotations.every((clusters) => clusters.length > 1))
  assert.ok(multi.length > 900)
})
