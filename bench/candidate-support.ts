// bench/candidate-support: do the decoders' scores of a candidate (reader/candidate-support.ts:
// SpanSeqGen's log P(candidate | question, passages), the closed-book knowledge check and its PMI)
// tell right candidates from wrong ones, beside the reader's own features, on the tuning sets (never
// eval-300)? Each tuning question (train/splits/reader-tune.txt on AmbigNQ train, asqa-tune.txt on
// dev) is retrieved and read as `train calibration-data` reads it (the top 20 passages, every
// candidate), labelled by the metric's normalisation, the stage run on it, and one row a question
// written to --out (appended: a stopped run resumes). Then per feature its AUC for right against
// wrong candidates (below 0.5: lower means right), the shipped verifier's AUC on the same candidates,
// and each new feature stacked on the verifier's logit (a two-input logistic model, out of fold by
// question, 5 folds): whether it adds what the verifier lacks. `--knowledge2 <gguf>` scores the
// knowledge check with a second pretrained model too (features kb2*), for the same comparison.
//   npx tsc -p . && nice node dist/bench/candidate-support.js --store data/eval-asqa --limit 60 --out data/train/candidate-support.jsonl
//   node dist/bench/candidate-support.js --report data/train/candidate-support.jsonl [--join <another run>]    # the tables from files already written
import { appendFileSync, existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../core/config.js'
import { normalizeAnswer } from '../core/normalize-answer.js'
import { DEFAULT_LM_BASE_DIR, DEFAULT_READER_DIR, DEFAULT_SHARED_DATA } from '../core/paths.js'
import type { Read } from '../core/stages.js'
import { answerFeatures, loadCalibration, logit } from '../reader/answer-set-decider.js'
import { CandidateSupport, knowledgePrefix, PRIOR_PREFIX, SUPPORT_FEATURES } from '../reader/candidate-support.js'
import { extractiveSettings, ExtractiveReader } from '../reader/extractive-reader.js'
import { LlamaLm } from '../reader/generation/llama-lm.js'
import { readAnswers } from '../reader/reader.js'
import { openRetriever } from '../retriever/open-retriever.js'
import { loadIdList } from '../src/eval/questions.js'
import { loadReference } from '../src/eval/score-ambignq.js'
import { goldClusters } from '../src/training/calibration-data.js'
import { answerSetF1 } from '../src/eval/score-ambignq.js'
import { pairedBootstrap } from './paired-bootstrap.js'

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'data/eval-asqa' },
    shared: { type: 'string', default: DEFAULT_SHARED_DATA },
    'tune-ids': { type: 'string', default: 'train/splits/reader-tune.txt' },
    'tune-dev-ids': { type: 'string', default: 'train/splits/asqa-tune.txt' },
    // The first n questions of each tuning set (every one: 824 questions, hours on two busy cores).
    limit: { type: 'string' },
    read: { type: 'string', default: '20' },
    'span-lm': { type: 'string', default: join(DEFAULT_READER_DIR, 'span-lm') },
    knowledge: { type: 'string', default: join(DEFAULT_LM_BASE_DIR, 'gemma-3-270m-q4_k_m.gguf') },
    knowledge2: { type: 'string' },
    // The reader's first candidates scored by the decoders.
    candidates: { type: 'string', default: '20' },
    // llama.cpp's threads: on a shared machine one is much faster than two (they wait on each other).
    threads: { type: 'string', default: '1' },
    out: { type: 'string', default: 'data/train/candidate-support.jsonl' },
    report: { type: 'string' },
    // Another run's file over the same questions (e.g. --knowledge2 alone): its features joined by
    // question and candidate, and the tables over the questions both hold.
    join: { type: 'string' },
  },
})

interface Row { id: string; set: string; question: string; golds: string[][][]; ms: Record<string, number>; answers: { answer: string; correct: boolean; verifier: number; features: Record<string, number> }[] }

const EXISTING = ['logProbability', 'shareOfBest', 'rank', 'bestLocal', 'localMass', 'bestPassageLogProb', 'bestRelevance', 'holdingPassages', 'spanPassages', 'titleMatch']

if (values.report === undefined) await measure()
report(values.report ?? values.out!)

