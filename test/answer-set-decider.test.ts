import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'node:test'
import { answerFeatures, AnswerSetDecider, CALIBRATION_FILE, completeDates, generativeSet, loadCalibration, questionScorer, readingFeatures, splitJoined, verifierPair, wordsScorer, type CalibrationModels, type LogisticModel } from '../reader/answer-set-decider.js'
import { DEFAULT_READER_DIR } from '../core/paths.js'
import { prerequisite } from './helpers/prerequisite.js'
import type { RetrievedPassage } from '../core/retriever.js'
import type { Read } from '../core/stages.js'

const passage = (id: string, title: string): RetrievedPassage => ({ id, title, text: `${title} text`, score: 1 })
const passages = [passage('p1', 'A'), passage('p2', 'B'), passage('p3', 'A')]

function read(answers: [string, number, RetrievedPassage[]][]): Read {
  return {
    question: 'who won', retrieve: 3, read: 3, passages, reranked: passages, timings: { retrievalMs: 0, totalMs: 0 },
    answers: answers.map(([answer, confidence, evidence]) => ({ answer, confidence, evidence })),
  }
}

/** One weight on one named feature, inputs unscaled. */
const model = (features: string[], weights: number[], bias: number): LogisticModel => ({ features, mean: features.map(() => 0), scale: features.map(() => 1), weights, bias })

// Confidence = sigmoid(10·shareOfBest − 5): the best answer 0.993, one at 0.2 of the best 0.05.
// Ambiguity = sigmoid(questionLogit + 3·secondShare − 2).
function models(): CalibrationModels {
  return {
    reader: 'extractive',
    answer: model(['shareOfBest'], [10], -5),
    questionOnly: { ...model(['e0', 'e1'], [1, 0], 0), encoder: 'e5-small-v2-int8' },
    ambiguity: model(['questionLogit', 'secondShare'], [1, 3], -2),
    minConfidence: 0,
  }
}

test('features: each answer\'s share of the best, rank and evidence; the question\'s titles and second share', () => {
  const input = read([['x', 0.5, [passages[1]!, passages[2]!]], ['y', 0.25, []]])
  const [x, y] = answerFeatures(input)
  assert.equal(x!.shareOfBest, 1)
  assert.equal(x!.firstEvidenceRank, 1)
  assert.equal(x!.evidence, 2)
  assert.equal(y!.shareOfBest, 0.5)
  assert.equal(y!.rank, 1)
  assert.equal(y!.firstEvidenceRank, 3, 'no evidence: the number of passages read')
  const r = readingFeatures(input, 1.5)
  assert.deepEqual({ ...r, logBest: Math.round(r.logBest! * 1000) / 1000 }, { questionLogit: 1.5, setSize: 2, logBest: -0.693, secondShare: 0.5, answerTitles: 1, readTitles: 2, verifiedFirst: 0, verifiedSecond: 0, verifiedThird: 0, verifiedSum: 0, verifiedCount: 0, verifiedPassages: 0 })
  assert.equal(readingFeatures(read([]), 0).secondShare, 0)
})

/** The plain rule's settings, which a calibrated decider does not read. */
const RULE = { keep: 0.3, minProbability: 0, splitJoined: false, completeDates: false }

