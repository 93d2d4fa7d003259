// A committee of extractive readers (the co-trained ensemble): a span's probability is the
// members' mean, so a committee of one model twice answers exactly as that model; a committee
// file without members is refused with a clear error.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { ExtractiveCommittee, isCommittee } from '../reader/extractive-committee.js'
import { ExtractiveReader } from '../reader/extractive-reader.js'
import { isAmbigqaError } from '../core/errors.js'
import { extractiveFixture } from './helpers/reader-fixture.js'

const fixture = extractiveFixture()
let single: ExtractiveReader
let committee: ExtractiveCommittee
let cases: { question: string; passages: { id: string; title: string; text: string; score: number }[] }[] = []

before(async () => {
  if (fixture.skip) return
  const reference = JSON.parse(readFileSync(join(fixture.dir!, 'reference.json'), 'utf8')) as { max_len: number; cases: { question: string; passages: { title: string; text: string }[] }[] }
  cases = reference.cases.map((c) => ({ question: c.question, passages: c.passages.map((p, i) => ({ id: `p${i}`, title: p.title, text: p.text, score: 1 })) }))
  const dir = mkdtempSync(join(tmpdir(), 'committee-'))
  writeFileSync(join(dir, 'committee.json'), JSON.stringify({ members: [fixture.dir, fixture.dir] }))
  assert.ok(isCommittee(dir))
  // keep 0: every span is an answer, so the comparison covers every probability, not only the best.
  const options = { maxInputTokens: reference.max_len, keep: 0, maxAnswers: 20 }
  single = await ExtractiveReader.load(fixture.dir!, { precision: 'fp32' }, options)
  committee = await ExtractiveCommittee.load(dir, { precision: 'fp32' }, options)
})
after(async () => { await single?.close(); await committee?.close() })

test('a committee of one model twice answers as the model, probabilities included', { skip: fixture.skip }, async () => {
  const alone = await single.read(cases)
  const together = await committee.read(cases)
  assert.equal(committee.members.length, 2)
  assert.deepEqual(together.map((set) => set.map((a) => a.answer)), alone.map((set) => set.map((a) => a.answer)))
  together.flat().forEach((a, i) => assert.ok(Math.abs(a.probability - alone.flat()[i]!.probability) < 1e-6))
})

test('a committee file without members is AMBIGQA_ERR_MODEL_INVALID', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'committee-bad-'))
  writeFileSync(join(dir, 'committee.json'), JSON.stringify({ members: [] }))
  await assert.rejects(ExtractiveCommittee.load(dir), (e: unknown) => isAmbigqaError(e) && e.code === 'AMBIGQA_ERR_MODEL_INVALID' && /members/.test(e.message))
})
