import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import test from 'node:test'
import { buildDemoStore } from './helpers/demo-store.js'
import { runCli } from './helpers/run-cli.js'
import { sharedFile } from './helpers/shared-data.js'

const DEMO = resolve(process.cwd(), 'assets', 'demo', 'passages.tsv.gz')

test('--help on the program and on every subcommand', async () => {
  for (const args of [[], ['index'], ['index', 'build'], ['index', 'stats'], ['search'], ['eval'], ['eval', 'retrieval'], ['bench', 'corpus']]) {
    const result = await runCli([...args, '--help'])
    assert.equal(result.code, 0, args.join(' '))
    assert.match(result.stdout, /Usage: ambigqa/)
  }
  const unknown = await runCli(['frobnicate'])
  assert.notEqual(unknown.code, 0)
  assert.match(unknown.stderr, /unknown command 'frobnicate'/)
})

test('train reranker|seq2seq: --config names the training config (the program has a --config of its own)', async () => {
  for (const kind of ['reranker', 'seq2seq']) {
    const missing = await runCli(['train', kind])
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /AMBIGQA_ERR_USAGE: ambigqa train \w+ needs a training config\. Pass --config/)
  }
  // Given after the subcommand, the file reaches the Python trainer (which fails on it, or on
  // the missing training environment: either names what is missing).
  const given = await runCli(['train', 'reranker', '--config', '/nonexistent/reranker.json'])
  assert.notEqual(given.code, 0)
  assert.match(given.stderr, /nonexistent\/reranker\.json|scripts\/train-env/)
})

test('train extractive|seq2seq|reranker|cotrain and index encode: --device other than their devices is a usage error before Python starts', async () => {
  const cases: [string[], RegExp][] = [
    ...['extractive', 'seq2seq', 'reranker', 'verifier'].map((kind): [string[], RegExp] => [['train', kind, '--config', 'train/configs/x.json', '--device', 'tpu'], /Give cpu, cuda or auto/]),
    [['train', 'cotrain', '--config', 'train/configs/cotrain-tiny.json', '--device', 'gpu'], /Give cpu, cuda or auto/],
    [['index', 'encode', '--store', '/nonexistent/store', '--device', 'auto'], /Give cpu \(onnxruntime, the default\) or cuda/],
  ]
  assert.ok(cases.length > 0)
  for (const [args, fix] of cases) {
    const result = await runCli(args)
    assert.equal(result.code, 1, args.join(' '))
    assert.match(result.stderr, /AMBIGQA_ERR_USAGE: --device \w+ is not a device/, args.join(' '))
    assert.match(result.stderr, fix, args.join(' '))
  }
})

