// One reader input format in two languages: the server (reader/reader-input.ts) must give the
// model the very bytes train/ambigqa_train/data.py trained it on. Both render the same inputs,
// the awkward ones included (no title, runs of whitespace, Unicode spaces), and must agree.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { PROJECT_ROOT as ROOT } from '../core/paths.js'
import { qdInput, readerInput } from '../reader/reader-input.js'
import { TRAINING_PYTHON as PYTHON } from '../core/python-process.js'
import { prerequisite } from './helpers/prerequisite.js'
import { pythonMissing } from './helpers/reader-fixture.js'

const skip = prerequisite(pythonMissing('rendering the training inputs'))

const PASSAGES = [
  { title: 'Doctor Who', text: 'The Doctor is played by\n\nJodie  Whittaker\tsince 2017.' },
  { title: '', text: 'A passage without a title (a JSONL source may have none).' },
  { title: 'Café\u00a0society', text: ' leading space, a non-breaking\u00a0space, a unit separator\u001fand a BOM\ufeffhere ' },
]
const CASES = [
  { question: 'who played the doctor in 2018', answer: 'Jodie Whittaker', others: ['Peter Capaldi', 'Matt  Smith'], passages: PASSAGES },
  { question: 'when did it open?', answer: '1999', others: [], passages: PASSAGES.slice(1) },
  { question: 'no passages at all', answer: 'x', others: ['y'], passages: [] },
  { question: 'only the answer', answer: 'x', others: [], passages: [] },
  { question: '  spaced\nquestion ', answer: ' a ', others: [' b ', 'c'], passages: [{ title: 'T', text: '   ' }] },
]

// Renders CASES with data.py's own functions: reader_input and qd_input with its separator.
const PYTHON_RENDER = `
import json, sys
from ambigqa_train.data import ANSWER_SEP, Passage, qd_input, reader_input
out = []
for c in json.load(sys.stdin):
    ps = [Passage(p["title"], p["text"]) for p in c["passages"]]
    out.append({"reader": reader_input(c["question"], ps), "qd": qd_input(c["question"], c["answer"], c["others"], ps), "separator": ANSWER_SEP.strip()})
json.dump(out, sys.stdout)
`

test('the reader and QD inputs are byte for byte the ones train/ambigqa_train/data.py writes', { skip }, () => {
  const run = spawnSync(PYTHON, ['-c', PYTHON_RENDER], {
    cwd: ROOT, input: JSON.stringify(CASES), encoding: 'utf8', timeout: 60_000,
    env: { ...process.env, PYTHONPATH: join(ROOT, 'train') },
  })
  assert.equal(run.status, 0, run.stderr)
  const python = JSON.parse(run.stdout) as { reader: string; qd: string; separator: string }[]
  CASES.forEach((c, i) => {
    const want = python[i]!
    assert.equal(readerInput(c.question, c.passages), want.reader, `case ${i}: SpanSeqGen input`)
    assert.equal(qdInput(c.question, c.answer, c.others, c.passages, want.separator), want.qd, `case ${i}: QD input`)
  })
})
