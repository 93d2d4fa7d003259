// End-to-end AmbigNQ evaluation: every question through the answering pipeline, N in flight, each
// finished question appended to <out>/progress.jsonl so a killed run resumes where it stopped;
// then the official-format predictions, the official metric, timings and an HTML report, each
// written atomically.
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { RetrievedPassage } from '../../core/retriever.js'
import type { Config } from '../../core/config.js'
import { ERR_DATA_MISSING, ERR_USAGE } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import type { Pipeline } from '../pipeline/pipeline.js'
import type { Disambiguated, Read, StageTimings } from '../../core/stages.js'
import { answersFrom } from './answers-from.js'
import { Progress } from '../../core/progress.js'
import type { EvalMetrics, PassageRecord, ProgressRecord, TimingSummary } from './eval-records.js'
import { percentile } from './evaluate-retriever.js'
import { loadIdList } from './questions.js'
import { renderReport } from './report-html.js'
import { ambiguityPoints, ambiguitySummary, answerPoints, confidenceSummary, type Scored } from './confidence-metrics.js'
import { checkSettings, LineAppender, lockOutDir, PASSAGES_FILE, prepareOutDir, PROGRESS_FILE, readJsonLines } from './run-folder.js'
import { writeAtomic } from '../../core/write-atomic.js'
import { loadReference, type AmbigNqRecord, type PredictedQaPair, scoreAmbigNq } from './score-ambignq.js'

export interface EvalAmbigNqOptions {
  /** AmbigNQ light (or full) JSON: questions and gold annotations. */
  dataPath: string
  /** Evaluate only these ids (one a line), in this order. */
  idsPath?: string
  outDir: string
  retrieve: number
  read: number
  /** Questions in flight at once. */
  concurrency: number
  /** Evaluate only the first N questions (after --ids). */
  limit?: number
  /** false: answers without rewritten questions (F1 answer as always; BLEU and EDIT-F1 then score the prompt). */
  disambiguate?: boolean
  /** A finished run's folder whose answer sets are rewritten instead of read again (answers-from.ts). */
  answersFrom?: string
}

export interface EvalSummary {
  metrics: EvalMetrics
  files: { predictions: string; answers: string; metrics: string; report: string; progress: string }
}

// ---------------------------------------------------------------------------------------------
// Inputs

/** The reference records to evaluate: the data file, cut to the id list (in its order) and the limit. */
export function loadEvalRecords(dataPath: string, idsPath?: string, limit?: number): AmbigNqRecord[] {
  if (!existsSync(dataPath)) throw ERR_DATA_MISSING(dataPath, '`ambigqa eval ambignq --data`')
  let records = loadReference(dataPath)
  if (idsPath !== undefined) {
    const ids = loadIdList(idsPath)
    if (ids.size === 0) throw ERR_USAGE(`--ids ${idsPath} lists no ids`, 'Give a file with one question id a line')
    const byId = new Map(records.map((r) => [r.id, r]))
    const unknown = [...ids].filter((id) => !byId.has(id))
    if (unknown.length > 0) {
      const shown = unknown.slice(0, 10).map((id) => JSON.stringify(id)).join(', ')
      const more = unknown.length > 10 ? ` and ${unknown.length - 10} more` : ''
      throw ERR_USAGE(
        `--ids ${idsPath}: ${unknown.length} of ${ids.size} ids are not in ${dataPath}: ${shown}${more}`,
        'Use an id list drawn from this data file (e.g. splits/eval-300.txt with ambignq/dev_light.json)',
      )
    }
    records = [...ids].map((id) => byId.get(id)!)
  }
  if (limit !== undefined) records = records.slice(0, limit)
  if (records.length === 0) throw ERR_USAGE(`${dataPath} holds no questions to evaluate`, 'Give an AmbigNQ file with questions')
  return records
}

/** The settings that make answers comparable: a resumed run must use the same ones. */
export function runSettings(config: Config, options: Pick<EvalAmbigNqOptions, 'retrieve' | 'read' | 'disambiguate' | 'answersFrom'>): Record<string, unknown> {
  // Every reader setting may change the answers, except where and how fast they are computed
  // (device, threads, maxBatch) and the passage counts (recorded above, as the run's own): a new
  // setting is recorded without an edit here.
  const { device, threads, maxBatch, read, retrieve, ...r } = config.reader
  return {
    retrieve: options.retrieve,
    read: options.read,
    ...(options.disambiguate === false ? { disambiguate: false } : {}),
    ...(options.answersFrom !== undefined ? { answersFrom: resolve(options.answersFrom) } : {}),
    retriever: config.retriever,
    store: config.retriever === 'bm25-es' ? config.elasticsearch.url : resolve(config.store),
    reranker: config.reranker.model ? { model: resolve(config.reranker.model), precision: config.reranker.precision, maxTokens: config.reranker.maxTokens } : 'none',
    reader: {
      ...r,
      // The model folders as absolute paths, so a run resumed from another folder compares equal.
      spanseqgen: resolve(r.spanseqgen), extractive: resolve(r.extractive), qd: resolve(r.qd),
      // Another calibration gives other confidences and answer sets.
      calibration: r.calibration === '' ? '' : resolve(r.calibration),
    },
  }
}

