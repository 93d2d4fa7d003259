// The seq2seq reader against transformers itself: a tiny real model made and exported by train/
// (test/helpers/reader-fixture.ts) whose reference.json holds transformers' own `generate`
// outputs for greedy, beam search (length penalty, no-repeat n-grams, early stopping, several
// returned sequences, forced EOS) and forced decoder prefixes, one by one and in padded batches.
import assert from 'node:assert/strict'
import { cpSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, test } from 'node:test'
import { pino } from 'pino'
import { BatchQueue } from '../reader/batch-queue.js'
import { generate, type GenerateRequest } from '../reader/generation/generate.js'
import type { GenerationOptions } from '../reader/generation/generation-options.js'
import { splitOnSeparator, SpanSeqGen } from '../reader/span-seq-gen.js'
import { QuestionDisambiguator } from '../reader/question-disambiguator.js'
import { QuestionDisambiguation } from '../reader/question-disambiguation.js'
import { defaults } from '../core/config.js'
import type { Read } from '../core/stages.js'
import { Seq2SeqModel } from '../reader/generation/seq2seq-model.js'
import { isAmbigqaError } from '../core/errors.js'
import { hasAnswer } from '../core/has-answer.js'
import { readerFixture } from './helpers/reader-fixture.js'
import { DEFAULT_READER_DIR } from '../core/paths.js'
import { prerequisite } from './helpers/prerequisite.js'

interface ReferenceOutput {
  input_index: number
  tokens: number[]
  sequence: number[]
  sequence_score?: number
  sum_transition_scores: number
  answers: string[]
}
interface ReferenceCase {
  name: string
  setting: string
  batch_size: number
  inputs: string[]
  input_ids: number[][]
  decoder_input_ids: number[][] | null
  generation: Record<string, unknown>
  outputs: ReferenceOutput[]
}
interface Reference {
  cases: ReferenceCase[]
  onnxruntime_greedy?: Record<string, { cases: { case: string; optimum_equal: boolean; optimum_tokens?: number[][] }[] }>
}

const fixture = readerFixture()
let reference: Reference
let model: Seq2SeqModel

before(async () => {
  if (fixture.skip) return
  reference = JSON.parse(readFileSync(join(fixture.dir!, 'reference.json'), 'utf8')) as Reference
  model = await Seq2SeqModel.load(fixture.dir!, { precision: 'fp32' })
})
after(async () => { await model?.close() })

function optionsOf(g: Record<string, unknown>): GenerationOptions {
  const options: GenerationOptions = {
    numBeams: g.num_beams as number,
    // The recorded max_length is the effective one (prompt + max_new_tokens where that was given).
    maxLength: g.max_length as number,
    minLength: (g.min_length as number | null) ?? 0,
    lengthPenalty: g.length_penalty as number,
    noRepeatNgramSize: (g.no_repeat_ngram_size as number | null) ?? 0,
    earlyStopping: g.early_stopping as boolean | 'never',
    numReturnSequences: g.num_return_sequences as number,
  }
  if (typeof g.forced_eos_token_id === 'number') options.forcedEosTokenId = g.forced_eos_token_id
  if (typeof g.forced_bos_token_id === 'number') options.forcedBosTokenId = g.forced_bos_token_id
  return options
}

function requestsOf(c: ReferenceCase): GenerateRequest[] {
  return c.input_ids.map((input, i) => ({ input, ...(c.decoder_input_ids ? { prefix: c.decoder_input_ids[i]!.slice(1) } : {}) }))
}

test('the JS tokenizer gives the Python tokenizer\'s ids for every fixture input', { skip: fixture.skip }, () => {
  let n = 0
  for (const c of reference.cases) {
    c.inputs.forEach((text, i) => {
      assert.deepEqual(model.tokenizer.encode(text), c.input_ids[i], text)
      n++
    })
  }
  assert.ok(n > 10)
})