async function measure(): Promise<void> {
  const config = loadConfig({ flags: { store: values.store } })
  const r = config.reader
  const calibration = loadCalibration(r.calibration)
  const done = new Set<string>()
  if (existsSync(values.out!)) {
    // A run stopped mid-line leaves a last line that does not parse: it is read again.
    for (const line of readFileSync(values.out!, 'utf8').split('\n')) {
      try { done.add((JSON.parse(line) as Row).id) } catch { /* the torn last line */ }
    }
  }
  const retriever = await openRetriever(config)
  const reader = await ExtractiveReader.load(r.extractive, { precision: r.precision, device: r.device, threads: r.threads }, { ...extractiveSettings(r), candidates: 20 })
  const threads = Number(values.threads)
  const support = await CandidateSupport.open({ spanLm: values['span-lm']!, knowledge: values.knowledge!, generate: true, candidates: Number(values.candidates), threads })
  const second = values.knowledge2 ? await LlamaLm.loadBase(values.knowledge2, { threads }) : undefined
  const read = Number(values.read)
  const sets = [
    { name: 'reader-tune', ids: loadIdList(values['tune-ids']!), records: loadReference(join(values.shared!, 'ambignq/train_light.json')) },
    { name: 'asqa-tune', ids: loadIdList(values['tune-dev-ids']!), records: loadReference(join(values.shared!, 'ambignq/dev_light.json')) },
  ]
  try {
    for (const set of sets) {
      const records = set.records.filter((q) => set.ids.has(q.id)).slice(0, values.limit ? Number(values.limit) : undefined)
      for (const [i, record] of records.entries()) {
        if (done.has(record.id)) continue
        const ms: Record<string, number> = {}
        // CPU time beside wall time: on a shared machine the wall clock measures the others too.
        const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000 }
        let c = cpu()
        let t = performance.now()
        const passages = await retriever.search(record.question, Math.max(r.retrieve, read))
        const reranked = passages.slice(0, read)
        const [readPassages] = await reader.readPassages([{ question: record.question, passages: reranked }])
        const candidates = reader.candidates({ question: record.question, passages: reranked }, reader.scoreSpans(readPassages!))
        ms.read = performance.now() - t
        ms.cpuRead = cpu() - c
        const input: Read = { question: record.question, retrieve: r.retrieve, read, passages, reranked, timings: { retrievalMs: 0, totalMs: 0 }, answers: readAnswers(candidates) }
        const before = { ...support.spent }
        c = cpu()
        const supported = await support.run(input)
        ms.cpuSupport = cpu() - c
        for (const k of ['generate', 'span', 'knowledge'] as const) ms[k] = support.spent[k] - before[k]
        const features = answerFeatures(supported)
        const golds = goldClusters(record)
        const aliases = new Set(golds.flat(2))
        const answers = supported.answers.map((a, j) => {
          const f = { ...a.features, ...features[j] }
          return { answer: a.answer, correct: aliases.has(normalizeAnswer(a.answer)), verifier: logit(calibration.answer, calibration.answer.features.map((n) => f[n]!)), features: f }
        })
        if (second) {
          t = performance.now()
          c = cpu()
          const continuations = answers.map((a) => ` ${a.answer}`)
          const given = await second.score(knowledgePrefix(record.question), continuations)
          const prior = await second.score(PRIOR_PREFIX, continuations)
          answers.forEach((a, j) => Object.assign(a.features, { kb2Mean: given[j]!.mean, kb2Pmi: given[j]!.sum - prior[j]!.sum }))
          const best = Math.max(...answers.map((a) => a.features.kb2Pmi!))
          answers.forEach((a) => { a.features.kb2Gap = a.features.kb2Pmi! - best })
          ms.knowledge2 = performance.now() - t
          ms.cpuKnowledge2 = cpu() - c
        }
        const row: Row = { id: record.id, set: set.name, question: record.question, golds, ms: Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, Math.round(v)])), answers }
        appendFileSync(values.out!, `${JSON.stringify(row)}\n`)
        console.error(`${set.name} ${i + 1}/${records.length} ${record.id}: ${answers.length} candidates (${answers.filter((a) => a.correct).length} right, ${answers.filter((a) => a.features.generated === 1).length} generated), ${JSON.stringify(row.ms)}`)
      }
    }
  } finally {
    await support.close()
    await second?.close()
    await reader.close()
    await retriever.close()
  }
}

