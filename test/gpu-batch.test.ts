// The prepared GPU batch (scripts/gpu-batch) cannot rot between the sessions lent a GPU: its CPU
// dry run packs the real data with the real base (llama.cpp's tokenizer, the pruned vocabulary,
// the carries under the device's 64 MiB), stages the parts into a stash as the device calls do,
// and runs the trainer on the CPU with a tiny config: each run trains, saves its adapter and
// generates held-out lines the way serving decodes; then the encoding step (the queue's d) makes a
// store of 300 passages from the demo corpus's and encodes it; then the MPNet reader's step (c) on
// a tiny MPNet and groups of SQuAD dev questions: packed as int8 parts, staged, trained, sent back
// in pieces and exported here.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { after, test } from 'node:test'
import { PROJECT_ROOT } from '../core/paths.js'
import { ExtractiveReader } from '../reader/extractive-reader.js'
import { trainingEnvironmentProblem } from '../core/python-process.js'
import { prerequisite } from './helpers/prerequisite.js'
import { sharedFile } from './helpers/shared-data.js'

const run = promisify(execFile)
const base = join(PROJECT_ROOT, 'models', 'base', 'gemma-3-270m-q4_k_m.gguf')
const shared = sharedFile('ambignq/train_light.json')
const squad = sharedFile('squad/dev-v1.1.json')
const encoder = join(PROJECT_ROOT, 'models', 'encoders', 'e5-small-v2-int8', 'model.onnx')
const skip = shared.skip || squad.skip || prerequisite(trainingEnvironmentProblem(PROJECT_ROOT) ??
  (!existsSync(base) ? `needs the decoder's base model ${base}: run scripts/assets lm-base`
    : !existsSync(encoder) ? 'needs models/encoders/e5-small-v2-int8: run scripts/assets e5-small-v2-int8' : false))

function bytesIn(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? bytesIn(join(dir, e.name)) : statSync(join(dir, e.name)).size), 0)
}
const work = mkdtempSync(join(tmpdir(), 'gpu-batch-'))
after(() => rmSync(work, { recursive: true, force: true }))