test('the decider calibrates, drops answers under minConfidence and keeps the best alone when unambiguous', async () => {
  const two = read([['x', 0.5, [passages[0]!]], ['y', 0.45, [passages[1]!]], ['z', 0.1, []]])
  // Question logit 2 and second share 0.9: sigmoid(2 + 2.7 − 2) > 0.5, ambiguous.
  const ambiguous = await new AnswerSetDecider({ ...RULE, minConfidence: 0.1, oneAnswerWhenUnambiguous: true, maxAnswers: 5 }, { models: models(), embed: async () => new Float32Array([2, 7]) }).run(two)
  assert.ok(ambiguous.ambiguity! > 0.9)
  assert.deepEqual(ambiguous.answers.map((a) => a.answer), ['x', 'y'], 'z (confidence 0.05) is under minConfidence')
  assert.ok(Math.abs(ambiguous.answers[0]!.confidence - 1 / (1 + Math.exp(-5))) < 1e-9)
  // Question logit −3: sigmoid(−3 + 2.7 − 2) < 0.5, one answer, the most confident.
  const single = await new AnswerSetDecider({ ...RULE, minConfidence: 0, oneAnswerWhenUnambiguous: true, maxAnswers: 5 }, { models: models(), embed: async () => new Float32Array([-3, 0]) }).run(two)
  assert.ok(single.ambiguity! < 0.5)
  assert.deepEqual(single.answers.map((a) => a.answer), ['x'])
  const reportOnly = await new AnswerSetDecider({ ...RULE, minConfidence: 0, oneAnswerWhenUnambiguous: false, maxAnswers: 5 }, { models: models(), embed: async () => new Float32Array([-3, 0]) }).run(two)
  assert.deepEqual(reportOnly.answers.map((a) => a.answer), ['x', 'y', 'z'], 'the detector only reports')
})

test('without a calibration the plain rule decides: within keep of the best, at most maxAnswers, nothing under minProbability; a generative reader\'s set whole', async () => {
  const four = read([['w', 0.5, []], ['x', 0.2, []], ['y', 0.14, []], ['z', 0.1, []]])
  const rule = { keep: 0.3, minProbability: 0, minConfidence: 0.9, oneAnswerWhenUnambiguous: true, maxAnswers: 5, splitJoined: false, completeDates: false }
  const plain = await new AnswerSetDecider(rule).run(four)
  assert.deepEqual(plain.answers.map((a) => [a.answer, a.confidence]), [['w', 0.5], ['x', 0.2]], 'y is under 0.3 of the best; the calibrated rule\'s minConfidence does not apply')
  assert.equal(plain.ambiguity, undefined, 'no detector without a calibration')
  assert.deepEqual((await new AnswerSetDecider({ ...rule, keep: 0, maxAnswers: 3 }).run(four)).answers.map((a) => a.answer), ['w', 'x', 'y'])
  assert.deepEqual((await new AnswerSetDecider({ ...rule, minProbability: 0.6 }).run(four)).answers, [], 'the best is under minProbability: an honest empty set')
  assert.deepEqual((await new AnswerSetDecider(generativeSet({ ...rule, maxAnswers: 1, minProbability: 0.6 })).run(four)).answers.map((a) => a.answer), ['w', 'x', 'y', 'z'], 'SpanSeqGen wrote the set')
})

test('the decider reads the question\'s vector the retriever handed on (the same encoder), and embeds it itself otherwise', async () => {
  const rule = { ...RULE, minConfidence: 0, oneAnswerWhenUnambiguous: false, maxAnswers: 5 }
  const two = read([['x', 0.5, [passages[0]!]], ['y', 0.45, [passages[1]!]]])
  let embedded = 0
  const embed = async () => { embedded++; return new Float32Array([-3, 0]) }
  const handed = await new AnswerSetDecider(rule, { models: models(), embed }).run({ ...two, query: { encoder: 'e5-small-v2-int8', vector: new Float32Array([2, 7]) } })
  assert.equal(embedded, 0, 'the retriever\'s vector was used')
  const own = await new AnswerSetDecider(rule, { models: models(), embed: async () => new Float32Array([2, 7]) }).run(two)
  assert.equal(handed.ambiguity, own.ambiguity)
  await new AnswerSetDecider(rule, { models: models(), embed }).run({ ...two, query: { encoder: 'bge-small-en-v1.5-int8', vector: new Float32Array([2, 7]) } })
  assert.equal(embedded, 1, 'another encoder\'s vector is not the model\'s input: embedded here')
})

