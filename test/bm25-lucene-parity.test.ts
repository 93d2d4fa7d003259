// Our BM25 against a live Lucene 8 on the same real passages and real questions: the same
// passages in the same order, with scores equal to float precision. Skips where the Lucene peer
// (scripts/lucene-peer) or ../shared/data is absent.
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import test from 'node:test'
import { lucenePeerAvailability } from '../bench/lucene-peer.js'
import { runLucene, runOurBm25 } from '../bench/bm25-vs-lucene.js'
import { buildIndex } from '../index/build-index.js'
import { loadQuestions } from '../src/eval/questions.js'
import { silentLogger } from '../core/log.js'
import { prerequisite } from './helpers/prerequisite.js'
import { sharedFile } from './helpers/shared-data.js'

const peer = lucenePeerAvailability()
const tsv = sharedFile('corpus/dpr-asqa300.tsv')
const dev = sharedFile('ambignq/dev_light.json')
const skip = prerequisite(peer.ok ? false : `Lucene peer unavailable (${peer.reason})`) || tsv.skip || dev.skip

test('rankings and scores equal Lucene 8 BM25 (k1 0.9, b 0.4, title + text)', { skip, timeout: 180_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'parity-'))
  const store = join(dir, 'store')
  await buildIndex({ store, sources: [{ path: tsv.path }], onError: 'fail', batchSize: 2000, segmentSize: 2000, workers: 1, log: silentLogger })
  const questions = loadQuestions(dev.path).slice(0, 200).map((q) => q.question)
  const ours = runOurBm25(store, questions, 20, 0)
  const lucene = await runLucene(store, questions, 20, join(dir, 'lucene'))
  let compared = 0
  questions.forEach((q, i) => {
    const mine = ours.scores[i]!
    const theirs = lucene.hits[i]!
    lucene.scores[i]!.forEach((score, r) => assert.ok(Math.abs(score - mine[r]!) < 1e-5 * Math.max(1, score), `${q}: score at rank ${r}`))
    // Lucene scores in float32: order may differ only among near-equal scores.
    const n = Math.min(theirs.length, ours.hits[i]!.length)
    assert.equal(ours.hits[i]!.length, theirs.length, q)
    for (let r = 0; r < n; r++) {
      if (ours.hits[i]![r] !== theirs[r]) {
        const other = ours.hits[i]!.indexOf(theirs[r]!)
        assert.ok(other !== -1 && Math.abs(mine[other]! - mine[r]!) < 1e-5 * mine[r]!, `${q}: rank ${r} differs beyond a float tie`)
      }
      compared++
    }
  })
  assert.ok(compared > 2000)
})