/** The Mann-Whitney AUC of `score` for right (1) against wrong (0), ties counted half. */
export function auc(scores: readonly number[], labels: readonly boolean[]): number {
  const order = scores.map((s, i) => ({ s, y: labels[i]! })).sort((a, b) => a.s - b.s)
  let rankSum = 0
  let positives = 0
  for (let i = 0; i < order.length;) {
    let j = i
    while (j < order.length && order[j]!.s === order[i]!.s) j++
    const mid = (i + j + 1) / 2
    for (let k = i; k < j; k++) if (order[k]!.y) { rankSum += mid; positives++ }
    i = j
  }
  const negatives = order.length - positives
  return positives === 0 || negatives === 0 ? NaN : (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives)
}

/** A logistic model over standardised inputs by gradient descent (a few inputs, thousands of rows). */
function fitLogistic(x: number[][], y: boolean[]): (row: number[]) => number {
  const d = x[0]!.length
  const mean = Array.from({ length: d }, (_, j) => x.reduce((s, r) => s + r[j]!, 0) / x.length)
  const scale = Array.from({ length: d }, (_, j) => Math.sqrt(x.reduce((s, r) => s + (r[j]! - mean[j]!) ** 2, 0) / x.length) || 1)
  const z = x.map((r) => r.map((v, j) => (v - mean[j]!) / scale[j]!))
  const w = new Array<number>(d).fill(0)
  let b = 0
  for (let step = 0; step < 500; step++) {
    const gw = new Array<number>(d).fill(0)
    let gb = 0
    z.forEach((r, i) => {
      const p = 1 / (1 + Math.exp(-(b + r.reduce((s, v, j) => s + v * w[j]!, 0))))
      const e = p - (y[i] ? 1 : 0)
      gb += e
      r.forEach((v, j) => { gw[j]! += e * v })
    })
    b -= (0.5 * gb) / z.length
    w.forEach((_, j) => { w[j]! -= (0.5 * (gw[j]! + 1e-3 * w[j]!)) / z.length })
  }
  return (row) => b + row.reduce((s, v, j) => s + ((v - mean[j]!) / scale[j]!) * w[j]!, 0)
}

/** Out-of-fold logits of a model over `inputs`, 5 folds by question. */
function outOfFold(rows: readonly Row[], inputs: (a: Row['answers'][number]) => number[]): { scores: number[]; labels: boolean[] } {
  const scores: number[] = []
  const labels: boolean[] = []
  for (let fold = 0; fold < 5; fold++) {
    const train = rows.filter((_, i) => i % 5 !== fold).flatMap((r) => r.answers)
    const model = fitLogistic(train.map(inputs), train.map((a) => a.correct))
    for (const a of rows.filter((_, i) => i % 5 === fold).flatMap((r) => r.answers)) {
      scores.push(model(inputs(a)))
      labels.push(a.correct)
    }
  }
  return { scores, labels }
}

function readRows(path: string): Row[] {
  return readFileSync(path, 'utf8').split('\n').filter((l) => l.trim()).flatMap((l) => { try { return [JSON.parse(l) as Row] } catch { return [] } })
}