test('greedy and beam search give transformers\' tokens and scores, one by one and batched', { skip: fixture.skip }, async () => {
  const settings = new Set<string>()
  for (const c of reference.cases) {
    const options = optionsOf(c.generation)
    const got = await generate(model, requestsOf(c), options)
    const flat = got.flat()
    assert.equal(flat.length, c.outputs.length, c.name)
    c.outputs.forEach((want, r) => {
      const hyp = flat[r]!
      assert.deepEqual(hyp.tokens, want.tokens, `${c.name} output ${r}`)
      const score = want.sequence_score ?? want.sum_transition_scores
      assert.ok(Math.abs(hyp.score - score) < 1e-3, `${c.name} output ${r}: score ${hyp.score} vs ${score}`)
      // The reference splits everything after the start token, a forced prefix's answers included.
      const afterStart = hyp.tokens.slice(1).filter((t) => !model.config.eosTokenIds.includes(t))
      assert.deepEqual(splitOnSeparator(afterStart, model.tokenizer.tokenId('<SEP>')!).map((piece) => model.tokenizer.decode(piece).trim()), want.answers, `${c.name} answers`)
    })
    settings.add(c.setting)
  }
  for (const s of ['greedy', 'beam4', 'beam4_lp2_nr2', 'beam4_return4', 'beam4_max6', 'greedy_max6_forced_eos', 'beam4_max6_forced_eos', 'prefix_greedy', 'prefix_beam4']) {
    assert.ok(settings.has(s), `reference has no ${s} case`)
  }
})

test('without the KV cache (recomputing the decoder) the tokens are the same', { skip: fixture.skip }, async () => {
  for (const c of reference.cases.filter((x) => x.setting === 'beam4_lp2_nr2' || x.setting === 'prefix_greedy')) {
    const cached = await generate(model, requestsOf(c), optionsOf(c.generation))
    const recomputed = await generate(model, requestsOf(c), optionsOf(c.generation), { useCache: false })
    assert.deepEqual(recomputed.map((h) => h.map((x) => x.tokens)), cached.map((h) => h.map((x) => x.tokens)), c.name)
  }
})

test('int8: loads the quantised files and matches onnxruntime-python on the same int8 graphs', { skip: fixture.skip }, async () => {
  const int8 = await Seq2SeqModel.load(fixture.dir!, { precision: 'int8' })
  try {
    const rows = reference.onnxruntime_greedy?.int8?.cases ?? []
    assert.ok(rows.length > 0, 'reference.json has int8 onnxruntime results')
    for (const row of rows) {
      const c = reference.cases.find((x) => x.name === row.case)!
      const want = row.optimum_tokens ?? c.outputs.map((o) => o.sequence)
      const got = await generate(int8, requestsOf(c), optionsOf(c.generation))
      got.forEach((h, i) => assert.deepEqual(h[0]!.tokens, want[i]!.slice(0, h[0]!.tokens.length), c.name))
    }
  } finally {
    await int8.close()
  }
})