test('the demo corpus shipped in the repo builds a store that answers a question', { timeout: 120_000 }, async () => {
  const store = join(mkdtempSync(join(tmpdir(), 'demo-')), 'demo')
  const build = await runCli(['index', 'build', '--source', DEMO, '--store', store, '--json'])
  assert.equal(build.code, 0, build.stderr)
  assert.equal(JSON.parse(build.stdout).passages, 5531)
  const search = await runCli(['search', 'when did the apple i go on sale', '--store', store, '-k', '3', '--json'])
  assert.equal(search.code, 0, search.stderr)
  const { hits } = JSON.parse(search.stdout) as { hits: { id: string; title: string; text: string; score: number }[] }
  assert.equal(hits.length, 3)
  assert.ok(hits.some((h) => h.id === '4283' && h.text.includes('The Apple I went on sale in July 1976')), JSON.stringify(hits.map((h) => h.title)))
  assert.ok(hits[0]!.score >= hits[1]!.score && hits[1]!.score >= hits[2]!.score)

  const human = await runCli(['search', 'Who plays the doctor in dexter season 1?', '--store', store])
  assert.match(human.stdout, /^5 passages for "Who plays the doctor in dexter season 1\?" \(bm25-sqlite/)

  const stats = await runCli(['index', 'stats', '--store', store, '--json'])
  assert.equal(JSON.parse(stats.stdout).state, 'ready')

  // The retrieval evaluation on NQ-open style questions, with the documented JSON shape.
  const questions = join(store, '..', 'q.jsonl')
  writeFileSync(questions, '{"question": "when did the apple i go on sale", "answer": ["July 1976"]}\n{"question": "zzzz qqqq", "answer": ["nothing at all"]}\n')
  const evaluation = await runCli(['eval', 'retrieval', '--questions', questions, '--store', store, '--k', '1,5', '--json'])
  assert.equal(evaluation.code, 0, evaluation.stderr)
  const metrics = JSON.parse(evaluation.stdout)
  assert.deepEqual(Object.keys(metrics), ['recall', 'coverage', 'n'])
  assert.equal(metrics.n, 2)
  assert.deepEqual(Object.keys(metrics.recall), ['1', '5'])
  assert.equal(metrics.recall['5'], 50)
  assert.equal(metrics.coverage['5'], 50)

  const badK = await runCli(['eval', 'retrieval', '--questions', questions, '--store', store, '--k', '1,x'])
  assert.equal(badK.code, 1)
  assert.match(badK.stderr, /AMBIGQA_ERR_USAGE: --k '1,x' is not a list of positive integers/)
})

const dev = sharedFile('ambignq/dev_light.json')
const ids = sharedFile('splits/eval-300.txt')
test('eval retrieval on eval-300 questions against the demo store (AmbigNQ light + id list)', { skip: dev.skip || ids.skip, timeout: 120_000 }, async () => {
  const store = join(mkdtempSync(join(tmpdir(), 'demo-')), 'demo')
  assert.equal((await runCli(['index', 'build', '--source', DEMO, '--store', store])).code, 0)
  const result = await runCli(['eval', 'retrieval', '--questions', dev.path, '--ids', ids.path, '--store', store, '--json'])
  assert.equal(result.code, 0, result.stderr)
  const metrics = JSON.parse(result.stdout)
  assert.equal(metrics.n, 300)
  // The demo corpus is what DPR retrieved for these questions: BM25 finds answers for most.
  assert.ok(metrics.recall['20'] > 70 && metrics.recall['20'] <= metrics.recall['100'])
  assert.ok(metrics.coverage['20'] <= metrics.recall['20'])
})

const corpus = sharedFile('corpus')
test('bench corpus builds eval-300 from every shared passage file and SQuAD', { skip: corpus.skip, timeout: 300_000 }, async () => {
  const store = join(mkdtempSync(join(tmpdir(), 'eval300-')), 'store')
  const result = await runCli(['bench', 'corpus', '--store', store])
  assert.equal(result.code, 0, result.stderr)
  assert.match(result.stdout, /eval-300 corpus at .*: 33,087 passages/)
  const stats = JSON.parse((await runCli(['index', 'stats', '--store', store, '--json'])).stdout)
  assert.deepEqual(stats.sources.map((s: { format: string }) => s.format), ['dpr-tsv', 'dpr-tsv', 'jsonl', 'jsonl', 'qa-feedback', 'wikitext-dir', 'squad', 'squad'])
  assert.ok(stats.sources.every((s: { done: boolean; passages: number }) => s.done && s.passages > 0))
})

test('index stats | head and search | head: a reader that goes away ends the command quietly with exit 0', { timeout: 120_000 }, async () => {
  const store = await buildDemoStore('cli-pipe-')
  for (const args of [['search', 'film music war city', '--store', store, '-k', '1000'], ['search', 'film music war city', '--store', store, '-k', '1000', '--json'], ['index', 'stats', '--store', store, '--verify']]) {
    let first = ''
    const result = await runCli(args, {
      // What `head -c 10` does: read a little, then close the pipe while the command still writes.
      onSpawn: (child) => child.stdout!.once('data', (chunk) => { first = String(chunk); child.stdout!.destroy() }),
    })
    assert.ok(first.length > 0, args.join(' '))
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`)
    assert.doesNotMatch(result.stderr, /EPIPE|Error/, args.join(' '))
  }
})

test('ask and search refuse what the server refuses, before loading anything: an empty question, a count out of bounds', async () => {
  const cases: [string[], RegExp][] = [
    [['ask', ''], /AMBIGQA_ERR_QUESTION_INVALID: question is empty\. Give a non-empty question/],
    [['ask', '   '], /AMBIGQA_ERR_QUESTION_INVALID: question is empty/],
    [['search', ''], /AMBIGQA_ERR_QUESTION_INVALID: question is empty/],
    [['ask', 'who wrote dracula', '--read', '0'], /AMBIGQA_ERR_ARGUMENT_INVALID: argument --read is 0, outside \[1, 1000\]/],
    [['ask', 'who wrote dracula', '--retrieve', '100000'], /AMBIGQA_ERR_ARGUMENT_INVALID: argument --retrieve is 100000, outside \[1, 1000\]/],
    [['search', 'who wrote dracula', '--k', '-1'], /AMBIGQA_ERR_ARGUMENT_INVALID: argument --k is -1, outside \[1, 1000\]/],
  ]
  assert.ok(cases.length > 0)
  // A store that does not exist: the argument is refused before the store is opened.
  const store = join(mkdtempSync(join(tmpdir(), 'cli-args-')), 'none')
  for (const [args, message] of cases) {
    const result = await runCli([...args, '--store', store])
    assert.equal(result.code, 1, args.join(' '))
    assert.match(result.stderr, message, args.join(' '))
    assert.equal(result.stdout, '', args.join(' '))
  }
})

test('train calibration-data: --verify-top outside 0..100 is a usage error before anything is read', async () => {
  for (const bad of ['1000', '-1', '2.5']) {
    const result = await runCli(['train', 'calibration-data', '--verify-top', bad])
    assert.equal(result.code, 1, bad)
    assert.match(result.stderr, /AMBIGQA_ERR_USAGE: --verify-top \S+ is not a number of candidates/, bad)
  }
})
