// The cross-encoder reranker against torch: a tiny BERT cross-encoder made and exported by
// train/ (the reader fixture's cross-encoder/ folder) with torch's logits for real pairs, some
// long enough that the passage is cut.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { CrossEncoderReranker } from '../retriever/cross-encoder-reranker.js'
import { isAmbigqaError } from '../core/errors.js'
import { readerFixture } from './helpers/reader-fixture.js'

interface Pair { question: string; title: string; text: string; logit: number }
const fixture = readerFixture()

function reference(): { dir: string; maxLen: number; pairs: Pair[] } {
  const ref = JSON.parse(readFileSync(join(fixture.dir!, 'reference.json'), 'utf8')) as { cross_encoder: { dir: string; max_len: number; pairs: Pair[] } }
  return { dir: join(fixture.dir!, ref.cross_encoder.dir), maxLen: ref.cross_encoder.max_len, pairs: ref.cross_encoder.pairs }
}

test('scores equal torch\'s logits (passages cut to the pair length), fp32 and int8 close', { skip: fixture.skip }, async () => {
  const { dir, maxLen, pairs } = reference()
  const fp32 = await CrossEncoderReranker.load(dir, { precision: 'fp32', maxTokens: maxLen, batchSize: 4 })
  const int8 = await CrossEncoderReranker.load(dir, { precision: 'int8', maxTokens: maxLen })
  try {
    for (const p of pairs) {
      const passage = { id: 'x', title: p.title, text: p.text, score: 0 }
      const [score] = await fp32.score(p.question, [passage])
      assert.ok(Math.abs(score! - p.logit) < 1e-4, `${p.question}: ${score} vs ${p.logit}`)
      const [quantised] = await int8.score(p.question, [passage])
      assert.ok(Math.abs(quantised! - p.logit) < 0.1, `int8 ${quantised} vs ${p.logit}`)
    }
    // Batched (several pairs of different lengths padded together) gives the same scores.
    const question = pairs[0]!.question
    const passages = pairs.map((p, i) => ({ id: String(i), title: p.title, text: p.text, score: 0 }))
    const batched = await fp32.score(question, passages)
    const single = await Promise.all(passages.map(async (p) => (await fp32.score(question, [p]))[0]!))
    batched.forEach((s, i) => assert.ok(Math.abs(s - single[i]!) < 1e-4))
  } finally {
    await fp32.close()
    await int8.close()
  }
})

test('rerank orders by score, keeps `read` passages, and ties keep retrieval order', { skip: fixture.skip }, async () => {
  const { dir, maxLen, pairs } = reference()
  const reranker = await CrossEncoderReranker.load(dir, { precision: 'fp32', maxTokens: maxLen })
  try {
    const passages = pairs.map((p, i) => ({ id: String(i), title: p.title, text: p.text, score: 100 - i }))
    const question = pairs[0]!.question
    const out = await reranker.run({ question, retrieve: passages.length, read: 3, passages, timings: { retrievalMs: 0, totalMs: 0 } })
    const scores = await reranker.score(question, passages)
    assert.equal(out.reranked.length, 3)
    const expected = scores.map((s, i) => ({ s, i })).sort((a, b) => b.s - a.s || a.i - b.i).slice(0, 3)
    assert.deepEqual(out.reranked.map((p) => p.id), expected.map((e) => String(e.i)))
    assert.equal(out.passages.length, passages.length, 'the retrieved list is kept as it was')
  } finally {
    await reranker.close()
  }
})

test('a missing reranker model names the file and the export command', async () => {
  await assert.rejects(CrossEncoderReranker.load('/nonexistent/reranker'), (e: unknown) =>
    isAmbigqaError(e) && e.code === 'AMBIGQA_ERR_MODEL_MISSING' && e.message.includes('model.onnx') && e.message.includes('ambigqa train export cross-encoder'))
})