// ---------------------------------------------------------------------------------------------
// Running the questions

const round2 = (x: number) => Math.round(x * 100) / 100

export function toProgressRecord(id: string, result: Disambiguated): ProgressRecord {
  const timings: StageTimings = { retrievalMs: round2(result.timings.retrievalMs), totalMs: round2(result.timings.totalMs) }
  if (result.timings.rerankMs !== undefined) timings.rerankMs = round2(result.timings.rerankMs)
  if (result.timings.readMs !== undefined) timings.readMs = round2(result.timings.readMs)
  if (result.timings.supportMs !== undefined) timings.supportMs = round2(result.timings.supportMs)
  if (result.timings.decideMs !== undefined) timings.decideMs = round2(result.timings.decideMs)
  if (result.timings.disambiguateMs !== undefined) timings.disambiguateMs = round2(result.timings.disambiguateMs)
  return {
    id,
    question: result.question,
    answers: result.answers.map((a) => ({
      answer: a.answer, question: a.question, rewritten: a.rewritten, confidence: a.confidence, ...(a.readerProbability !== undefined ? { readerProbability: a.readerProbability } : {}), evidence: a.evidence.map((p) => p.id),
    })),
    read: result.reranked.map((p) => p.id),
    ...(result.ambiguity !== undefined ? { ambiguity: Math.round(result.ambiguity * 1e4) / 1e4 } : {}),
    timings,
  }
}

/** The passages of a result the report may show: those read, and any evidence beyond them. */
function passagesOf(result: Disambiguated): RetrievedPassage[] {
  const seen = new Map<string, RetrievedPassage>()
  for (const p of result.reranked) seen.set(p.id, p)
  for (const a of result.answers) for (const p of a.evidence) if (!seen.has(p.id)) seen.set(p.id, p)
  return [...seen.values()]
}

/**
 * Answers `pending` with `concurrency` questions in flight, calling `onAnswer` as each finishes;
 * with `from`, each question's answer set is the one it gives, and only question disambiguation
 * runs. The first failure stops the run (the others are aborted) and is thrown.
 */
export async function answerAll(
  pipeline: Pipeline,
  pending: readonly AmbigNqRecord[],
  options: { retrieve: number; read: number; concurrency: number; disambiguate?: boolean; from?: (record: AmbigNqRecord) => Read },
  onAnswer: (record: AmbigNqRecord, result: Disambiguated) => void,
): Promise<void> {
  const controller = new AbortController()
  let next = 0
  let failure: { error: unknown } | undefined
  const worker = async () => {
    while (!failure) {
      const record = pending[next++]
      if (!record) return
      try {
        const result = options.from
          ? await pipeline.disambiguate(options.from(record), controller.signal)
          : await pipeline.ask(record.question, { retrieve: options.retrieve, read: options.read, ...(options.disambiguate === false ? { disambiguate: false } : {}) }, controller.signal)
        if (failure) return
        onAnswer(record, result)
      } catch (error) {
        if (!failure) {
          failure = { error }
          controller.abort()
        }
        return
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency, pending.length)) }, worker))
  if (failure) throw failure.error
}

// ---------------------------------------------------------------------------------------------
// Outputs

/** Official full-format predictions: id → [{question, answer}]; no answer gives one empty answer. */
export function fullPredictions(records: readonly AmbigNqRecord[], done: ReadonlyMap<string, ProgressRecord>): Record<string, PredictedQaPair[]> {
  const out: Record<string, PredictedQaPair[]> = {}
  for (const rec of records) {
    const answers = done.get(rec.id)?.answers ?? []
    // The official scorer needs a non-empty list: an empty answer (which matches nothing) stands for "none".
    out[rec.id] = answers.length > 0
      ? answers.map((a) => ({ question: a.question.trim() !== '' ? a.question : rec.question, answer: a.answer }))
      : [{ question: rec.question, answer: '' }]
  }
  return out
}

function summarizeTimes(values: number[]): TimingSummary {
  if (values.length === 0) return { n: 0, p50Ms: NaN, p99Ms: NaN, meanMs: NaN }
  const mean = values.reduce((s, v) => s + v, 0) / values.length
  return { n: values.length, p50Ms: round2(percentile(values, 50)), p99Ms: round2(percentile(values, 99)), meanMs: round2(mean) }
}

export function timingSummary(records: readonly ProgressRecord[]): EvalMetrics['timings'] {
  const pick = (f: (t: StageTimings) => number | undefined) => records.map((r) => f(r.timings)).filter((v): v is number => typeof v === 'number')
  return {
    total: summarizeTimes(pick((t) => t.totalMs)),
    retrieval: summarizeTimes(pick((t) => t.retrievalMs)),
    rerank: summarizeTimes(pick((t) => t.rerankMs)),
    read: summarizeTimes(pick((t) => t.readMs)),
    decide: summarizeTimes(pick((t) => t.decideMs)),
    disambiguate: summarizeTimes(pick((t) => t.disambiguateMs)),
  }
}

const nullWhenEmpty = (points: Scored[]) => (points.length > 0 ? confidenceSummary(points) : null)