function report(path: string): void {
  let rows = readRows(path)
  if (values.join) {
    const other = new Map(readRows(values.join).map((r) => [r.id, r]))
    rows = rows.filter((r) => other.has(r.id)).map((r) => {
      const features = new Map(other.get(r.id)!.answers.map((a) => [a.answer, a.features]))
      return { ...r, ms: { ...other.get(r.id)!.ms, ...r.ms }, answers: r.answers.map((a) => ({ ...a, features: { ...features.get(a.answer), ...a.features } })) }
    })
  }
  const all = rows.flatMap((r) => r.answers)
  const read = all.filter((a) => a.features.generated !== 1)
  const generated = all.filter((a) => a.features.generated === 1)
  const labels = read.map((a) => a.correct)
  const fmt = (v: number) => (Number.isNaN(v) ? '—' : v.toFixed(3))
  console.log(`${rows.length} questions (${rows.filter((r) => r.set === 'reader-tune').length} reader-tune, ${rows.filter((r) => r.set === 'asqa-tune').length} asqa-tune); ${read.length} candidates read, ${labels.filter(Boolean).length} right; ${generated.length} generated, ${generated.filter((a) => a.correct).length} right`)
  const names = [...EXISTING, ...SUPPORT_FEATURES.filter((f) => f !== 'generated'), 'kb2Mean', 'kb2Pmi', 'kb2Gap'].filter((f) => read.some((a) => a.features[f] !== undefined))
  const withVerifier = (f: string) => outOfFold(rows.map((r) => ({ ...r, answers: r.answers.filter((a) => a.features.generated !== 1) })), (a) => [a.verifier, a.features[f] ?? 0])
  const verifierAlone = outOfFold(rows.map((r) => ({ ...r, answers: r.answers.filter((a) => a.features.generated !== 1) })), (a) => [a.verifier])
  console.log('\n| feature | AUC, candidates read | stacked on the verifier (out of fold) |')
  console.log('|---|---|---|')
  console.log(`| the shipped verifier's logit | ${fmt(auc(read.map((a) => a.verifier), labels))} | ${fmt(auc(verifierAlone.scores, verifierAlone.labels))} (refit alone) |`)
  for (const f of names) {
    const stacked = withVerifier(f)
    console.log(`| ${f} | ${fmt(auc(read.map((a) => a.features[f] ?? -Infinity), labels))} | ${fmt(auc(stacked.scores, stacked.labels))} |`)
  }
  const all3 = outOfFold(rows.map((r) => ({ ...r, answers: r.answers.filter((a) => a.features.generated !== 1) })), (a) => [a.verifier, ...['genMean', 'genGap', 'kbPmi', 'kbGap'].map((f) => a.features[f] ?? 0)])
  console.log(`| verifier + genMean, genGap, kbPmi, kbGap | | ${fmt(auc(all3.scores, all3.labels))} |`)
  // F1 answer on these questions with the shipped set rule (confidence ≥ 0.15, at most 4, the best
  // always) over out-of-fold confidences: the verifier refit alone against it with the decoders'
  // features (generated candidates only where the model reads `generated`), paired by question.
  const f1With = (inputs: (a: Row['answers'][number]) => number[], keepGenerated: boolean): number[] => {
    const kept = rows.map((r) => ({ ...r, answers: r.answers.filter((a) => keepGenerated || a.features.generated !== 1) }))
    const { scores } = outOfFold(kept, inputs)
    // outOfFold walks the questions fold by fold: give each question its own scores back.
    const byQuestion = new Map<Row, number[]>()
    let k = 0
    for (let fold = 0; fold < 5; fold++) {
      for (const r of kept.filter((_, i) => i % 5 === fold)) { byQuestion.set(r, scores.slice(k, k + r.answers.length)); k += r.answers.length }
    }
    return kept.map((r) => {
      const conf = byQuestion.get(r)!.map((z) => 1 / (1 + Math.exp(-z)))
      const ranked = r.answers.map((a, i) => ({ a, c: conf[i]! })).sort((x, y) => y.c - x.c)
      const set = ranked.filter((x, i) => i === 0 || x.c >= 0.15).slice(0, 4).map((x) => x.a.answer)
      return 100 * Math.max(0, ...r.golds.map((clusters) => answerSetF1(clusters, set)))
    })
  }
  if (rows.every((r) => r.golds)) {
    // The shipped verifier was fit on the whole tuning sets, these questions among them: its logit
    // is in-sample here. So each comparison twice: on its logit, and with the verifier's own inputs
    // refit out of fold beside the new ones (no in-sample part).
    const own = loadCalibration(loadConfig().reader.calibration).answer.features
    for (const [title, baseInputs] of [['the shipped verifier\'s logit', (a: Row['answers'][number]) => [a.verifier]], [`the verifier's ${own.length} inputs refit`, (a: Row['answers'][number]) => own.map((f) => a.features[f] ?? 0)]] as const) {
      tuningF1(title, baseInputs)
    }
  }
  function tuningF1(title: string, baseInputs: (a: Row['answers'][number]) => number[]): void {
    const base = f1With(baseInputs, false)
    const oofBase = outOfFold(rows.map((r) => ({ ...r, answers: r.answers.filter((a) => a.features.generated !== 1) })), baseInputs)
    const mean = (xs: number[]) => xs.reduce((t, x) => t + x, 0) / xs.length
    console.log(`\n| ${title}, out of fold, and (the shipped set rule) | AUC, candidates read | F1 answer on these questions | against it alone (95% paired interval) |`)
    console.log('|---|---|---|---|')
    console.log(`| alone | ${fmt(auc(oofBase.scores, oofBase.labels))} | ${mean(base).toFixed(1)} | |`)
    const variants: [string, string[], boolean][] = [
      ['+ genMean, genGap', ['genMean', 'genGap'], false], ['+ kbPmi, kbGap', ['kbPmi', 'kbGap'], false], ['+ genEnd', ['genEnd'], false],
      ['+ genMean, genGap, kbPmi, kbGap', ['genMean', 'genGap', 'kbPmi', 'kbGap'], false], ['+ those and the generated candidates', ['genMean', 'genGap', 'kbPmi', 'kbGap', 'generated'], true],
      ...(['kb2Pmi', 'kb2Gap'].every((f) => read.some((a) => a.features[f] !== undefined)) ? [['+ kb2Pmi, kb2Gap (the second knowledge model)', ['kb2Pmi', 'kb2Gap'], false] as [string, string[], boolean]] : []),
    ]
    for (const [name, features, generatedToo] of variants) {
      if (!features.every((f) => all.some((a) => a.features[f] !== undefined))) continue
      const inputs = (a: Row['answers'][number]) => [...baseInputs(a), ...features.map((f) => a.features[f] ?? 0)]
      const after = f1With(inputs, generatedToo)
      const oof = outOfFold(rows.map((r) => ({ ...r, answers: r.answers.filter((a) => a.features.generated !== 1) })), inputs)
      const d = pairedBootstrap(base, after)
      console.log(`| ${name} | ${fmt(auc(oof.scores, oof.labels))} | ${mean(after).toFixed(1)} | ${d.difference >= 0 ? '+' : ''}${d.difference.toFixed(1)} (${d.low.toFixed(1)} to ${d.high.toFixed(1)}), ${d.changed} questions changed |`)
    }
  }
  if (generated.length > 0) {
    const gl = generated.map((a) => a.correct)
    console.log(`\nGenerated candidates the reader missed: ${generated.length} in ${rows.filter((r) => r.answers.some((a) => a.features.generated === 1)).length} questions, ${gl.filter(Boolean).length} right (${((100 * gl.filter(Boolean).length) / generated.length).toFixed(1)}%; candidates read: ${((100 * labels.filter(Boolean).length) / read.length).toFixed(1)}%); questions with a right answer only among them: ${rows.filter((r) => r.answers.some((a) => a.correct && a.features.generated === 1) && !r.answers.some((a) => a.correct && a.features.generated !== 1)).length}`)
  }
  const ms = (k: string) => rows.map((r) => r.ms[k]).filter((v): v is number => v !== undefined).sort((a, b) => a - b)
  const p50 = (xs: number[]) => xs[Math.floor(xs.length / 2)]
  console.log(`\nms per question, p50 (wall: the machine's load decides these, see the report): retrieval and reading ${p50(ms('read'))}; SpanSeqGen's line ${p50(ms('generate'))}, its scores ${p50(ms('span'))}, the knowledge check ${p50(ms('knowledge'))}${ms('knowledge2').length ? `, the second knowledge model ${p50(ms('knowledge2'))}` : ''}`)
  if (ms('cpuRead').length) console.log(`CPU ms per question, p50 (this process, all its threads): retrieval and reading ${p50(ms('cpuRead'))}; the stage ${p50(ms('cpuSupport'))}${ms('cpuKnowledge2').length ? `; the second knowledge model ${p50(ms('cpuKnowledge2'))}` : ''}`)
}