test('gpu-batch: pack, stage the carries, run the trainer and the encoding step on the CPU', { skip, timeout: 900_000 }, async () => {
  const python = join(PROJECT_ROOT, '.venv-train', 'bin', 'python')
  await run(python, ['-m', 'ambigqa_train.data', 'build', '--only', 'qd', 'spanseqgen2', '--data', join(shared.path, '..', '..'), '--out', join(work, 'data')], { cwd: join(PROJECT_ROOT, 'train') })
  const env = { ...process.env, GPU_WORK: join(work, 'pack'), GPU_DATA: join(work, 'data'), OUT: join(work, 'out') }
  await run(join(PROJECT_ROOT, 'scripts', 'gpu-batch'), ['pack'], { cwd: PROJECT_ROOT, env, maxBuffer: 1 << 24 })
  for (const part of ['carry-1', 'carry-2', 'carry-3']) {
    const bytes = bytesIn(join(work, 'pack', part))
    assert.ok(bytes > 10_000_000 && bytes < 60 * 2 ** 20, `${part} holds ${bytes} bytes: under a device call's 64 MiB with the tree`)
  }
  // Step c's inputs: a tiny MPNet reader (the fixture's MPNet tokenizer) and reader groups of real
  // SQuAD dev text (each question's paragraph, the article's other paragraphs as its negatives).
  await run(python, ['-c', `
import sys; sys.path.insert(0, "tests")
from pathlib import Path
from extractive_fixture import mpnet_tokenizer, tiny_mpnet
out = Path(sys.argv[1]); tok = mpnet_tokenizer(out / "tok")
tiny_mpnet(tok).save_pretrained(out / "warm"); tok.save_pretrained(out / "warm")
`, work], { cwd: join(PROJECT_ROOT, 'train'), env: { ...process.env, PYTHONPATH: join(PROJECT_ROOT, 'train') } })
  const articles = (JSON.parse(readFileSync(squad.path, 'utf8')) as { data: { title: string, paragraphs: { context: string, qas: { id: string, question: string, answers: { text: string }[] }[] }[] }[] }).data
  const groups = articles.slice(0, 4).flatMap((a) => a.paragraphs.slice(0, 3).map((p, i) => ({
    id: p.qas[0]!.id, source: 'squad', question: p.qas[0]!.question, answers: p.qas[0]!.answers.map((x) => x.text),
    positive: { title: a.title, text: p.context }, negatives: a.paragraphs.filter((_, j) => j !== i).slice(0, 2).map((n) => ({ title: a.title, text: n.context })),
  })))
  writeFileSync(join(work, 'groups.jsonl'), groups.map((g) => JSON.stringify(g)).join('\n') + '\n')
  const readerEnv = { ...env, GPU_READER_WARM: join(work, 'warm'), GPU_READER_GROUPS: join(work, 'groups.jsonl') }
  await run(join(PROJECT_ROOT, 'scripts', 'gpu-batch'), ['pack-reader'], { cwd: PROJECT_ROOT, env: readerEnv, maxBuffer: 1 << 24 })
  for (const part of ['carry-4', 'carry-5']) assert.ok(existsSync(join(work, 'pack', part, 'reader-parts')), part)
  const { stdout } = await run(join(PROJECT_ROOT, 'scripts', 'gpu-batch'), ['dry-run'], { cwd: PROJECT_ROOT, env, maxBuffer: 1 << 24 })
  assert.match(stdout, /reference logits: max difference 0\.0+ /)
  const summary = JSON.parse(readFileSync(join(work, 'out', 'summary.json'), 'utf8')) as { run: string, steps?: number, error?: string, heldout_loss?: number }[]
  assert.deepEqual(summary.map((s) => s.run), ['qd', 'span'])
  for (const s of summary) {
    assert.equal(s.error, undefined)
    assert.ok((s.steps ?? 0) > 0 && Number.isFinite(s.heldout_loss))
    assert.ok(statSync(join(work, 'out', `adapter-${s.run}.safetensors`)).size > 100_000)
    const generated = readFileSync(join(work, 'out', `generated-${s.run}.jsonl`), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { generated: number[][] })
    assert.equal(generated.length, 2)
    for (const g of generated) assert.ok(g.generated.length > 0 && g.generated.every((line) => line.length > 0))
  }
  const encode = JSON.parse(readFileSync(join(work, 'out', 'encode.json'), 'utf8')) as { passages: number, encoded_this_run: number, passages_per_s: number, projected_21m_hours: number, device: string }
  assert.equal(encode.passages, 300)
  assert.equal(encode.encoded_this_run, 300)
  assert.equal(encode.device, 'cpu')
  assert.ok(encode.passages_per_s > 0 && encode.projected_21m_hours > 0)
  // Step c: trained to its last step, back in pieces of at most 16 MB, exported here as the reader reads it.
  assert.match(stdout, /"step": 3, "of": 3/)
  const pieces = readdirSync(join(work, 'out')).filter((f) => f.startsWith('reader.tar.xz.'))
  assert.ok(pieces.length > 0 && pieces.every((f) => statSync(join(work, 'out', f)).size <= 16_000_000), pieces.join(', '))
  const exported = join(work, 'extractive-mpnet')
  await run(join(PROJECT_ROOT, 'scripts', 'gpu-batch'), ['unpack-reader', join(work, 'out'), exported], { cwd: PROJECT_ROOT, env: { ...env, GPU_READER_CHECKPOINT: join(work, 'ckpt') }, maxBuffer: 1 << 24 })
  assert.equal((JSON.parse(readFileSync(join(exported, 'config.json'), 'utf8')) as { model_type: string }).model_type, 'mpnet')
  const reader = await ExtractiveReader.load(exported, { precision: 'int8', threads: 1 })
  try {
    const g = groups[0]!
    const [spans] = await reader.spans([{ question: g.question, passages: [{ id: 'p', title: g.positive.title, text: g.positive.text, score: 1 }] }])
    assert.ok(spans!.length > 0)
  } finally {
    await reader.close()
  }
})