// ---------------------------------------------------------------------------------------------
// The whole evaluation

export interface EvalEnvironment {
  config: Config
  log: Logger
  /** Opens the pipeline; called only when questions remain to be answered. */
  openPipeline: () => Promise<Pipeline>
}

export async function evaluateAmbigNq(options: EvalAmbigNqOptions, env: EvalEnvironment): Promise<EvalSummary> {
  const { log } = env
  const started = performance.now()
  const records = loadEvalRecords(options.dataPath, options.idsPath, options.limit)
  const outDir = resolve(options.outDir)
  prepareOutDir(outDir)
  const release = lockOutDir(outDir)
  try {
    const settings = runSettings(env.config, options)
    if (options.answersFrom !== undefined && options.disambiguate === false) throw ERR_USAGE('--answers-from with --answers-only would only copy that run', 'Leave out --answers-only: --answers-from rewrites its answers')
    const from = options.answersFrom === undefined ? undefined : answersFrom(options.answersFrom, settings, records)
    checkSettings(outDir, settings)
    const progressPath = join(outDir, PROGRESS_FILE)
    const passagesPath = join(outDir, PASSAGES_FILE)
    const done = new Map<string, ProgressRecord>()
    for (const r of readJsonLines<ProgressRecord>(progressPath, log).items) if (typeof r?.id === 'string') done.set(r.id, r)
    const passages = new Map<string, PassageRecord>()
    for (const p of readJsonLines<PassageRecord>(passagesPath, log).items) if (typeof p?.id === 'string') passages.set(p.id, p)

    const pending = records.filter((r) => !done.has(r.id))
    const resumed = records.length - pending.length
    log.info({ questions: records.length, resumed, pending: pending.length, concurrency: options.concurrency, out: outDir },
      resumed > 0 ? `resuming: ${resumed} of ${records.length} questions already answered in ${progressPath}` : `answering ${records.length} questions`)

    let answeredNow = 0
    if (pending.length > 0) {
      const pipeline = await env.openPipeline()
      const progressOut = new LineAppender(progressPath)
      const passagesOut = new LineAppender(passagesPath)
      // Questions/s to two decimals: a reader does a few a second, not thousands.
      const progress = new Progress({ label: 'answering AmbigNQ', unit: 'questions', log, fraction: () => answeredNow / pending.length, rateDecimals: 2, fields: { of: pending.length, resumed } })
      try {
        await answerAll(pipeline, pending, { ...options, ...(from ? { from } : {}) }, (record, result) => {
          // Passages first: a question in progress.jsonl always has its passages on disk.
          for (const p of passagesOf(result)) {
            if (passages.has(p.id)) continue
            const saved = { id: p.id, title: p.title, text: p.text }
            passages.set(p.id, saved)
            passagesOut.append(saved)
          }
          const line = toProgressRecord(record.id, result)
          progressOut.append(line)
          done.set(record.id, line)
          progress.update(++answeredNow)
        })
        progress.done()
      } finally {
        progressOut.close()
        passagesOut.close()
        await pipeline.close()
      }
    }

    const predictions = fullPredictions(records, done)
    const answersOnly: Record<string, string[]> = {}
    for (const [id, pairs] of Object.entries(predictions)) answersOnly[id] = pairs.map((p) => p.answer)
    const score = scoreAmbigNq(records, predictions)
    const evaluated = records.map((r) => done.get(r.id)!)
    const seconds = (performance.now() - started) / 1000
    const metrics: EvalMetrics = {
      ...score.metrics,
      timings: timingSummary(evaluated),
      confidence: confidenceSummary(answerPoints(records, done)),
      readerConfidence: nullWhenEmpty(answerPoints(records, done, (a) => a.readerProbability)),
      ambiguity: ambiguitySummary(ambiguityPoints(records, done)),
      run: { questions: records.length, resumed, answeredNow, seconds: round2(seconds), questionsPerSecond: round2(answeredNow / seconds) },
      config: {
        data: resolve(options.dataPath),
        ids: options.idsPath === undefined ? null : resolve(options.idsPath),
        limit: options.limit ?? null,
        concurrency: options.concurrency,
        ...settings,
        bm25: env.config.bm25,
        reader: { ...env.config.reader, spanseqgen: resolve(env.config.reader.spanseqgen), qd: resolve(env.config.reader.qd) },
      },
    }
    const files = {
      predictions: join(outDir, 'predictions.json'),
      answers: join(outDir, 'predictions-answers.json'),
      metrics: join(outDir, 'metrics.json'),
      report: join(outDir, 'report.html'),
      progress: progressPath,
    }
    writeAtomic(files.predictions, `${JSON.stringify(predictions, null, 1)}\n`)
    writeAtomic(files.answers, `${JSON.stringify(answersOnly, null, 1)}\n`)
    writeAtomic(files.metrics, `${JSON.stringify(metrics, null, 2)}\n`)
    writeAtomic(files.report, renderReport({ records, done, passages, perQuestion: score.perQuestion, metrics, dataPath: options.dataPath }))
    return { metrics, files }
  } finally {
    release()
  }
}