// Without onnxruntime's CUDA provider library (scripts/install sets ONNXRUNTIME_NODE_INSTALL=skip,
// so it is never fetched) a CUDA session cannot be made, whatever the hardware.
const ORT_BIN = join(dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json')), 'bin', 'napi-v6', process.platform, process.arch)
const cudaProvider = existsSync(join(ORT_BIN, 'libonnxruntime_providers_cuda.so'))

test('device cuda on a machine without it: one warning, then the CPU, same tokens', { skip: fixture.skip }, async () => {
  const lines: string[] = []
  const logger = pino({ level: 'warn' }, { write: (line: string) => { lines.push(line) } })
  const c = reference.cases.find((x) => x.setting === 'greedy')!
  // Two loads: the first tries CUDA and warns; the second goes to the CPU without a word.
  for (let i = 0; i < 2; i++) {
    const onCuda = await Seq2SeqModel.load(fixture.dir!, { precision: 'fp32', device: 'cuda', logger })
    try {
      const got = await generate(onCuda, requestsOf(c), optionsOf(c.generation))
      assert.deepEqual(got[0]![0]!.tokens, c.outputs[0]!.tokens)
    } finally {
      await onCuda.close()
    }
  }
  if (cudaProvider) {
    // The provider is installed: a GPU may or may not be there, but never more than one warning.
    assert.ok(lines.length <= 1, lines.join('\n'))
  } else {
    assert.equal(lines.length, 1, `one warning for the process, got: ${lines.join('\n')}`)
    assert.match(JSON.parse(lines[0]!).msg as string, /^device cuda is not usable here \(.*\); running the model on the CPU/)
  }
})

test('missing or inconsistent model files: errors that name the file and the command that makes it', { skip: fixture.skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'reader-model-'))
  try {
    cpSync(realpathSync(fixture.dir!), dir, { recursive: true })
    rmSync(join(dir, 'encoder_model.onnx'))
    await assert.rejects(Seq2SeqModel.load(dir), (e: unknown) => isAmbigqaError(e) && e.code === 'AMBIGQA_ERR_MODEL_MISSING' && e.message.includes('encoder_model.onnx') && e.message.includes('ambigqa train export seq2seq'))
    cpSync(join(fixture.dir!, 'encoder_model.onnx'), join(dir, 'encoder_model.onnx'))
    for (const f of ['decoder_model_merged.onnx', 'decoder_with_past_model.onnx']) rmSync(join(dir, f))
    await assert.rejects(Seq2SeqModel.load(dir), (e: unknown) => isAmbigqaError(e) && e.code === 'AMBIGQA_ERR_MODEL_MISSING' && e.message.includes('decoder_with_past_model.onnx'))
    for (const f of ['decoder_model_merged_quantized.onnx', 'decoder_with_past_model_quantized.onnx']) rmSync(join(dir, f))
    await assert.rejects(Seq2SeqModel.load(dir, { precision: 'int8' }), (e: unknown) => isAmbigqaError(e) && e.message.includes('decoder_with_past_model_quantized.onnx'))
    cpSync(join(fixture.dir!, 'decoder_model_merged.onnx'), join(dir, 'decoder_model_merged.onnx'))
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, decoder_layers: 5 }))
    await assert.rejects(Seq2SeqModel.load(dir), (e: unknown) => isAmbigqaError(e) && e.code === 'AMBIGQA_ERR_MODEL_INVALID' && /2 cached decoder layers but config.json says 5/.test(e.message))
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, vocab_size: 100 }))
    await assert.rejects(Seq2SeqModel.load(dir), (e: unknown) => isAmbigqaError(e) && /tokens but config.json's vocab_size is 100/.test(e.message))
    writeFileSync(join(dir, 'config.json'), '{ not json')
    await assert.rejects(Seq2SeqModel.load(dir), (e: unknown) => isAmbigqaError(e) && e.code === 'AMBIGQA_ERR_MODEL_INVALID' && e.message.includes('config.json'))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

const passage = (id: string, title: string, text: string) => ({ id, title, text, score: 1 })
const worldSeries = [
  passage('1', 'World Series', 'The 1989 World Series was played between the Oakland Athletics and the San Francisco Giants.'),
  passage('2', 'Oakland Athletics', 'The Oakland Athletics won the 1989 World Series in four games.'),
]

test('SpanSeqGen: known answers forced as the prefix come first, answers are distinct, evidence contains them', { skip: fixture.skip }, async () => {
  const reader = new SpanSeqGen(model, { maxInputTokens: 256, generation: { numBeams: 1, maxLength: 24 } })
  const passages = worldSeries
  const [answers] = await reader.read([{ question: 'who played in the world series in 1989', passages, knownAnswers: ['Oakland Athletics', 'oakland athletics'] }])
  assert.ok(answers!.length >= 1)
  assert.equal(answers![0]!.answer, 'Oakland Athletics', 'the forced answer, in the evidence\'s casing, once')
  assert.deepEqual(answers![0]!.evidence.map((p) => p.id), ['1', '2'])
  const keys = answers!.map((a) => a.answer.toLowerCase())
  assert.equal(new Set(keys).size, keys.length)
  for (const a of answers!) assert.ok(a.probability > 0 && a.probability <= 1)
})

// Questions and passages like the fixture's training examples (train/tests/fixture.py
// BUILTIN), so that the tiny model reads them the same on every machine.
const microsoft = [
  passage('1', 'Microsoft', 'Microsoft was founded by Bill Gates and Paul Allen on April 4, 1975, in Albuquerque, New Mexico.'),
  passage('2', 'Bill Gates', 'Bill Gates founded Microsoft with his childhood friend Paul Allen.'),
  passage('3', 'Volcano', 'Mount Etna erupted loudly over Catania.'),
]

test('readEach: the top passages read one at a time, answers pooled best first; known answers still read jointly', { skip: fixture.skip }, async () => {
  const passages = microsoft
  const question = 'who founded microsoft'
  const options = { maxInputTokens: 256, constrainToPassages: true, generation: { numBeams: 1, maxLength: 24 }, readEach: 2 }
  const [pooled] = await new SpanSeqGen(model, { ...options, poolKeep: 0 }).read([{ question, passages }])
  assert.ok(pooled!.length >= 1, 'the passages that answer the question give answers')
  for (const a of pooled!) {
    assert.ok(a.probability > 0 && a.probability <= 1)
    assert.ok(hasAnswer(passages.slice(0, 2).map((p) => `${p.title} ${p.text}`).join(' '), [a.answer]), `'${a.answer}' comes from a passage read`)
    assert.ok(a.evidence.length > 0 && a.evidence.every((p) => p.id !== '3'), `'${a.answer}': evidence from the passages read`)
  }
  const probabilities = pooled!.map((a) => a.probability)
  assert.deepEqual(probabilities, [...probabilities].sort((a, b) => b - a), 'best pooled score first')
  const [best] = await new SpanSeqGen(model, { ...options, poolKeep: 1 }).read([{ question, passages }])
  assert.ok(best!.length >= 1)
  assert.deepEqual(best!.map((a) => a.answer), pooled!.filter((a) => a.probability === pooled![0]!.probability).map((a) => a.answer))
  const [known] = await new SpanSeqGen(model, { ...options, poolKeep: 0 }).read([{ question, passages, knownAnswers: ['Paul Allen'] }])
  assert.ok(known!.length >= 1)
  assert.equal(known![0]!.answer, 'Paul Allen')
  assert.equal(known![0]!.probability, 1)
})

test('span-constrained decoding only produces spans of the passages, in whole words', { skip: fixture.skip }, async () => {
  const reader = new SpanSeqGen(model, { maxInputTokens: 256, constrainToPassages: true, generation: { numBeams: 4, maxLength: 24 } })
  const c = reference.cases.find((x) => x.setting === 'beam4')!
  const input = c.inputs[0]!
  const [question, ...rest] = input.split(' [SEP] ')
  const [title, ...text] = rest.join(' [SEP] ').split(': ')
  const passages = [passage('p', title!, text.join(': '))]
  const [answers] = await reader.read([{ question: question!, passages }])
  const ids = reader.input({ question: question!, passages })
  assert.ok(answers!.length > 0, 'the fixture model answers its own reference input')
  for (const a of answers!) {
    const tokens = model.tokenizer.encodePlain(a.answer.toLowerCase())
    const whole = (i: number) => !model.tokenizer.continuesWord(ids[i]!) && !model.tokenizer.continuesWord(ids[i + tokens.length] ?? 0)
    const found = ids.some((_, i) => tokens.every((t, j) => ids[i + j] === t) && whole(i))
    assert.ok(found, `'${a.answer}' is not a span of whole words of the input`)
  }
})

test('the tokenizer knows WordPiece continuation pieces', { skip: fixture.skip }, () => {
  const pieces = model.tokenizer.encodePlain('unaffable')
  assert.ok(pieces.length > 1, 'a rare word splits into pieces')
  assert.equal(model.tokenizer.continuesWord(pieces[0]!), false)
  for (const id of pieces.slice(1)) assert.equal(model.tokenizer.continuesWord(id), true)
})

test('question disambiguation: one rewrite per answer; the stage keeps the prompt for one answer', { skip: fixture.skip }, async () => {
  const qd = new QuestionDisambiguator(model, { generation: { numBeams: 1, maxLength: 20 } })
  const passages = [passage('1', 'Harry Potter', 'The first film premiered in London on 4 November 2001 and was released on 16 November 2001.')]
  const [several] = await qd.disambiguate([{ question: 'when did the harry potter movie come out', answers: ['4 November 2001', '16 November 2001'], passages }])
  assert.equal(several!.length, 2)
  for (const r of several!) {
    // Returned only when it passed the checks, else the prompt marked as not rewritten.
    if (r.rewritten) assert.notEqual(r.question, 'when did the harry potter movie come out')
    else assert.equal(r.question, 'when did the harry potter movie come out')
  }
  // "Fewer than two answers, no rewrite" is the stage's rule alone: the model is not asked.
  const stage = await QuestionDisambiguation.open({ ...defaults.reader, qd: fixture.dir!, precision: 'fp32', threads: 1 })
  try {
    const read = (answers: string[]): Read => ({
      question: 'who wrote harry potter', retrieve: 1, read: 1, passages, reranked: passages, timings: { retrievalMs: 0, totalMs: 0 },
      answers: answers.map((answer) => ({ answer, confidence: 0.9, evidence: passages })),
    })
    const one = await stage.run(read(['J. K. Rowling']))
    assert.deepEqual(one.answers.map((a) => [a.answer, a.question, a.rewritten]), [['J. K. Rowling', 'who wrote harry potter', false]])
    assert.deepEqual((await stage.run(read([]))).answers, [])
  } finally {
    await stage.close()
  }
})

test('question disambiguation batched across questions gives each question what it gets alone (fp32; a long prompt beside a short one)', { skip: fixture.skip }, async () => {
  // maxInserted 4 with the model's 20: the long prompt's own maxLength is over 20, the short one's
  // is 20, and neither may be decoded at the other's length.
  const qd = new QuestionDisambiguator(model, { candidates: 4, maxInserted: 4, evidenceVocabulary: true, generation: { maxLength: 20 } })
  const passages = [passage('1', 'Harry Potter', 'The first film premiered in London on 4 November 2001 and was released in the United Kingdom and the United States on 16 November 2001.')]
  const items = [
    { question: 'when did the first harry potter movie based on the book by j k rowling come out in the cinemas of the united kingdom', answers: ['4 November 2001', '16 November 2001'], passages },
    { question: 'when did harry potter come out', answers: ['16 November 2001', 'United Kingdom', '4 November 2001'], passages },
  ]
  assert.ok(model.tokenizer.encodePlain(items[0]!.question).length + 6 > 20, 'the long prompt needs more than the default length')
  const together = await qd.disambiguate(items)
  const alone = [(await qd.disambiguate([items[0]!]))[0]!, (await qd.disambiguate([items[1]!]))[0]!]
  assert.deepEqual(together.map((set) => set.length), [2, 3])
  assert.ok(together.flat().some((r) => r.proposal.length > 0), 'the model proposed rewrites')
  assert.deepEqual(together, alone)
})

// The shipped int8 model quantises each batch's activations with one scale: batched with another
// question's answers, a question's rewrites changed with the load until each question was generated alone.
test('the shipped int8 question disambiguation rewrites a question the same alone and beside others', { skip: prerequisite(existsSync(join(DEFAULT_READER_DIR, 'qd', 'encoder_model_quantized.onnx')) ? false : `no shipped int8 QD model in ${join(DEFAULT_READER_DIR, 'qd')} (scripts/train-defaults builds it)`) }, async () => {
  const shipped = await Seq2SeqModel.load(join(DEFAULT_READER_DIR, 'qd'), { precision: 'int8', threads: 1 })
  try {
    const qd = new QuestionDisambiguator(shipped)
    const items = [
      { question: 'when did the harry potter movie come out', answers: ['4 November 2001', '16 November 2001'], passages: [passage('1', 'Harry Potter and the Philosopher\'s Stone (film)', 'The film premiered in London on 4 November 2001 and was released in the United Kingdom and the United States on 16 November 2001.')] },
      { question: 'who played in the world series in 1989', answers: ['Oakland Athletics', 'San Francisco Giants'], passages: [passage('2', '1989 World Series', 'The 1989 World Series was played between the Oakland Athletics and the San Francisco Giants, and was interrupted by the Loma Prieta earthquake.')] },
    ]
    const together = await qd.disambiguate(items)
    const alone = [(await qd.disambiguate([items[0]!]))[0]!, (await qd.disambiguate([items[1]!]))[0]!]
    assert.ok(together.flat().every((r) => r.proposal.length > 0), 'the model proposed a rewrite for every answer')
    assert.deepEqual(together, alone)
  } finally {
    await shipped.close()
  }
})

test('the batch queue runs concurrent requests together, up to maxBatch, and drops aborted ones', async () => {
  const batches: number[][] = []
  const queue = new BatchQueue<number, number>(async (items) => { batches.push(items); return items.map((x) => x * 10) }, 2)
  const aborted = new AbortController()
  const results = Promise.all([1, 2, 3].map((x) => queue.submit(x)))
  const dropped = assert.rejects(queue.submit(4, aborted.signal), /client went away/)
  aborted.abort(new Error('client went away'))
  await dropped
  assert.deepEqual(await results, [10, 20, 30])
  assert.deepEqual(batches, [[1, 2], [3]])
})

test('the batch queue hands the abort on: a running batch is aborted when every request in it was, and each aborted request is answered at once', async () => {
  const seen: AbortSignal[] = []
  let finish!: () => void
  const queue = new BatchQueue<number, number>((items, signal) => {
    seen.push(signal)
    return new Promise((resolve) => { finish = () => resolve(items.map((x) => x * 10)) })
  }, 2)
  const [a, b] = [new AbortController(), new AbortController()]
  const first = queue.submit(1, a.signal)
  const second = queue.submit(2, b.signal)
  await new Promise((r) => setImmediate(r))
  assert.equal(seen.length, 1, 'the batch of two runs')
  a.abort(new Error('first went away'))
  await assert.rejects(first, /first went away/, 'answered at once, before the batch ends')
  assert.equal(seen[0]!.aborted, false, 'the other request still wants its answer')
  b.abort(new Error('second went away'))
  await assert.rejects(second, /second went away/)
  assert.equal(seen[0]!.aborted, true, 'nobody waits for the batch now: its work is told to stop')
  finish()
  // A request without a signal never aborts its batch.
  const plain = queue.submit(3)
  await new Promise((r) => setImmediate(r))
  finish()
  assert.equal(await plain, 30)
  assert.equal(seen[1]!.aborted, false)
})