test('the verified set: the best three confidences, their sum, how many reach 0.25 and from how many passages (as fit_calibration.set_features)', () => {
  const input = read([['w', 0.4, []], ['x', 0.3, []], ['y', 0.2, []], ['z', 0.1, []]])
  input.answers.forEach((a, i) => { a.features = { passage: [0, 0, 3, 4][i]! } })
  const f = readingFeatures(input, 1.5, [0.9, 0.3, 0.6, 0.1])
  assert.deepEqual([f.verifiedFirst, f.verifiedSecond, f.verifiedThird, f.verifiedCount, f.verifiedPassages], [0.9, 0.6, 0.3, 3, 2])
  assert.ok(Math.abs(f.verifiedSum! - 1.9) < 1e-12)
})

test('the decider keeps its most confident answer even under minConfidence, and at most maxAnswers', async () => {
  const three = read([['x', 0.5, [passages[0]!]], ['y', 0.45, [passages[1]!]], ['z', 0.4, []]])
  const none = await new AnswerSetDecider({ ...RULE, minConfidence: 1, oneAnswerWhenUnambiguous: true, maxAnswers: 5 }, { models: models(), embed: async () => new Float32Array([2, 7]) }).run(three)
  assert.deepEqual(none.answers.map((a) => a.answer), ['x'])
  const capped = await new AnswerSetDecider({ ...RULE, minConfidence: 0, oneAnswerWhenUnambiguous: true, maxAnswers: 2 }, { models: models(), embed: async () => new Float32Array([2, 7]) }).run(three)
  assert.deepEqual(capped.answers.map((a) => a.answer), ['x', 'y'])
})

test('calibration.json: missing is AMBIGQA_ERR_MODEL_MISSING, malformed AMBIGQA_ERR_MODEL_INVALID', () => {
  const dir = mkdtempSync(join(tmpdir(), 'calibration-'))
  assert.throws(() => loadCalibration(dir), (e: { code?: string }) => e.code === 'AMBIGQA_ERR_MODEL_MISSING')
  writeFileSync(join(dir, CALIBRATION_FILE), JSON.stringify({ ...models(), answer: { features: ['a'], mean: [0], scale: [1], weights: [1, 2], bias: 0 } }))
  assert.throws(() => loadCalibration(dir), (e: { code?: string; message: string }) => e.code === 'AMBIGQA_ERR_MODEL_INVALID' && /answer is not a logistic model/.test(e.message))
  writeFileSync(join(dir, CALIBRATION_FILE), JSON.stringify(models()))
  assert.equal(loadCalibration(dir).questionOnly.encoder, 'e5-small-v2-int8')
})

test('the cross-encoder verifier: the reader\'s first candidates stacked on the answer model, the others left as they were', async () => {
  const input = read([['x', 0.5, [passages[0]!]], ['y', 0.45, [passages[1]!]], ['z', 0.4, []]])
  input.answers.forEach((a, i) => { a.window = { title: 'T', text: `words around ${a.answer}` }; if (i === 1) delete a.window })
  // Stack: confidence = sigmoid(0·answer logit + 1·cross logit), over the first 2 candidates.
  const stacked: CalibrationModels = { ...models(), verifier: { candidates: 2, stack: model(['answerLogit', 'verifierLogit'], [0, 1], 0) } }
  const seen: { title: string; text: string }[][] = []
  const verify = async (question: string, pairs: readonly { title: string; text: string }[]) => {
    assert.equal(question, 'who won')
    seen.push([...pairs])
    return pairs.map(() => -4)
  }
  const out = await new AnswerSetDecider({ ...RULE, minConfidence: 0, oneAnswerWhenUnambiguous: false, maxAnswers: 5 }, { models: stacked, embed: async () => new Float32Array([2, 7]), verify }).run(input)
  // x is read (rank 0, a window); y has no window; z is past the first 2.
  assert.deepEqual(seen, [[{ question: 'who won', title: 'x [SEP] T', text: 'words around x' }]])
  assert.deepEqual(verifierPair('q', 'x', { title: 'T', text: 'w' }), { question: 'q', title: 'x [SEP] T', text: 'w' })
  const confidence = Object.fromEntries(out.answers.map((a) => [a.answer, a.confidence]))
  assert.ok(Math.abs(confidence.x! - 1 / (1 + Math.exp(4))) < 1e-9, 'x: the stack of its cross-encoder logit')
  assert.ok(Math.abs(confidence.y! - 1 / (1 + Math.exp(-(10 * 0.9 - 5)))) < 1e-9, 'y: the answer model alone')
  assert.deepEqual(out.answers.map((a) => a.answer), ['y', 'z', 'x'], 'x falls behind the candidates the verifier did not read')
  assert.throws(() => new AnswerSetDecider({ ...RULE, minConfidence: 0, oneAnswerWhenUnambiguous: false, maxAnswers: 5 }, { models: stacked, embed: async () => new Float32Array([0, 0]) }),
    (e: { code?: string }) => e.code === 'AMBIGQA_ERR_MODEL_MISSING', 'a stack without a verifier model is a coded error')
  const dir = mkdtempSync(join(tmpdir(), 'calibration-'))
  writeFileSync(join(dir, CALIBRATION_FILE), JSON.stringify({ ...stacked, verifier: { candidates: 2, stack: model(['answerLogit'], [1], 0) } }))
  assert.throws(() => loadCalibration(dir), (e: { code?: string; message: string }) => e.code === 'AMBIGQA_ERR_MODEL_INVALID' && /verifier/.test(e.message))
  writeFileSync(join(dir, CALIBRATION_FILE), JSON.stringify(stacked))
  assert.equal(loadCalibration(dir).verifier!.candidates, 2)
})

