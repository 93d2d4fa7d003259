import assert from 'node:assert/strict'
import test from 'node:test'
import { fuse, HybridRetriever } from '../retriever/hybrid-retriever.js'
import type { RetrievedPassage, Retriever } from '../core/retriever.js'

const p = (id: string, score: number): RetrievedPassage => ({ id, title: id, text: `text of ${id}`, score })

test('reciprocal-rank fusion: 1/(k + rank) summed over rankings', () => {
  const fused = fuse([[p('a', 9), p('b', 8), p('c', 7)], [p('c', 0.9), p('a', 0.8)]], { kind: 'rrf', k: 60 })
  assert.deepEqual(fused.map((x) => x.id), ['a', 'c', 'b'])
  assert.ok(Math.abs(fused[0]!.score - (1 / 61 + 1 / 62)) < 1e-15)
  assert.ok(Math.abs(fused[1]!.score - (1 / 63 + 1 / 61)) < 1e-15)
  assert.ok(Math.abs(fused[2]!.score - 1 / 62) < 1e-15)
})

test('weighted fusion of min-max normalised scores', () => {
  const bm25 = [p('a', 20), p('b', 10), p('c', 0)]
  const dense = [p('c', 0.9), p('b', 0.7), p('a', 0.5)]
  const fused = fuse([bm25, dense], { kind: 'weighted', weights: [0.3, 0.7] })
  // a: 0.3·1 + 0.7·0 = 0.3; b: 0.3·0.5 + 0.7·0.5 = 0.5; c: 0.3·0 + 0.7·1 = 0.7
  assert.deepEqual(fused.map((x) => [x.id, Number(x.score.toFixed(12))]), [['c', 0.7], ['b', 0.5], ['a', 0.3]])
  assert.deepEqual(fuse([[p('x', 3), p('y', 3)]], { kind: 'weighted', weights: [1] }).map((x) => x.score), [1, 1])
})

test('HybridRetriever asks each source for its depth, fuses, cuts to k, and closes them all', async () => {
  const asked: number[] = []
  let closed = 0
  const source = (name: string, ranking: RetrievedPassage[]): Retriever => ({
    name,
    search: async (_q, k) => {
      asked.push(k)
      return ranking.slice(0, k)
    },
    close: async () => {
      closed++
    },
  })
  const hybrid = new HybridRetriever([source('bm25', [p('a', 2), p('b', 1)]), source('dense', [p('b', 0.9), p('c', 0.1)])], { fusion: { kind: 'rrf', k: 60 }, depth: 100 })
  assert.equal(hybrid.name, 'hybrid(bm25+dense)')
  assert.deepEqual((await hybrid.search('q', 2)).map((x) => x.id), ['b', 'a'])
  assert.deepEqual(asked, [100, 100])
  assert.equal((await hybrid.retrieve('q', 2)).query, undefined, 'no source embedded the question')
  // A source that embeds the question hands its vector on through the fusion.
  const vector = new Float32Array([0.6, 0.8])
  const dense: Retriever = { ...source('dense', [p('c', 1)]), retrieve: async (_q, k) => ({ passages: [p('c', 1)].slice(0, k), query: { encoder: 'e5-small-v2-int8', vector } }) }
  const withVector = await new HybridRetriever([source('bm25', [p('a', 2)]), dense], { fusion: { kind: 'rrf', k: 60 }, depth: 10 }).retrieve('q', 2)
  assert.deepEqual(withVector.passages.map((x) => x.id), ['a', 'c'])
  assert.deepEqual(withVector.query, { encoder: 'e5-small-v2-int8', vector })
  await hybrid.close()
  assert.equal(closed, 2)
  assert.throws(() => new HybridRetriever([source('one', [])], { fusion: { kind: 'rrf', k: 60 }, depth: 10 }), { code: 'AMBIGQA_ERR_USAGE' })
  assert.throws(() => new HybridRetriever([source('a', []), source('b', [])], { fusion: { kind: 'weighted', weights: [1] }, depth: 10 }), /1 fusion weights for 2 retrievers/)
})
