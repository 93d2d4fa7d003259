// The extractive reader against PyTorch: a tiny real model made and exported by train/
// (train/tests/extractive_fixture.py) whose reference.json holds the inputs and the best spans
// that train/ambigqa_train/extractive.py computes; and the answer set it builds from spans.
import assert from 'node:assert/strict'
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { answerShape, candidateFeatures, ExtractiveReader, passageFields, withoutCitations, wordsAround, type ScoredSpan } from '../reader/extractive-reader.js'
import { splitWords } from '../reader/word-pieces.js'
import { isAmbigqaError } from '../core/errors.js'
import { extractiveFixture } from './helpers/reader-fixture.js'
import { DEFAULT_READER_DIR } from '../core/paths.js'
import { prerequisite } from './helpers/prerequisite.js'

interface Reference {
  max_len: number
  cases: { question: string; passages: { title: string; text: string }[]; input_ids: number[][]; spans: { passage: number; text: string; score: number }[] }[]
}

const fixture = extractiveFixture()
const SHIPPED_EXTRACTIVE = join(DEFAULT_READER_DIR, 'extractive')
const noShippedInt8 = prerequisite(existsSync(join(SHIPPED_EXTRACTIVE, 'model_quantized.onnx')) ? false : `no shipped int8 reader in ${SHIPPED_EXTRACTIVE} (scripts/train-defaults builds it)`)
let reference: Reference
let reader: ExtractiveReader

before(async () => {
  if (fixture.skip) return
  reference = JSON.parse(readFileSync(join(fixture.dir!, 'reference.json'), 'utf8')) as Reference
  reader = await ExtractiveReader.load(fixture.dir!, { precision: 'fp32' }, { maxInputTokens: reference.max_len })
})
after(async () => { await reader?.close() })

const passages = (c: Reference['cases'][number]) => c.passages.map((p, i) => ({ id: `p${i}`, title: p.title, text: p.text, score: 1 }))

test('splitWords: whitespace, each punctuation and CJK character alone, with offsets', () => {
  const text = 'Café Zé: $5.00 (東京)'
  const words = splitWords(text).map((w) => text.slice(w.start, w.end))
  assert.deepEqual(words, ['Café', 'Zé', ':', '$', '5', '.', '00', '(', '東', '京', ')'])
})

function assertSameInputs(r: ExtractiveReader, ref: Reference): void {
  assert.ok(ref.cases.length > 0)
  for (const c of ref.cases) {
    assert.ok(c.input_ids.length > 0)
    c.passages.forEach((p, i) => assert.deepEqual(r.input(c.question, p).ids, c.input_ids[i], `${c.question} / ${p.title}`))
  }
}

async function assertSameSpans(r: ExtractiveReader, ref: Reference): Promise<void> {
  const spans = await r.spans(ref.cases.map((c) => ({ question: c.question, passages: passages(c) })))
  ref.cases.forEach((c, i) => {
    assert.ok(c.spans.length > 0)
    const ours = spans[i]!.slice(0, c.spans.length)
    assert.deepEqual(ours.map((s) => [s.passage, s.text]), c.spans.map((s) => [s.passage, s.text]), c.question)
    ours.forEach((s, j) => assert.ok(Math.abs(s.score - c.spans[j]!.score) < 1e-3, `${s.text}: ${s.score} vs ${c.spans[j]!.score}`))
  })
}

test('inputs are the token ids PyTorch read, truncation included', { skip: fixture.skip }, () => assertSameInputs(reader, reference))

test('spans and scores equal PyTorch best_spans', { skip: fixture.skip }, () => assertSameSpans(reader, reference))

test('a batch of questions reads as each question alone', { skip: fixture.skip }, async () => {
  const items = reference.cases.map((c) => ({ question: c.question, passages: passages(c) }))
  const together = await reader.spans(items)
  for (const [i, item] of items.entries()) {
    const [alone] = await reader.spans([item])
    assert.deepEqual(alone!.map((s) => s.text), together[i]!.map((s) => s.text))
  }
})

// The base-size reader's encoder (MPNet): its pair template (`<s> q </s></s> p </s>`), no token
// types, positions from 2; the fixture's tokenizer writes pairs as all-mpnet-base-v2's does.
test('on an MPNet encoder: the same inputs and best spans as PyTorch', { skip: fixture.skip }, async () => {
  const dir = join(fixture.dir!, 'mpnet')
  const ref = JSON.parse(readFileSync(join(dir, 'reference.json'), 'utf8')) as Reference
  const mpnet = await ExtractiveReader.load(dir, { precision: 'fp32' }, { maxInputTokens: ref.max_len })
  try {
    assertSameInputs(mpnet, ref)
    await assertSameSpans(mpnet, ref)
  } finally {
    await mpnet.close()
  }
})