test('the question\'s words: TF-IDF of word 1-2 grams as scikit-learn makes them (lower case, runs of two or more word characters, sublinear tf, L2 norm)', () => {
  const words = { ngrams: 2, terms: ['harry', 'harry potter', 'movie', 'potter', 'when'], idf: [2, 3, 1.5, 2, 1], weights: [0.5, 2, -1, 0.25, 0.1] }
  const score = wordsScorer(words)
  // "when" "did"(out of the vocabulary) "harry" "potter" "movie" "come"... and the bigram "harry potter".
  const values = [1, 2, 3, 1.5, 2] // tf 1 each, times idf: when, harry, harry potter, movie, potter
  const weights = [0.1, 0.5, 2, -1, 0.25]
  const norm = Math.hypot(...values)
  const want = values.reduce((s, v, i) => s + v * weights[i]!, 0) / norm
  assert.ok(Math.abs(score('When did the Harry Potter movie come out?') - want) < 1e-12)
  // A term twice: 1 + ln 2; "a" and "I" are not tokens; nothing in the vocabulary scores 0.
  assert.ok(Math.abs(score('movie, MOVIE') - (-1)) < 1e-12, 'one term alone: its weight, whatever its tf-idf')
  assert.equal(score('a I ?'), 0)
  assert.equal(score(''), 0)
  // The embedding part and the words part add up.
  const q = questionScorer({ features: ['e0'], mean: [0], scale: [1], weights: [2], bias: -1, encoder: 'e5-small-v2-int8', words })
  assert.ok(Math.abs(q([0.5], 'movie') - (-1 + 1 - 1)) < 1e-12)
})

const shipped = join(DEFAULT_READER_DIR, 'calibration')
test('the shipped ambiguity model\'s words give the logits scikit-learn gave (its checks)', { skip: prerequisite(existsSync(join(shipped, CALIBRATION_FILE)) ? false : `no ${shipped}/${CALIBRATION_FILE}`) }, () => {
  const words = loadCalibration(shipped).questionOnly.words
  assert.ok(words, 'the shipped question-only model reads the words')
  assert.ok((words.checks ?? []).length >= 5, 'it carries reference logits')
  const score = wordsScorer(words)
  for (const c of words.checks!) assert.ok(Math.abs(score(c.question) - c.logit) < 1e-5, `${c.question}: ${score(c.question)} against scikit-learn's ${c.logit}`)
})

