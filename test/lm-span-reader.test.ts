// SpanSeqGen on the pretrained decoder (assets/models/span-lm: Gemma 3 270M from `scripts/assets
// lm-base` + the LoRA adapter trained for `span`, run by llama.cpp): the answer set generated from
// real passages, each answer with the passages that hold it, ordered; a folder trained for another
// task is refused.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { DEFAULT_LM_BASE_DIR, DEFAULT_READER_DIR } from '../core/paths.js'
import { hasAnswer } from '../core/has-answer.js'
import type { RetrievedPassage } from '../core/retriever.js'
import { LlamaLm, readLmFolder } from '../reader/generation/llama-lm.js'
import { LmSpanReader } from '../reader/lm-span-reader.js'
import { prerequisite } from './helpers/prerequisite.js'

const folder = join(DEFAULT_READER_DIR, 'span-lm')
const base = existsSync(join(folder, 'lm.json')) ? join(DEFAULT_LM_BASE_DIR, readLmFolder(folder).base.file) : ''
const skip = prerequisite(!existsSync(base) ? `needs the decoder's base model ${base || 'models/base'}: run scripts/assets lm-base` : false)
let lm: LlamaLm

// As reader/reader.ts serves it: the adapter applied at run time (its numbers were measured so).
before(async () => { if (!skip) lm = await LlamaLm.load(folder, { threads: 1 }) })
after(async () => { if (!skip) await lm.close() })

const passage = (id: string, title: string, text: string): RetrievedPassage => ({ id, title, text, score: 1 })

test('the answer set is generated from the passages: each answer held by the passages given as its evidence, ranked', { skip, timeout: 120_000 }, async () => {
  const reader = new LmSpanReader(lm, { constrainToPassages: true })
  const passages = [
    passage('1', "Harry Potter and the Philosopher's Stone (film)", "Harry Potter and the Philosopher's Stone was released in London on 14 November 2001 and in the United States on 16 November 2001."),
    passage('2', 'Harry Potter (film series)', 'The series consists of eight fantasy films, beginning with Harry Potter and the Philosopher\'s Stone (2001) and culminating with Harry Potter and the Deathly Hallows – Part 2 (2011).'),
  ]
  const [answers] = await reader.read([{ question: 'when did the harry potter movie come out', passages }])
  assert.ok(answers!.length >= 1, 'at least one answer')
  answers!.forEach((a, rank) => {
    assert.ok(a.evidence.length > 0 && a.evidence.every((p) => hasAnswer(`${p.title} ${p.text}`, [a.answer])), `'${a.answer}' is held by its evidence`)
    assert.equal(a.probability, 1 / (rank + 1), 'the line\'s order')
  })
  assert.equal(new Set(answers!.map((a) => a.answer)).size, answers!.length, 'no answer twice')
})

test('a folder trained for question disambiguation is not a span reader', { skip }, async () => {
  const qd = await LlamaLm.load(join(DEFAULT_READER_DIR, 'qd-lm'), { threads: 1 })
  try {
    assert.throws(() => new LmSpanReader(qd, { constrainToPassages: true }), /trained for qd, not span/)
  } finally {
    await qd.close()
  }
})
