// `ambigqa eval ambignq` end to end with real parts only: the BM25 SQLite store built from the demo
// corpus, the real ONNX reader (the tiny fixture model), the real CLI in a child process. Its
// answers are poor (a copy-task model), which does not matter: what is tested is that every
// question is answered, recorded, resumed after a kill, written in the official format and scored
// with the official metric, and that the report is safe to open.
import assert from 'node:assert/strict'
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { defaults } from '../core/config.js'
import { fullPredictions } from '../src/eval/eval-ambignq.js'
import type { EvalMetrics, ProgressRecord } from '../src/eval/eval-records.js'
import { escapeHtml } from '../src/eval/report-html.js'
import { loadReference, scoreAmbigNq, validatePredictions, type AmbigNqRecord } from '../src/eval/score-ambignq.js'
import { readerFixture } from './helpers/reader-fixture.js'
import { runCli } from './helpers/run-cli.js'
import { sharedFile } from './helpers/shared-data.js'
import { buildDemoStore } from './helpers/demo-store.js'

const DEV = sharedFile('ambignq/dev_light.json')
const EVAL_300 = sharedFile('splits/eval-300.txt')
const fixture = readerFixture()
const devSkip = fixture.skip || DEV.skip || EVAL_300.skip

const tmp = () => mkdtempSync(join(tmpdir(), 'eval-ambignq-'))

let storePromise: Promise<string> | undefined
/** The demo corpus (5,531 real DPR passages) in a BM25 SQLite store, built once for the file. */
function demoStore(): Promise<string> {
  storePromise ??= (async () => {
    return buildDemoStore('eval-ambignq-store-')
  })()
  return storePromise
}

async function readerEnv(): Promise<NodeJS.ProcessEnv> {
  assert.ok(fixture.dir, 'the reader fixture is needed')
  return { AMBIGQA_STORE: await demoStore(), AMBIGQA_READER_KIND: 'spanseqgen', AMBIGQA_READER_SPANSEQGEN: fixture.dir, AMBIGQA_READER_QD: fixture.dir }
}

const readJson = <T>(path: string) => JSON.parse(readFileSync(path, 'utf8')) as T
const progressLines = (out: string): ProgressRecord[] =>
  readFileSync(join(out, 'progress.jsonl'), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as ProgressRecord)

/** The first n ids of eval-300 with their reference records. */
function evalRecords(n: number): AmbigNqRecord[] {
  const ids = readFileSync(EVAL_300.path, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean).slice(0, n)
  const byId = new Map(loadReference(DEV.path).map((r) => [r.id, r]))
  return ids.map((id) => byId.get(id)!)
}

/** The error line the CLI printed (the log lines on stderr are JSON); asserts there is one, and no stack. */
function cliError(stderr: string): string {
  const lines = stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('{'))
  assert.equal(lines.length, 1, `expected one error line, got:\n${stderr}`)
  assert.doesNotMatch(stderr, /^\s+at /m, 'no stack trace')
  return lines[0]!
}

