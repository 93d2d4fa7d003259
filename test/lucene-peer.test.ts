// The Lucene 8 BM25 peer (bench/lucene-peer.ts): skipped where java or Debian's Lucene 8 jars
// are absent, so a fresh clone without liblucene8-java still passes.

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'

import { luceneAnalyze, lucenePeerAvailability, runLucenePeer, type LucenePeerResult, type PeerPassage } from '../bench/lucene-peer.js'
import { prerequisite } from './helpers/prerequisite.js'
import { sharedFile } from './helpers/shared-data.js'

const avail = lucenePeerAvailability()
const peerSkip = prerequisite(avail.ok ? false : `Lucene peer unavailable (${avail.reason})`)
const { path: haystack, skip: dataSkip } = sharedFile('corpus/dpr-haystack751.tsv')

/** Minimal DPR TSV parse: header `id\ttext\ttitle`, fields optionally CSV-quoted with "" for ". */
function readDprTsv(file: string, limit: number): PeerPassage[] {
  const unquote = (f: string): string => (f.length >= 2 && f.startsWith('"') && f.endsWith('"') ? f.slice(1, -1).replace(/""/g, '"') : f)
  const lines = readFileSync(file, 'utf8').split('\n')
  assert.deepEqual(lines[0]?.split('\t'), ['id', 'text', 'title'])
  const out: PeerPassage[] = []
  for (const line of lines.slice(1)) {
    if (line === '') continue
    const [id, text, title] = line.split('\t')
    assert.ok(id !== undefined && text !== undefined && title !== undefined, `bad TSV line: ${line.slice(0, 80)}`)
    out.push({ id, text: unquote(text), title: unquote(title) })
    if (out.length >= limit) break
  }
  return out
}

test('luceneAnalyze gives EnglishAnalyzer tokens (possessive, stop words, Porter stems)', { skip: peerSkip }, async () => {
  assert.deepEqual(await luceneAnalyze("The running dogs' houses"), ['run', 'dog', 'hous'])
  assert.deepEqual(await luceneAnalyze("John's children's toys"), ['john', 'children', 'toi'])
  // non-ASCII goes through stdin/stdout as UTF-8
  assert.deepEqual(await luceneAnalyze('Diego Velázquez, naïve café'), ['diego', 'velázquez', 'naïv', 'café'])
  assert.deepEqual(await luceneAnalyze('to be or not to be'), [])
})

describe('runLucenePeer on 200 real DPR passages', { skip: peerSkip || dataSkip }, () => {
  // the DPR text is NFD ("a" + U+0301) and EnglishAnalyzer does no Unicode normalisation
  const titles = ['Krasnoyarsk Krai', 'Diego Vela\u0301zquez', 'Gandalf', 'Byte order mark']
  // ids/titles exercising the JSON path both ways: quotes, backslash, tab, U+2028, a surrogate pair
  const oddId = 'odd "id" \\ \t \u2028 \u{1F600}'
  let passages: PeerPassage[] = []
  let workDir = ''
  let result: LucenePeerResult

  before(async () => {
    passages = readDprTsv(haystack, 200)
    passages.push({ id: oddId, title: 'Zyxwvut \u{1F600} "quokkaesque"', text: 'A line\nbreak and a tab\there, Zyxwvut.' })
    workDir = await mkdtemp(path.join(os.tmpdir(), 'lucene-peer-test-'))
    const questions = [...titles, 'zyxwvut quokkaesque', 'the of and', '']
    // an async iterable on purpose: the benchmark streams its corpus
    async function* stream(): AsyncIterable<PeerPassage> {
      yield* passages
    }
    result = await runLucenePeer({ passages: stream(), questions, k: 10, workDir, warmup: 5 })
  })

  after(async () => {
    if (workDir !== '') await rm(workDir, { recursive: true, force: true })
  })

  test('indexes every passage and reports sizes and timings', () => {
    assert.equal(result.passages, 201)
    assert.ok(result.indexBytes > 10_000, `indexBytes ${result.indexBytes}`)
    assert.ok(result.indexSeconds > 0 && result.indexSecondsWithoutMerge <= result.indexSeconds)
    assert.equal(result.hits.length, 7)
    assert.equal(result.latenciesMs.length, 7)
    assert.ok(result.latenciesMs.every((ms) => ms >= 0))
    assert.ok(result.p50 >= 0 && result.p99 >= result.p50)
  })

  test("a query of a passage's title words ranks that passage first", () => {
    titles.forEach((title, i) => {
      const wanted = passages.filter((p) => p.title === title)
      assert.equal(wanted.length, 1, `exactly one passage titled ${title} among the first 200`)
      const hits = result.hits[i] ?? []
      assert.equal(hits[0], wanted[0]?.id, `top hit for "${title}": ${hits.slice(0, 3).join(', ')}`)
      const scores = result.scores[i] ?? []
      assert.equal(scores.length, hits.length)
      for (let j = 1; j < scores.length; j++) assert.ok((scores[j - 1] ?? 0) >= (scores[j] ?? 0), 'scores descend')
    })
  })

  test('ids with JSON escapes and non-BMP characters round-trip', () => {
    assert.deepEqual(result.hits[4], [oddId])
  })

  test('a question of only stop words, or an empty one, finds nothing', () => {
    assert.deepEqual(result.hits[5], [])
    assert.deepEqual(result.hits[6], [])
  })
})