test('a reader whose graph and config.json disagree about token types is a coded error', { skip: fixture.skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'extractive-mixed-'))
  try {
    // BERT's graph (it reads token_type_ids) under MPNet's config.json and tokenizer.
    for (const name of ['config.json', 'tokenizer.json']) copyFileSync(join(fixture.dir!, 'mpnet', name), join(dir, name))
    copyFileSync(join(fixture.dir!, 'model.onnx'), join(dir, 'model.onnx'))
    await assert.rejects(ExtractiveReader.load(dir, { precision: 'fp32' }), (err: unknown) => isAmbigqaError(err) && err.code === 'AMBIGQA_ERR_MODEL_INVALID' && /token_type_ids/.test(err.message))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

// The shipped int8 model quantises each batch's activations with one scale, so reading another
// question's passages in the same batch changed a question's scores (and answers) with the load.
test('the shipped int8 reader scores a question the same alone and beside others', { skip: noShippedInt8 }, async () => {
  const int8 = await ExtractiveReader.load(SHIPPED_EXTRACTIVE, { precision: 'int8', threads: 1 })
  try {
    const passage = (id: string, title: string, text: string) => ({ id, title, text, score: 1 })
    const items = [
      { question: 'who won the world series in 1989', passages: [passage('a', '1989 World Series', 'The 1989 World Series was the championship series of the 1989 Major League Baseball season. The Oakland Athletics swept the San Francisco Giants in four games.'), passage('b', 'Loma Prieta earthquake', 'The earthquake struck shortly before game 3 of the World Series at Candlestick Park.')] },
      { question: 'what is the capital of australia', passages: [passage('c', 'Canberra', 'Canberra is the capital city of Australia. Founded following the federation of the colonies of Australia as the seat of government for the new nation, it is the largest inland city in Australia and the eighth-largest city overall. The city is located at the northern end of the Australian Capital Territory.'), passage('d', 'Sydney', 'Sydney is the state capital of New South Wales and the most populous city in Australia.')] },
    ]
    const together = await int8.spans(items)
    for (const [i, item] of items.entries()) {
      const [alone] = await int8.spans([item])
      assert.ok(alone!.length > 0)
      assert.deepEqual(together[i]!.map((s) => [s.text, s.score]), alone!.map((s) => [s.text, s.score]), item.question)
    }
  } finally {
    await int8.close()
  }
})

test('passageFields: the title, its echo at the text\'s start, the rest of the text', () => {
  const fields = (title: string, text: string) => { const at = passageFields(title, text); return [...`${title}: ${text}`].map((_, i) => at(i)) }
  const count = (xs: number[], f: number) => xs.filter((x) => x === f).length
  // DPR's first passage of an article: the title, then the article opening with its subject.
  for (const [title, text] of [['Dominic Janes', 'Dominic Janes Dominic Janes (born February 11, 1994)'], ['Fryingpan River', 'Fryingpan River The Fryingpan River is a tributary'],
    ['The Sound of Music', 'The Sound of Music The Sound of Music is a musical'], ['Unchained Melody', 'Unchained Melody "Unchained Melody" is a 1955 song']] as const) {
    const f = fields(title, text)
    assert.equal(count(f, 0), title.length, title)
    assert.equal(count(f, 1), title.length, `${title}: the echo is a field of its own`)
    assert.equal(count(f, -1), 2, `${title}: ': ' between the title and the text`)
    assert.ok(count(f, 2) > 0)
  }
  // A text that opens with its title but no echo: a longer name there stays within one field.
  for (const [title, text] of [['Windows Media Player', 'Windows Media Player 11 is available'], ['Comcast', 'Comcast Corporation, formerly registered'], ['Sun', 'Sun Sunday'], ['Dominic Janes', 'Dominic Janes (born 1994)']] as const) {
    assert.equal(count(fields(title, text), 1), 0, title)
  }
})

test('a span keeps to one field (the demo store\'s "Dominic Janes" passage)', { skip: fixture.skip }, () => {
  // assets/demo/passages.tsv.gz, id 9363987, as the store holds it: the text opens with the title's
  // echo, then the article opens with the name; the reader returned "Dominic Janes Dominic Janes".
  const janes = { id: '9363987', title: 'Dominic Janes', score: 1, text: 'Dominic Janes Dominic Janes (born February 11, 1994) is an American actor. Born Dominic Roque Janes Centorbi in Tucson, Arizona, Janes has had recurring roles in "ER", as Alex Taggart.' }
  const input = reader.input('Who plays the doctor in dexter season 1?', janes)
  const words = input.pieced.words.map((w) => input.pieced.text.slice(w.start, w.end))
  assert.deepEqual(words.slice(0, 7), ['Dominic', 'Janes', ':', 'Dominic', 'Janes', 'Dominic', 'Janes'])
  // Logits that favour the spans across fields above all: the title into the echo, the echo into
  // the article; within one field only the weaker ones.
  const at = (word: number, last = false) => input.passageStart + input.pieced.wordOf.reduce((found, w, k) => (w === word && (last || found < 0) ? k : found), -1)
  const start = new Float32Array(input.ids.length)
  const end = new Float32Array(input.ids.length)
  start[at(0)] = 9
  end[at(4, true)] = 9
  start[at(3)] = 8
  end[at(6, true)] = 8
  start[at(5)] = 5
  end[at(1, true)] = 5
  const spans = reader.scoreSpans([{ input, logits: { start, end, relevance: 0, length: input.ids.length } }])
  assert.ok(spans.length > 0)
  const field = passageFields(janes.title, janes.text)
  for (const s of spans) assert.ok(field(s.start) >= 0 && field(s.start) === field(s.end - 1), `"${s.text}" (${s.start}-${s.end}) crosses fields`)
  const answers = reader.candidates({ question: 'q', passages: [janes] }, spans).map((a) => a.answer)
  // The title, its echo and the article's name are one answer, the first.
  assert.equal(answers[0], 'Dominic Janes')
  assert.equal(answers.filter((a) => a.includes('Dominic Janes')).length, 1, answers.join(' | '))
})

test('candidates: spans merged by normalised text, best first, with evidence; at most `candidates`', { skip: fixture.skip }, () => {
  const item = { question: 'q', passages: [{ id: 'a', title: 'A', text: 'the Oakland Athletics won', score: 1 }, { id: 'b', title: 'B', text: 'Oakland Athletics and Giants', score: 1 }] }
  const span = (passage: number, text: string, p: number): ScoredSpan => ({ passage, start: 0, end: 0, text, score: Math.log(p), local: Math.log(p), inPassage: 0, relevance: 0, passageLogProb: 0 })
  const spans = [span(0, 'Oakland Athletics', 0.3), span(1, 'the Oakland Athletics', 0.2), span(1, 'Giants', 0.2), span(1, 'Athletics', 0.1), span(0, 'won', 0.01)]
  const answers = reader.candidates(item, spans)
  // "the Oakland Athletics" merges into the first (0.5); "Athletics" lies inside it. Which make the set is the decider's.
  assert.deepEqual(answers.map((a) => a.answer), ['Oakland Athletics', 'Giants', 'won'])
  assert.ok(Math.abs(answers[0]!.probability - 0.5) < 1e-9)
  assert.deepEqual(answers[0]!.evidence.map((p) => p.id), ['a', 'b'])
  assert.deepEqual(answers[1]!.evidence.map((p) => p.id), ['b'])
  const saved = reader.options.candidates
  reader.options.candidates = 2
  try {
    assert.deepEqual(reader.candidates(item, spans).map((a) => a.answer), ['Oakland Athletics', 'Giants'])
  } finally {
    reader.options.candidates = saved
  }
})

test('withoutCitations: marks at a span\'s ends cut, a span with one inside left out (spans the reader returned)', () => {
  assert.equal(withoutCitations('Ouagadougou[2]'), 'Ouagadougou')
  assert.equal(withoutCitations('Sylva, North Carolina,[13]'), 'Sylva, North Carolina')
  assert.equal(withoutCitations('Richard Dunne[109]'), 'Richard Dunne')
  assert.equal(withoutCitations('[4] Super Bowl 50'), 'Super Bowl 50')
  assert.equal(withoutCitations('Richard Petty,[5] Dale Earnhardt'), null)
  assert.equal(withoutCitations('Chevrolet Impala coupé[23] Lowrider'), null)
  // Brackets that are not citation marks stay.
  assert.equal(withoutCitations('Louis XIV [of France]'), 'Louis XIV [of France]')
  assert.equal(withoutCitations('U.S.'), 'U.S.')
})

test('candidates: a citation mark is not part of an answer: "Ouagadougou[2]" is "Ouagadougou"', { skip: fixture.skip }, () => {
  const item = { question: 'What is the capital of Burkina Faso?', passages: [{ id: 'a', title: 'Burkina Faso', text: 'Its capital is Ouagadougou[2] and Richard Petty,[5] Dale Earnhardt', score: 1 }, { id: 'b', title: 'Ouagadougou', text: 'Ouagadougou is the capital', score: 1 }] }
  const span = (passage: number, text: string, p: number): ScoredSpan => ({ passage, start: 0, end: 0, text, score: Math.log(p), local: Math.log(p), inPassage: 0, relevance: 0, passageLogProb: 0 })
  const answers = reader.candidates(item, [span(0, 'Ouagadougou[2]', 0.4), span(0, 'Richard Petty,[5] Dale Earnhardt', 0.3), span(1, 'Ouagadougou', 0.2)])
  assert.deepEqual(answers.map((a) => a.answer), ['Ouagadougou'])
  assert.ok(Math.abs(answers[0]!.probability - 0.6) < 1e-9, 'the mark\'s span and the bare one are one answer')
  assert.deepEqual(answers[0]!.evidence.map((p) => p.id), ['a', 'b'])
})

test('candidates: with dropContaining, an answer holding a better one\'s words and more is dropped', { skip: fixture.skip }, () => {
  const item = { question: 'q', passages: [{ id: 'a', title: 'A', text: 'the American League (AL) champion Oakland Athletics and the Giants', score: 1 }] }
  const span = (text: string, p: number): ScoredSpan => ({ passage: 0, start: 0, end: 0, text, score: Math.log(p), local: Math.log(p), inPassage: 0, relevance: 0, passageLogProb: 0 })
  const spans = [span('Oakland Athletics', 0.4), span('American League (AL) champion Oakland Athletics', 0.3), span('Giants', 0.2)]
  assert.deepEqual(reader.candidates(item, spans).map((a) => a.answer), ['Oakland Athletics', 'American League (AL) champion Oakland Athletics', 'Giants'])
  const saved = reader.options.dropContaining
  reader.options.dropContaining = true
  try {
    assert.deepEqual(reader.candidates(item, spans).map((a) => a.answer), ['Oakland Athletics', 'Giants'])
    // Only a better answer's words count: a longer answer ranked first keeps the shorter one out (cut short) as before.
    assert.deepEqual(reader.candidates(item, [span('American League (AL) champion Oakland Athletics', 0.4), span('Oakland Athletics', 0.3)]).map((a) => a.answer), ['American League (AL) champion Oakland Athletics'])
  } finally {
    reader.options.dropContaining = saved
  }
})

test('candidates: a span cut across a bracket or a quotation mark is never an answer', { skip: fixture.skip }, () => {
  const item = { question: 'q', passages: [{ id: 'a', title: 'A', text: 'Bob Brown (aka Captain Rock) sang "Baker Street" first', score: 1 }] }
  const span = (text: string, p: number): ScoredSpan => ({ passage: 0, start: 0, end: 0, text, score: Math.log(p), local: Math.log(p), inPassage: 0, relevance: 0, passageLogProb: 0 })
  const answers = reader.candidates(item, [span('Bob Brown (aka Captain Rock', 0.4), span('"Baker', 0.3), span('Bob Brown', 0.2), span('Captain Rock)', 0.2), span('"Baker Street"', 0.1)])
  assert.deepEqual(answers.map((a) => a.answer), ['Bob Brown', '"Baker Street"'])
})

test('rankPrior: the retriever\'s order weighs in as -rankPrior * ln(rank) on each passage score', { skip: fixture.skip }, async () => {
  const c = reference.cases.find((x) => x.passages.length > 1)!
  assert.ok(c, 'a reference case with several passages')
  const [read] = await reader.readPassages([{ question: c.question, passages: passages(c) }])
  const plain = reader.scoreSpans(read!)
  Object.assign(reader.options, { rankPrior: 2 })
  try {
    const weighed = reader.scoreSpans(read!)
    // Every span keeps its text; a span of the passage ranked r moves by -2 ln(r) less the shift of the normaliser.
    const key = (s: ScoredSpan) => `${s.passage}:${s.start}:${s.end}`
    const before = new Map(plain.map((s) => [key(s), s.score]))
    const shift = (s: ScoredSpan) => s.score - before.get(key(s))!
    const first = weighed.filter((s) => s.passage === 0)
    const second = weighed.filter((s) => s.passage === 1)
    assert.ok(first.length > 0 && second.length > 0)
    assert.ok(Math.abs(shift(second[0]!) - shift(first[0]!) + 2 * Math.log(2)) < 1e-6)
  } finally {
    Object.assign(reader.options, { rankPrior: 0 })
  }
})

test('a folder without the model is a coded error naming the command that builds it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ambigqa-extractive-'))
  try {
    await assert.rejects(ExtractiveReader.load(dir), (e: unknown) => isAmbigqaError(e) && e.code === 'AMBIGQA_ERR_MODEL_MISSING' && /train-defaults/.test(e.message))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('candidate features: its own passage\'s view of it, over every passage it was read from', () => {
  const span = (passage: number, local: number, inPassage: number, relevance: number): ScoredSpan => ({ passage, start: 0, end: 0, text: 'x', score: local - 3, local, inPassage, relevance, passageLogProb: -relevance })
  const f = candidateFeatures([span(2, -0.5, 0, 1.5), span(4, -2, 1, 3), span(4, -3, 2, 3)], 2, 1)
  assert.equal(f.bestLocal, -0.5)
  assert.equal(f.passage, 2, 'the passage of its best local span')
  assert.ok(Math.abs(f.localMass! - (Math.exp(-0.5) + Math.exp(-2))) < 1e-12, 'each passage counted once, by its best span')
  assert.deepEqual([f.bestInPassage, f.bestRelevance, f.spanPassages, f.topSpanPassages, f.holdingPassages, f.words], [0, 3, 2, 1, 1, 2])
  assert.equal(f.firstSpanPassage, Math.log1p(2))
})

test('answer shape: the kind of answer the question asks for, words of the question, a passage title', () => {
  const when = answerShape('When did the Harry Potter movie come out?', 'November 16, 2001', new Set())
  assert.deepEqual([when.askWhen, when.hasDigit, when.whenDate, when.askWho], [1, 1, 1, 0])
  const who = answerShape('who sang baker street', 'Gerry Rafferty', new Set(['gerry rafferty']))
  assert.deepEqual([who.askWho, who.capitalised, who.whoName, who.titleMatch, who.inQuestion], [1, 1, 1, 1, 0])
  assert.equal(answerShape('how many teams play in the world cup', 'world cup teams', new Set()).inQuestion, 1)
  assert.equal(answerShape('how many teams play in the world cup', '32', new Set()).howManyNumber, 1)
})

test('wordsAround: whole words on each side of a span, the window opening the text when the span lies in the title', () => {
  const text = 'one two three four five six seven'
  const at = text.indexOf('four')
  assert.equal(wordsAround(text, at, at + 4, 1), 'three four five')
  assert.equal(wordsAround(text, at, at + 'four five'.length, 2), 'two three four five six seven')
  assert.equal(wordsAround(text, 0, 3, 1), 'one two')
  assert.equal(wordsAround(text, text.length - 5, text.length, 1), 'six seven')
  // A span in "Title: " before the text (negative offsets) opens the text.
  assert.equal(wordsAround(text, -7, -2, 2), 'one two three')
  assert.equal(wordsAround('', 0, 1, 3), '')
})

test('candidates: each carries the words around its best span (its own passage\'s view), for the verifier', { skip: fixture.skip }, () => {
  const item = { question: 'q', passages: [{ id: 'a', title: 'A', text: 'x y the Giants won it', score: 1 }, { id: 'b', title: 'B', text: 'then Giants', score: 1 }] }
  // Offsets are into `title: text`: "Giants" in passage a starts at 3 + 'x y the '.length.
  const at = 3 + 'x y the '.length
  const spans: ScoredSpan[] = [
    { passage: 1, start: 3 + 5, end: 3 + 11, text: 'Giants', score: Math.log(0.5), local: Math.log(0.3), inPassage: 0, relevance: 0, passageLogProb: 0 },
    { passage: 0, start: at, end: at + 6, text: 'Giants', score: Math.log(0.2), local: Math.log(0.9), inPassage: 0, relevance: 0, passageLogProb: 0 },
  ]
  const [answer] = reader.candidates(item, spans)
  assert.deepEqual(answer!.window, { title: 'A', text: 'x y the Giants won it' }, 'the best local span is in passage a; 30 words each side hold it all')
})