test('a run over 5 AmbigNQ dev questions writes the official predictions, their metrics and the report', { skip: devSkip, timeout: 600_000 }, async () => {
  const env = await readerEnv()
  const out = join(tmp(), 'run')
  const args = ['eval', 'ambignq', '--data', DEV.path, '--ids', EVAL_300.path, '--limit', '5', '--out', out, '--concurrency', '2']
  const run = await runCli([...args, '--json'], { env })
  assert.equal(run.code, 0, run.stderr)
  const printed = JSON.parse(run.stdout) as EvalMetrics
  const records = evalRecords(5)
  const ids = records.map((r) => r.id)

  // predictions.json: the official full format, every id, a non-empty list of {question, answer}.
  const predictions = readJson<Record<string, { question: string; answer: string }[]>>(join(out, 'predictions.json'))
  assert.deepEqual(Object.keys(predictions), ids)
  for (const [id, pairs] of Object.entries(predictions)) {
    assert.ok(pairs.length > 0, id)
    for (const pair of pairs) {
      assert.deepEqual(Object.keys(pair).sort(), ['answer', 'question'])
      assert.equal(typeof pair.answer, 'string')
      assert.ok(pair.question.length > 0)
    }
  }
  assert.equal(validatePredictions(predictions, records).mode, 'full')
  const answers = readJson<Record<string, string[]>>(join(out, 'predictions-answers.json'))
  assert.deepEqual(answers, Object.fromEntries(Object.entries(predictions).map(([id, pairs]) => [id, pairs.map((p) => p.answer)])))

  // progress.jsonl: one line per question, and the predictions are made from it.
  const lines = progressLines(out)
  assert.deepEqual(lines.map((l) => l.id).sort(), [...ids].sort())
  for (const line of lines) {
    assert.equal(line.read.length, defaults.reader.read)
    assert.ok(line.timings.totalMs > 0 && line.timings.retrievalMs >= 0 && line.timings.readMs! > 0)
    for (const a of line.answers) assert.ok(typeof a.confidence === 'number' && Array.isArray(a.evidence) && typeof a.question === 'string')
  }
  assert.deepEqual(fullPredictions(records, new Map(lines.map((l) => [l.id, l]))), predictions)

  // metrics.json: the official metric of the written predictions, plus timings and the config.
  const metrics = readJson<EvalMetrics>(join(out, 'metrics.json'))
  assert.deepEqual(printed, metrics)
  const expected = JSON.parse(JSON.stringify(scoreAmbigNq(records, predictions).metrics)) as Record<string, unknown>
  for (const key of ['F1 answer', 'F1 bleu1', 'F1 bleu2', 'F1 bleu3', 'F1 bleu4', 'F1 edit-f1', 'n_all', 'n_multi']) {
    assert.deepEqual((metrics as unknown as Record<string, unknown>)[key], expected[key], key)
  }
  assert.equal(metrics.n_all, 5)
  assert.ok(metrics.timings.total.p50Ms > 0 && metrics.timings.total.p50Ms <= metrics.timings.total.p99Ms)
  assert.equal(metrics.config.retrieve, 100)
  assert.equal(metrics.config.read, defaults.reader.read)
  assert.equal(metrics.config.concurrency, 2)
  assert.equal(metrics.run.answeredNow, 5)

  // `ambigqa score` (the official metric's CLI) accepts the file and agrees.
  const reference = join(out, '..', 'reference-5.json')
  writeFileSync(reference, JSON.stringify(records))
  const scored = await runCli(['score', '--reference', reference, '--predictions', join(out, 'predictions.json'), '--json'])
  assert.equal(scored.code, 0, scored.stderr)
  assert.deepEqual(JSON.parse(scored.stdout), expected)
  const scoredAnswers = await runCli(['score', '--reference', reference, '--predictions', join(out, 'predictions-answers.json'), '--json'])
  assert.equal(scoredAnswers.code, 0, scoredAnswers.stderr)
  assert.deepEqual(JSON.parse(scoredAnswers.stdout)['F1 answer'], expected['F1 answer'])

  // report.html: self-contained, with the tables, both charts and every question.
  const html = readFileSync(join(out, 'report.html'), 'utf8')
  assert.match(html, /^<!DOCTYPE html>/)
  // The two F1 charts and the reliability diagram; no ROC curve: this reader has no calibration
  // (the shipped one is fit on the extractive reader's probabilities), so no ambiguity either.
  assert.equal((html.match(/<svg /g) ?? []).length, 3)
  assert.match(html, /Reliability \(ECE/)
  assert.match(html, /No ambiguity detector in this run/)
  assert.equal(metrics.ambiguity, null)
  assert.equal(metrics.readerConfidence, null)
  assert.equal(metrics.confidence.answers, Object.values(predictions).flat().filter((p) => p.answer !== '').length)
  assert.match(html, /Mean F1 answer by number of gold answers/)
  assert.match(html, /Questions by F1 answer/)
  for (const rec of records) assert.ok(html.includes(escapeHtml(rec.question)), rec.question)
  assert.doesNotMatch(html, /<(script|link|img|iframe)\b/i)
  assert.doesNotMatch(html, /(src|href)\s*=\s*["']?https?:/i)

  // A rerun finds everything done: nothing is answered again and the outputs are the same.
  const again = await runCli(args, { env })
  assert.equal(again.code, 0, again.stderr)
  assert.deepEqual(readJson(join(out, 'predictions.json')), predictions)
  assert.equal(readJson<EvalMetrics>(join(out, 'metrics.json')).run.answeredNow, 0)
  assert.equal(progressLines(out).length, 5)

  // Resuming with other settings would mix answers: refused, naming the difference.
  const other = await runCli([...args, '--read', '5'], { env })
  assert.equal(other.code, 1)
  assert.match(cliError(other.stderr), new RegExp(`AMBIGQA_ERR_USAGE: .*other settings \\(read: was ${defaults.reader.read}, now 5\\)`))
})

test('a run killed midway resumes: the answered questions are kept, a truncated last line is dropped, the rest is answered', { skip: devSkip, timeout: 600_000 }, async () => {
  const env = await readerEnv()
  const out = join(tmp(), 'run')
  const total = 16
  const args = ['eval', 'ambignq', '--data', DEV.path, '--ids', EVAL_300.path, '--limit', String(total), '--out', out, '--concurrency', '1']
  const progress = join(out, 'progress.jsonl')
  let exited = false
  const killed = await runCli(args, {
    env,
    onSpawn: (child) => {
      child.on('exit', () => (exited = true))
      const poll = setInterval(() => {
        if (exited) return clearInterval(poll)
        // A whole line (it ends with a newline) is on disk.
        if (existsSync(progress) && readFileSync(progress, 'utf8').includes('\n')) {
          clearInterval(poll)
          child.kill('SIGKILL')
        }
      }, 10)
    },
  })
  assert.equal(killed.signal, 'SIGKILL', `the run finished before it could be killed:\n${killed.stderr}`)
  const before = progressLines(out)
  assert.ok(before.length >= 1 && before.length < total, `${before.length} questions answered before the kill`)
  assert.ok(!existsSync(join(out, 'predictions.json')))
  // A kill in the middle of a write leaves half a line.
  appendFileSync(progress, '{"id":"-8096234731970550529","question":"Who pla')

  const resumed = await runCli([...args, '--json'], { env })
  assert.equal(resumed.code, 0, resumed.stderr)
  const metrics = JSON.parse(resumed.stdout) as EvalMetrics
  assert.equal(metrics.run.resumed, before.length)
  assert.equal(metrics.run.answeredNow, total - before.length)
  assert.equal(metrics.n_all, total)

  const after = progressLines(out)
  assert.equal(after.length, total)
  assert.equal(new Set(after.map((l) => l.id)).size, total, 'no question answered twice')
  assert.deepEqual(after.slice(0, before.length), before, 'the answered questions are kept as they were')
  const records = evalRecords(total)
  const predictions = readJson<Record<string, unknown>>(join(out, 'predictions.json'))
  const fromBefore = fullPredictions(records.filter((r) => before.some((b) => b.id === r.id)), new Map(before.map((b) => [b.id, b])))
  for (const [id, pairs] of Object.entries(fromBefore)) assert.deepEqual(predictions[id], pairs, id)
  assert.deepEqual(Object.keys(predictions), records.map((r) => r.id))
  assert.deepEqual(JSON.parse(JSON.stringify(scoreAmbigNq(records, predictions).metrics))['F1 answer'], metrics['F1 answer'])
})

test('--answers-only: no question rewritten, and a run begun with rewrites is not resumed without them', { skip: devSkip, timeout: 600_000 }, async () => {
  const env = await readerEnv()
  const out = join(tmp(), 'answers-only')
  const args = ['eval', 'ambignq', '--data', DEV.path, '--ids', EVAL_300.path, '--limit', '3', '--out', out, '--concurrency', '1', '--answers-only']
  const result = await runCli([...args, '--json'], { env })
  assert.equal(result.code, 0, result.stderr)
  const lines = progressLines(out)
  assert.equal(lines.length, 3)
  const answers = lines.flatMap((l) => l.answers)
  assert.ok(answers.length >= 3, 'every question answered')
  assert.ok(answers.every((a) => a.rewritten === false && a.question === lines.find((l) => l.answers.includes(a))!.question), 'each answer keeps the prompt')
  const mixed = await runCli(args.filter((a) => a !== '--answers-only'), { env })
  assert.equal(mixed.code, 1)
  assert.match(mixed.stderr, /AMBIGQA_ERR_\w+: .*disambiguate/)
})

test('--answers-from: a finished run\'s answer sets rewritten without reading again, as a run that reads them rewrites them; refused over other settings or questions it did not answer', { skip: devSkip, timeout: 600_000 }, async () => {
  const env = await readerEnv()
  const dir = tmp()
  const run = (limit: number, out: string, ...extra: string[]) =>
    runCli(['eval', 'ambignq', '--data', DEV.path, '--ids', EVAL_300.path, '--limit', String(limit), '--concurrency', '1', '--read', '3', '--out', join(dir, out), ...extra], { env })
  for (const [out, extra] of [['answers', ['--answers-only']], ['whole', []], ['rewritten', ['--answers-from', join(dir, 'answers')]]] as const) {
    const result = await run(3, out, ...extra)
    assert.equal(result.code, 0, result.stderr)
  }
  const withoutTimes = (out: string) => progressLines(join(dir, out)).map(({ timings: _t, ...rest }) => rest)
  const rewritten = withoutTimes('rewritten')
  assert.equal(rewritten.length, 3)
  assert.ok(rewritten.some((l) => l.answers.length >= 2), 'a set of two answers or more, which question disambiguation rewrites')
  assert.deepEqual(rewritten, withoutTimes('whole'), 'the same answers, evidence and rewrites as the run that read again')
  assert.deepEqual(rewritten.map((l) => l.answers.map((a) => [a.answer, a.confidence, a.evidence])), withoutTimes('answers').map((l) => l.answers.map((a) => [a.answer, a.confidence, a.evidence])))

  const other = await run(3, 'other', '--read', '2', '--answers-from', join(dir, 'answers'))
  assert.equal(other.code, 1)
  assert.match(cliError(other.stderr), /AMBIGQA_ERR_USAGE: .*other settings \(read: was 3, now 2\)/)
  const more = await run(4, 'more', '--answers-from', join(dir, 'answers'))
  assert.equal(more.code, 1)
  assert.match(cliError(more.stderr), /AMBIGQA_ERR_USAGE: .*has not answered 1 of the 4 questions/)
  const copy = await run(3, 'copy', '--answers-only', '--answers-from', join(dir, 'answers'))
  assert.equal(copy.code, 1)
  assert.match(cliError(copy.stderr), /AMBIGQA_ERR_USAGE: --answers-from with --answers-only/)
})

test('text from the data and the models is escaped in report.html', { skip: fixture.skip, timeout: 600_000 }, async () => {
  const env = await readerEnv()
  const dir = tmp()
  const hostile = '<script>alert("q")</script><img src=x onerror=alert(1)> who wrote harry potter & the \'stone\'?'
  const data: AmbigNqRecord[] = [
    { id: '"><svg onload=alert(3)>', question: hostile, annotations: [{ type: 'singleAnswer', answer: ['<b onmouseover=alert(2)>J. K. Rowling</b>'] }] },
    {
      id: 'q2',
      question: 'when did the apple i go on sale</title><style>body{display:none}</style>',
      annotations: [{ type: 'multipleQAs', qaPairs: [
        { question: '<iframe src="javascript:alert(4)"></iframe> in the US?', answer: ['July 1976'] },
        { question: 'elsewhere?', answer: ['<a href="http://evil.example/">1977</a>'] },
      ] }],
    },
  ]
  writeFileSync(join(dir, 'data.json'), JSON.stringify(data))
  const out = join(dir, 'out')
  const run = await runCli(['eval', 'ambignq', '--data', join(dir, 'data.json'), '--out', out], { env })
  assert.equal(run.code, 0, run.stderr)
  const html = readFileSync(join(out, 'report.html'), 'utf8')
  assert.ok(html.includes('&lt;script&gt;alert(&quot;q&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; who wrote harry potter &amp; the &#39;stone&#39;?'))
  assert.ok(html.includes('&lt;b onmouseover=alert(2)&gt;J. K. Rowling&lt;/b&gt;'))
  assert.ok(html.includes('&quot;&gt;&lt;svg onload=alert(3)&gt;'))
  assert.ok(html.includes('&lt;iframe src=&quot;javascript:alert(4)&quot;&gt;&lt;/iframe&gt;'))
  // Every tag in the page is one the report makes, and none has an event handler or a link out.
  const allowed = new Set(['!doctype', 'html', 'head', 'meta', 'title', 'style', 'body', 'h1', 'h2', 'h3', 'h4', 'p', 'div', 'section', 'table',
    'thead', 'tbody', 'tr', 'th', 'td', 'span', 'b', 'i', 'ul', 'ol', 'li', 'details', 'summary', 'pre', 'svg', 'text', 'line', 'rect', 'circle', 'path'])
  for (const [tag, name] of html.matchAll(/<\/?([!a-z][a-z0-9]*)\b[^>]*>/gi)) {
    assert.ok(allowed.has(name!.toLowerCase()), `unexpected tag ${tag}`)
    assert.doesNotMatch(tag, /\son[a-z]+\s*=/i, tag)
    assert.doesNotMatch(tag, /\b(src|href)\s*=/i, tag)
  }
  assert.ok(html.includes('when did the apple i go on sale&lt;/title&gt;&lt;style&gt;body{display:none}&lt;/style&gt;'))
  assert.equal((html.match(/<style>/g) ?? []).length, 1)
  assert.match(html, /Content-Security-Policy" content="default-src 'none'/)
  // The predictions still carry the raw text (they are data, not HTML).
  const predictions = readJson<Record<string, { question: string }[]>>(join(out, 'predictions.json'))
  assert.deepEqual(Object.keys(predictions), data.map((r) => r.id))
})

test('errors: missing data, unknown ids, an output folder that cannot be written, no reader', { timeout: 300_000 }, async () => {
  const dir = tmp()
  const missing = await runCli(['eval', 'ambignq', '--data', join(dir, 'nope.json'), '--out', join(dir, 'out')])
  assert.equal(missing.code, 1)
  assert.match(cliError(missing.stderr), /AMBIGQA_ERR_DATA_MISSING: .*--data.* needs .*nope\.json, which is absent/)

  const data: AmbigNqRecord[] = [
    { id: 'a1', question: 'who wrote harry potter', annotations: [{ type: 'singleAnswer', answer: ['J. K. Rowling'] }] },
    { id: 'a2', question: 'when did the apple i go on sale', annotations: [{ type: 'singleAnswer', answer: ['July 1976'] }] },
  ]
  const dataPath = join(dir, 'data.json')
  writeFileSync(dataPath, JSON.stringify(data))
  const idsPath = join(dir, 'ids.txt')
  writeFileSync(idsPath, 'a1\nno-such-id\nalso-missing\n')
  const unknown = await runCli(['eval', 'ambignq', '--data', dataPath, '--ids', idsPath, '--out', join(dir, 'out')])
  assert.equal(unknown.code, 1)
  const line = cliError(unknown.stderr)
  assert.match(line, /AMBIGQA_ERR_USAGE: --ids .*ids\.txt: 2 of 3 ids are not in .*data\.json: "no-such-id", "also-missing"/)

  const notJson = join(dir, 'bad.json')
  writeFileSync(notJson, '{"not": "a list"}')
  const bad = await runCli(['eval', 'ambignq', '--data', notJson, '--out', join(dir, 'out')])
  assert.equal(bad.code, 1)
  assert.match(cliError(bad.stderr), /AMBIGQA_ERR_REFERENCE_INVALID: /)

  // A file where the folder should be, or above it; and (when not root, who may write anywhere) a read-only folder.
  const file = join(dir, 'a-file')
  writeFileSync(file, 'x')
  const targets = [file, join(file, 'out')]
  if (process.getuid?.() !== 0) {
    const readOnly = join(dir, 'read-only')
    mkdirSync(readOnly)
    chmodSync(readOnly, 0o555)
    targets.push(readOnly, join(readOnly, 'out'))
  }
  for (const target of targets) {
    const result = await runCli(['eval', 'ambignq', '--data', dataPath, '--out', target])
    assert.equal(result.code, 1, target)
    assert.match(cliError(result.stderr), new RegExp(`AMBIGQA_ERR_OUTPUT_UNWRITABLE: cannot write to ${target.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(.+\\)\\. Pass --out`))
  }

  const badFlag = await runCli(['eval', 'ambignq', '--data', dataPath, '--out', join(dir, 'out'), '--read', '200', '--retrieve', '100'])
  assert.equal(badFlag.code, 1)
  assert.match(cliError(badFlag.stderr), /AMBIGQA_ERR_USAGE: --read 200 is more than --retrieve 100/)

  // No reader models: the pipeline opens (search works) and the first ask's error is the CLI's one line.
  const noReader = await runCli(['eval', 'ambignq', '--data', dataPath, '--out', join(dir, 'out')], {
    env: { AMBIGQA_STORE: await demoStore(), AMBIGQA_READER_KIND: 'spanseqgen', AMBIGQA_READER_SPANSEQGEN: join(dir, 'no-model'), AMBIGQA_READER_QD: join(dir, 'no-model') },
  })
  assert.equal(noReader.code, 1)
  assert.match(cliError(noReader.stderr), /^ambigqa: AMBIGQA_ERR_READER_UNAVAILABLE: ask needs the reader models, which did not load: .*no-model/)
  assert.ok(!existsSync(join(dir, 'out', 'predictions.json')))
})
