// The candidate-support stage (reader/candidate-support.ts) on the real decoders: SpanSeqGen's
// (assets/models/span-lm on Gemma 3 270M from `scripts/assets lm-base`) log probability of each
// candidate after its prompt, the closed-book knowledge check on the base model, and SpanSeqGen's
// own answers joining the pool with the passages that hold them.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { DEFAULT_LM_BASE_DIR, DEFAULT_READER_DIR } from '../core/paths.js'
import type { RetrievedPassage } from '../core/retriever.js'
import type { Read } from '../core/stages.js'
import { CandidateSupport, SUPPORT_FEATURES, supportMissing } from '../reader/candidate-support.js'
import { prerequisite } from './helpers/prerequisite.js'

const base = join(DEFAULT_LM_BASE_DIR, 'gemma-3-270m-q4_k_m.gguf')
const skip = prerequisite(!existsSync(base) ? `needs the decoder's base model ${base}: run scripts/assets lm-base` : false)
let support: CandidateSupport

before(async () => {
  if (!skip) support = await CandidateSupport.open({ spanLm: join(DEFAULT_READER_DIR, 'span-lm'), knowledge: base, generate: true, candidates: 3, threads: 1 })
})
after(async () => { if (!skip) await support.close() })

const passage = (id: string, title: string, text: string): RetrievedPassage => ({ id, title, text, score: 1 })
const passages = [
  passage('1', 'Beric Dondarrion', 'Beric Dondarrion is a fictional character in A Song of Ice and Fire. In the HBO television adaptation Game of Thrones he is portrayed by David Michael Scott in the first season and by Richard Dormer from the third season on.'),
  passage('2', 'Liam Cunningham', 'Liam Cunningham is an Irish actor. He played Davos Seaworth in Game of Thrones.'),
  passage('3', 'Jack Gleeson', 'Jack Gleeson is an Irish actor, known for playing Joffrey Baratheon in Game of Thrones.'),
]
// The reader's candidates as the extractive reader gives them (features abridged), one it missed.
const read = (): Read => ({
  question: 'who plays lord beric in game of thrones?', retrieve: 3, read: 3, passages, reranked: passages, timings: { retrievalMs: 0, totalMs: 0 },
  answers: ['Liam Cunningham', 'Jack Gleeson', 'Richard Dormer', 'Davos Seaworth'].map((answer, i) => ({ answer, confidence: 0.5 / (i + 1), evidence: [passages[Math.min(i, 2)]!], features: { bestLocal: -i, words: 2 } })),
})

test('every candidate gets the decoders\' scores: log probabilities, the best of the question at gap 0, the unscored at the question\'s lowest', { skip, timeout: 600_000 }, async () => {
  const out = await support.run(read())
  const reader = out.answers.filter((a) => a.features!.generated === 0)
  assert.deepEqual(reader.map((a) => a.answer), ['Liam Cunningham', 'Jack Gleeson', 'Richard Dormer', 'Davos Seaworth'], 'the reader\'s candidates kept, in order')
  for (const a of out.answers) {
    for (const f of SUPPORT_FEATURES) assert.ok(Number.isFinite(a.features![f]), `${a.answer}: ${f} = ${a.features![f]}`)
    assert.ok(a.features!.genSum! < 0 && a.features!.kbSum! < 0 && a.features!.genEnd! <= 0, `${a.answer}: log probabilities`)
    assert.ok(a.features!.genGap! <= 0 && a.features!.kbGap! <= 0, `${a.answer}: gaps below the best`)
    assert.equal(a.features!.bestLocal !== undefined, true, 'the reader\'s own features stay')
  }
  assert.ok(out.answers.some((a) => a.features!.genGap === 0) && out.answers.some((a) => a.features!.kbGap === 0), 'the best at gap 0')
  // `candidates: 3`: the fourth is not scored and gets the question's lowest.
  const scored = out.answers.slice(0, 3).map((a) => a.features!.genSum!)
  assert.equal(out.answers[3]!.features!.genSum, Math.min(...scored, ...out.answers.slice(4).map((a) => a.features!.genSum!)))
  // The same question again: the same numbers.
  const again = await support.run(read())
  assert.deepEqual(again.answers.map((a) => a.features), out.answers.map((a) => a.features))
})

test('SpanSeqGen\'s own answers that the reader missed join the pool, each with the passages holding it', { skip, timeout: 600_000 }, async () => {
  const out = await support.run(read())
  const known = new Set(['liam cunningham', 'jack gleeson', 'richard dormer', 'davos seaworth'])
  const generated = out.answers.filter((x) => x.features!.generated === 1)
  // SpanSeqGen names the first season's actor, whom the reader's candidates lack.
  assert.ok(generated.some((a) => a.answer === 'David Michael Scott'), `generated: ${generated.map((a) => a.answer).join(', ')}`)
  for (const a of generated) {
    assert.ok(!known.has(a.answer.toLowerCase()), `${a.answer} is not a candidate already`)
    assert.ok(a.evidence.length > 0 && a.evidence.every((p) => `${p.title} ${p.text}`.toLowerCase().includes(a.answer.toLowerCase())), `${a.answer}: held by its evidence`)
    assert.ok(a.confidence < 0.5 / 4, 'below every candidate read before calibration')
  }
})

test('a verifier fit on the decoders\' features names the setting that is off', () => {
  const on = { spanLm: 'assets/models/span-lm', knowledge: 'models/base/x.gguf', generate: true }
  assert.equal(supportMissing(['bestLocal', 'genMean', 'kbPmi', 'generated'], on), undefined)
  assert.deepEqual(supportMissing(['bestLocal', 'genMean', 'kbPmi'], { ...on, spanLm: '' }), { key: 'support.spanLm', features: ['genMean'] })
  assert.deepEqual(supportMissing(['kbGap', 'kbPmi'], { ...on, knowledge: '' }), { key: 'support.knowledge', features: ['kbGap', 'kbPmi'] })
  assert.deepEqual(supportMissing(['generated'], { ...on, generate: false }), { key: 'support.generate', features: ['generated'] })
  assert.equal(supportMissing(['bestLocal', 'logProbability'], { spanLm: '', knowledge: '', generate: false }), undefined, 'the shipped verifier needs none')
})