test('splitJoined: an answer joining names becomes one answer a name, each with the evidence that holds it', () => {
  const carlton = { id: 'c', title: 'Carlton Football Club', text: 'Carlton won the 1995 premiership.', score: 1 }
  const both = { id: 'b', title: '1995 AFL Grand Final', text: 'Carlton and Geelong met; Essendon had lost.', score: 1 }
  const sg = { id: 's', title: 'Simon & Garfunkel', text: 'Simon & Garfunkel recorded it.', score: 1 }
  const set = [
    { answer: 'Carlton and Essendon', confidence: 0.6, evidence: [carlton, both] },
    { answer: 'Essendon', confidence: 0.5, evidence: [both] },
    { answer: 'Simon & Garfunkel', confidence: 0.4, evidence: [sg] },
    { answer: '200 cm wide and 95 cm tall', confidence: 0.3, evidence: [both] },
  ]
  const out = splitJoined(set, [carlton, both, sg], 10)
  assert.deepEqual(out.map((a) => [a.answer, a.confidence]), [['Carlton', 0.6], ['Essendon', 0.6], ['Simon & Garfunkel', 0.4], ['200 cm wide and 95 cm tall', 0.3]],
    'the parts in the joined answer\'s place with its confidence, Essendon once; a read passage\'s title and a measure stay whole')
  assert.deepEqual(out[0]!.evidence.map((p) => p.id), ['c', 'b'], 'Carlton: both passages hold it')
  assert.deepEqual(out[1]!.evidence.map((p) => p.id), ['b'], 'Essendon: only the passage that holds it')
  assert.deepEqual(splitJoined([{ answer: 'Guyton, Martin and Cortez', confidence: 0.5, evidence: [both] }], [both], 2).map((a) => a.answer), ['Guyton', 'Martin'], 'a list, at most `size`')
  assert.deepEqual(splitJoined([{ answer: 'Lewis and clark', confidence: 0.5, evidence: [both] }], [both], 4).map((a) => a.answer), ['Lewis and clark'], 'a part without a capital: whole')
})

test('the decider splits joined answers when splitJoined is on, not when off', async () => {
  const joined = read([['Alpha and Beta', 0.6, [passages[0]!]], ['Gamma', 0.3, [passages[1]!]]])
  const rule = { ...RULE, minConfidence: 0, oneAnswerWhenUnambiguous: false, maxAnswers: 5 }
  const on = await new AnswerSetDecider({ ...rule, splitJoined: true }).run(joined)
  assert.deepEqual(on.answers.map((a) => a.answer), ['Alpha', 'Beta', 'Gamma'])
  const off = await new AnswerSetDecider(rule).run(joined)
  assert.deepEqual(off.answers.map((a) => a.answer), ['Alpha and Beta', 'Gamma'])
})

test('completeDates: a bare year becomes the first whole date in that year its evidence writes, unless the question asks for a year', () => {
  const plain = { id: 'p', title: 'Hong Kong', text: 'The handover came in 1997.', score: 1 }
  const dated = { id: 'd', title: 'Transfer of sovereignty over Hong Kong', text: 'Britain signed in 1984; on 1 July 1997 and again July 2, 1997 ...', score: 1 }
  const set = [
    { answer: '1997', confidence: 0.6, evidence: [plain, dated] },
    { answer: '1984', confidence: 0.5, evidence: [dated] },
    { answer: '1 July 1997', confidence: 0.4, evidence: [dated] },
    { answer: 'July 1997', confidence: 0.3, evidence: [dated] },
  ]
  const out = completeDates('When did britain give hong kong to china?', set)
  assert.deepEqual(out.map((a) => [a.answer, a.confidence]), [['1 July 1997', 0.6], ['1984', 0.5], ['July 1997', 0.3]],
    'the year dated in its place (the first date the evidence writes), once; a year no passage dates and a month stay')
  assert.deepEqual(out[0]!.evidence.map((p) => p.id), ['d'], 'its evidence: the passage that writes the date')
  assert.deepEqual(completeDates('What year did britain give hong kong to china?', set).map((a) => a.answer), set.map((a) => a.answer), 'a question asking for the year keeps it')
})
