// The decoder's prompt (reader/lm-prompt.ts): what training (src/training/lm-pack.ts) and serving
// (reader/lm-disambiguator.ts) both write, so its layout is pinned here.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { generatedLine, LM_EVIDENCE_PASSAGES, pickEvidence, qdAnswerLine, qdPrefix, qdTarget, spanPrefix, spanTarget } from '../reader/lm-prompt.js'
import { qdGroups } from '../src/training/lm-pack.js'

const p = (title: string, text: string) => ({ title, text })

test('each answer\'s own passage comes first, each passage once, at most three', () => {
  const a = p('A', 'alpha'); const b = p('B', 'beta'); const c = p('C', 'gamma'); const d = p('D', 'delta')
  const picked = pickEvidence([[a, c], [a, b], [d]])
  assert.deepEqual(picked.map((x) => x.title), ['A', 'D', 'C'])
  assert.equal(picked.length, LM_EVIDENCE_PASSAGES)
  assert.deepEqual(pickEvidence([[], []]), [])
})

test('the QD prompt: evidence lines, the question, the answer set, then one forced line per answer', () => {
  const prefix = qdPrefix('who plays  lord beric?', ['Richard Dormer', 'David Michael Scott'], [p('Beric Dondarrion', 'Beric is played\nby Richard Dormer.')])
  assert.equal(prefix, 'Evidence: Beric Dondarrion: Beric is played by Richard Dormer.\nQuestion: who plays lord beric?\nAnswers: Richard Dormer | David Michael Scott\n')
  assert.equal(qdAnswerLine('Richard Dormer'), 'Answer: Richard Dormer\nSpecific question:')
  assert.equal(qdTarget('who plays lord beric from season 3?'), ' who plays lord beric from season 3?\n')
  assert.equal(qdPrefix('q?', ['x', 'y'], []), 'Question: q?\nAnswers: x | y\n')
})

test('an evidence line keeps 110 words, its title counted, as training cut the joined string', () => {
  const long = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ')
  const line = qdPrefix('q?', ['a', 'b'], [p('Two Words', long)]).split('\n')[0]!
  assert.equal(line.replace(/^Evidence: /, '').split(' ').length, 110)
  // Training keeps a passage as one `title: text` string with no title: the same words.
  assert.equal(qdPrefix('q?', ['a', 'b'], [p('', `Two Words: ${long}`)]), qdPrefix('q?', ['a', 'b'], [p('Two Words', long)]))
})

test('generated lines: the text before the first newline; SpanSeqGen\'s prompt and target', () => {
  assert.equal(generatedLine(' who sang it in 1977?\nAnswer: x'), 'who sang it in 1977?')
  assert.equal(generatedLine(''), '')
  assert.equal(spanPrefix('q?', []), 'Question: q?\nAnswers:')
  assert.equal(spanTarget(['a', 'b']), ' a | b\n')
})

test('QD training rows group by prompt and annotation, rewrites in pair order, every answer listed', () => {
  const row = (id: string, answer: string, others: string, target: string, passages = '') => ({ id, qid: '7', question: 'when did it come out?', input: `when did it come out? [SEP] ${answer} [SEP] ${others}${passages}`, target, answer })
  const groups = qdGroups([
    row('ambignq-train:7:0.1', '2018', '2016 <SEP> 2020', 'when did it come out on xbox?', ' [SEP] Game: released 2018 on xbox'),
    row('ambignq-train:7:0.0', '2016', '2018 <SEP> 2020', 'when did it come out on pc?', ' [SEP] Game: released 2016 on pc'),
    row('ambignq-train:7:1.0', '2016', '', 'when did it first come out?'),
  ])
  assert.equal(groups.length, 2)
  const g = groups.find((x) => x.id === 'ambignq-train:7:0')!
  assert.deepEqual(g.pairs.map((x) => x.answer), ['2016', '2018'])
  assert.deepEqual(g.answers, ['2016', '2018', '2020'])
  assert.deepEqual(g.evidence.map((e) => e.text), ['Game: released 2016 on pc', 'Game: released 2018 on xbox'])
})
