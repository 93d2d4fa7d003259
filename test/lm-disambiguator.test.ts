// Question disambiguation by the pretrained decoder (assets/models/qd-lm: Gemma 3 270M from
// `scripts/assets lm-base` + the shipped LoRA adapter, run by llama.cpp): a real question with
// two real answers gets one checked rewrite per answer, a single answer keeps the prompt, and a
// missing or wrong base is a coded error that names the command that fetches it.
import assert from 'node:assert/strict'
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { DEFAULT_LM_BASE_DIR, DEFAULT_READER_DIR } from '../core/paths.js'
import { LlamaLm, lookupDraft, readLmFolder } from '../reader/generation/llama-lm.js'
import { LmDisambiguator } from '../reader/lm-disambiguator.js'
import type { RetrievedPassage } from '../core/retriever.js'
import { prerequisite } from './helpers/prerequisite.js'

const folder = join(DEFAULT_READER_DIR, 'qd-lm')
const base = existsSync(join(folder, 'lm.json')) ? join(DEFAULT_LM_BASE_DIR, readLmFolder(folder).base.file) : ''
const skip = prerequisite(!existsSync(base) ? `needs the decoder's base model ${base || 'models/base'}: run scripts/assets lm-base` : false)
let lm: LlamaLm
let qd: LmDisambiguator
// Prompt-lookup decoding (reader.qdLookahead 3), and the adapter applied at run time (unmerged).
let lookahead: LmDisambiguator
let unmerged: LmDisambiguator

before(async () => {
  if (skip) return
  lm = await LlamaLm.load(folder, { threads: 1 })
  qd = new LmDisambiguator(lm)
  lookahead = new LmDisambiguator(await LlamaLm.load(folder, { threads: 1, lookahead: 3 }))
  unmerged = new LmDisambiguator(await LlamaLm.load(folder, { threads: 1, merge: false }))
})
after(async () => { if (!skip) { await lm.close(); await lookahead.lm.close(); await unmerged.lm.close() } })

test('the lookup draft is what followed the longest tail of the written tokens in the prompt, latest first', () => {
  const source = [1, 2, 3, 4, 9, 2, 3, 5, 6, 7]
  assert.deepEqual(lookupDraft(source, [2, 3], 3), [5, 6, 7], 'the latest of two equal matches')
  assert.deepEqual(lookupDraft(source, [1, 2, 3], 3), [4, 9, 2], 'the longer match wins')
  assert.deepEqual(lookupDraft(source, [6], 8), [7], 'cut at the end of the prompt')
  assert.deepEqual(lookupDraft(source, [8], 3), [], 'nothing to copy')
  assert.deepEqual(lookupDraft(source, [7], 3), [], 'the prompt\'s last token has nothing after it')
  assert.deepEqual(lookupDraft(source, [2, 3], 0), [])
})

const passage = (id: string, title: string, text: string): RetrievedPassage => ({ id, title, text, score: 1 })

for (const decoding of ['one token a step', 'prompt lookup', 'the adapter applied at run time']) {
  test(`two answers get one checked rewrite each, in English, keeping the prompt's words (${decoding})`, { skip, timeout: 120_000 }, async () => {
    const disambiguator = decoding === 'prompt lookup' ? lookahead : decoding === 'one token a step' ? qd : unmerged
    const item = {
      question: 'When did the harry potter movie come out?',
      answers: ['16 November 2001', '4 November 2001'],
      passages: [passage('1', "Harry Potter and the Philosopher's Stone (film)", "The film was released to cinemas in the United Kingdom and the United States on 16 November 2001, after its world premiere in London on 4 November 2001.")],
    }
    const [rewrites] = await disambiguator.disambiguate([item])
    assert.equal(rewrites!.length, 2)
    for (const r of rewrites!) {
      assert.ok(r.proposal.length > 0, 'the model proposed a rewrite')
      assert.ok(!r.proposal.includes('\n'))
      if (r.rewritten) {
        assert.notEqual(r.question.toLowerCase(), item.question.toLowerCase())
        for (const w of ['harry', 'potter']) assert.ok(r.question.toLowerCase().includes(w), `"${r.question}" keeps "${w}"`)
      } else {
        assert.equal(r.question, item.question, 'a refused rewrite answers with the prompt')
      }
    }
    // Greedy: the same item gives the same rewrites.
    const [again] = await disambiguator.disambiguate([item])
    assert.deepEqual(again, rewrites)
  })
}

test('on the merged model, prompt lookup writes greedy\'s lines token for token', { skip, timeout: 120_000 }, async () => {
  const items = [
    { question: 'Who sang still crazy after all these years?', answers: ['Paul Simon', 'Ray Charles'], passages: [passage('2', 'Still Crazy After All These Years (song)', 'Still Crazy After All These Years is a song by Paul Simon, the title track of his 1975 album. Ray Charles recorded a cover version in 1993.')] },
    { question: 'When did the harry potter movie come out?', answers: ['16 November 2001', '4 November 2001'], passages: [] },
  ]
  const plain = await qd.disambiguate(items)
  const fast = await lookahead.disambiguate(items)
  assert.equal(plain.flat().length, 4)
  assert.deepEqual(fast.map((r) => r.map((x) => x.proposal)), plain.map((r) => r.map((x) => x.proposal)))
})

test('a missing base is AMBIGQA_ERR_MODEL_MISSING naming scripts/assets lm-base; a different file is refused', { skip }, async () => {
  const empty = mkdtempSync(join(tmpdir(), 'lm-base-'))
  try {
    await assert.rejects(LlamaLm.load(folder, { baseDir: empty }), (e: Error & { code?: string }) => e.code === 'AMBIGQA_ERR_MODEL_MISSING' && e.message.includes('scripts/assets lm-base'))
    writeFileSync(join(empty, readLmFolder(folder).base.file), 'not the model')
    await assert.rejects(LlamaLm.load(folder, { baseDir: empty }), (e: Error & { code?: string }) => e.code === 'AMBIGQA_ERR_MODEL_INVALID' && e.message.includes('sha256'))
    const copy = join(empty, 'qd-lm')
    cpSync(folder, copy, { recursive: true })
    writeFileSync(join(copy, 'lm.json'), '{"format": "something else"}')
    assert.throws(() => readLmFolder(copy), (e: Error & { code?: string }) => e.code === 'AMBIGQA_ERR_MODEL_INVALID')
    writeFileSync(join(copy, 'lm.json'), JSON.stringify({ ...readLmFolder(folder), serve: 'sideways' }))
    assert.throws(() => readLmFolder(copy), (e: Error & { code?: string }) => e.code === 'AMBIGQA_ERR_MODEL_INVALID' && e.message.includes('serve'))
  } finally {
    rmSync(empty, { recursive: true, force: true })
  }
})

test('lm.json decides how the adapter is served: `serve: adapter` applies it at run time, no merged copy made', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lm-serve-'))
  try {
    const spec = readLmFolder(folder)
    assert.equal(spec.serve, 'merged')
    symlinkSync(base, join(dir, spec.base.file))
    const copy = join(dir, 'qd-lm')
    cpSync(folder, copy, { recursive: true })
    writeFileSync(join(copy, 'lm.json'), JSON.stringify({ ...spec, serve: 'adapter' }))
    const applied = await LlamaLm.load(copy, { threads: 1, baseDir: dir })
    await applied.close()
    assert.equal(existsSync(join(dir, 'merged')), false)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
