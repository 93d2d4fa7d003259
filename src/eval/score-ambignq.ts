// The official AmbigNQ metric (ambigqa_evaluate_script.py + coco-caption BLEU, shmsw25/AmbigQA
// @5c8cdb1) as specified in docs/evaluation.md: F1 over answer sets, and in full mode (predictions
// with disambiguated questions) F1 BLEU-1..4 and F1 EDIT-F1 over question-answer pairs.
//
// Where the specification and the original Python differ, we follow the specification (which the
// golden outputs follow too): EDIT-F1 takes the best gold question alternative, not only the first,
// and scores 1 (not 0) when neither the gold nor the predicted question edits the prompt; the PTB
// bracket tokens are dropped whatever their case (see COCO_PUNCTUATIONS). Missing ids and empty
// prediction lists, on which the Python crashes, are reported as errors naming the ids.
import { readFileSync } from 'node:fs'
import { ERR_PREDICTIONS_INVALID, ERR_REFERENCE_INVALID } from '../../core/errors.js'
import { bleuScores } from './bleu.js'
import { editF1 } from './edit-f1.js'
import { normalizeAnswer, pyStrip } from '../../core/normalize-answer.js'
import { cocoTokenizeLines } from './ptb-tokenize.js'
import { greedyF1 } from './greedy-f1.js'

// ---------------------------------------------------------------------------------------------
// Types

export interface SingleAnswerAnnotation {
  type: 'singleAnswer'
  /** Aliases of the one answer. */
  answer: string[]
}

export interface QaPair {
  /** The disambiguated question; alternatives may be joined by `|`. */
  question: string
  /** Aliases of its answer. */
  answer: string[]
}

export interface MultipleQAsAnnotation {
  type: 'multipleQAs'
  qaPairs: QaPair[]
}

export type AmbigNqAnnotation = SingleAnswerAnnotation | MultipleQAsAnnotation

/** One AmbigNQ record (light format; the full format has more fields, which are ignored). */
export interface AmbigNqRecord {
  id: string
  /** The prompt question; may hold alternatives joined by `|` (kept whole, as the official script does). */
  question: string
  annotations: AmbigNqAnnotation[]
  [extra: string]: unknown
}

/** A predicted question-answer pair (full mode). */
export interface PredictedQaPair {
  question: string
  answer: string
}

/** A validated prediction file: answer strings per id, or question-answer pairs per id. */
export type AmbigNqPredictions =
  | { mode: 'answers'; byId: Map<string, string[]> }
  | { mode: 'full'; byId: Map<string, PredictedQaPair[]> }

export interface MetricValue {
  /** Mean over all questions. */
  all: number
  /** Mean over the questions with no singleAnswer annotation (NaN, null in JSON, if there are none). */
  multi: number
}

export const QUESTION_METRICS = ['F1 bleu1', 'F1 bleu2', 'F1 bleu3', 'F1 bleu4', 'F1 edit-f1'] as const
export type QuestionMetricName = (typeof QUESTION_METRICS)[number]
export type MetricName = 'F1 answer' | QuestionMetricName

/**
 * The summary. In answer-only mode (predictions are lists of strings) there are no questions to
 * score: the question metrics are null, and per-question results hold only `F1 answer` (as the
 * official per-example output does).
 */
export interface AmbigNqMetrics {
  'F1 answer': MetricValue
  'F1 bleu1': MetricValue | null
  'F1 bleu2': MetricValue | null
  'F1 bleu3': MetricValue | null
  'F1 bleu4': MetricValue | null
  'F1 edit-f1': MetricValue | null
  n_all: number
  n_multi: number
}

export interface AmbigNqScore {
  metrics: AmbigNqMetrics
  /** id → metric → value, in reference order. */
  perQuestion: Record<string, Record<string, number>>
}

// ---------------------------------------------------------------------------------------------
// Loading and validation

const SHOW_IDS = 5

function describeIds(ids: readonly string[]): string {
  const shown = ids.slice(0, SHOW_IDS).map((id) => JSON.stringify(id)).join(', ')
  return ids.length > SHOW_IDS ? `${shown} and ${ids.length - SHOW_IDS} more (${ids.length} in all)` : shown
}

function typeName(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'a list'
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`
}

/** Where a JSON.parse error happened, as "line L, column C (character P)" when the engine says. */
function jsonErrorWhere(text: string, err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  const m = /at position (\d+)/.exec(message)
  let pos: number | undefined = m ? Number(m[1]) : undefined
  if (pos === undefined && /Unexpected end of JSON input/.test(message)) pos = text.length
  if (pos === undefined) return `invalid JSON (${message})`
  const before = text.slice(0, pos)
  const line = before.split('\n').length
  const column = pos - before.lastIndexOf('\n')
  return `invalid JSON at line ${line}, column ${column} (character ${pos}): ${message.replace(/ in JSON at position \d+.*$/, '')}`
}

function readJson(path: string, fail: (problem: string) => Error): unknown {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    throw fail(code === 'ENOENT' ? 'the file does not exist' : `cannot be read (${code ?? String(err)})`)
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  try {
    return JSON.parse(text) as unknown
  } catch (err) {
    throw fail(jsonErrorWhere(text, err))
  }
}

function isStringList(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((s) => typeof s === 'string')
}

/** Checks that `raw` is a list of AmbigNQ records; `source` names it in errors. */
export function validateReference(raw: unknown, source = 'reference'): AmbigNqRecord[] {
  const fail = (problem: string) => ERR_REFERENCE_INVALID(source, problem)
  if (!Array.isArray(raw)) throw fail(`expected a JSON list of records, found ${typeName(raw)}`)
  const seen = new Set<string>()
  raw.forEach((rec: unknown, i) => {
    const where = `record ${i}`
    if (typeof rec !== 'object' || rec === null || Array.isArray(rec)) throw fail(`${where} is ${typeName(rec)}, not an object`)
    const r = rec as Record<string, unknown>
    if (typeof r.id !== 'string' || r.id === '') throw fail(`${where} has no string "id"`)
    const at = `record ${i} (id ${JSON.stringify(r.id)})`
    if (seen.has(r.id)) throw fail(`${at}: the id appears twice`)
    seen.add(r.id)
    if (typeof r.question !== 'string') throw fail(`${at} has no string "question"`)
    if (!Array.isArray(r.annotations) || r.annotations.length === 0) throw fail(`${at} has no "annotations" list`)
    r.annotations.forEach((ann: unknown, j) => {
      const a = ann as Record<string, unknown> | null
      if (typeof a !== 'object' || a === null) throw fail(`${at}, annotation ${j} is not an object`)
      if (a.type === 'singleAnswer') {
        if (!isStringList(a.answer) || a.answer.length === 0) throw fail(`${at}, annotation ${j}: "answer" must be a non-empty list of strings`)
      } else if (a.type === 'multipleQAs') {
        if (!Array.isArray(a.qaPairs) || a.qaPairs.length === 0) throw fail(`${at}, annotation ${j}: "qaPairs" must be a non-empty list`)
        a.qaPairs.forEach((pair: unknown, k) => {
          const p = pair as Record<string, unknown> | null
          if (typeof p !== 'object' || p === null || typeof p.question !== 'string' || !isStringList(p.answer) || p.answer.length === 0) {
            throw fail(`${at}, annotation ${j}, qaPair ${k}: needs a string "question" and a non-empty "answer" list of strings`)
          }
        })
      } else {
        throw fail(`${at}, annotation ${j}: unknown type ${JSON.stringify(a.type)} (expected "singleAnswer" or "multipleQAs")`)
      }
    })
  })
  return raw as AmbigNqRecord[]
}

/** Reads and validates an AmbigNQ reference file. */
export function loadReference(path: string): AmbigNqRecord[] {
  return validateReference(readJson(path, (problem) => ERR_REFERENCE_INVALID(path, problem)), path)
}

/**
 * Checks a parsed prediction object against the reference: every reference id present with a
 * non-empty list (a bare string counts as a one-element list), all entries answer strings or all
 * `{question, answer}` objects with string fields. Extra ids are ignored.
 */
export function validatePredictions(
  raw: unknown,
  reference: readonly AmbigNqRecord[],
  source = 'predictions',
): AmbigNqPredictions {
  const fail = (problem: string) => ERR_PREDICTIONS_INVALID(source, problem)
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw fail(`expected a JSON object keyed by question id, found ${typeName(raw)}`)
  }
  const obj = raw as Record<string, unknown>
  const missing: string[] = []
  const empty: string[] = []
  const wrongType: string[] = []
  let strings = 0
  let pairs = 0
  const badEntries: string[] = []
  for (const rec of reference) {
    if (!Object.prototype.hasOwnProperty.call(obj, rec.id)) {
      missing.push(rec.id)
      continue
    }
    let value = obj[rec.id]
    if (typeof value === 'string') value = [value]
    if (!Array.isArray(value)) {
      wrongType.push(rec.id)
      continue
    }
    if (value.length === 0) {
      empty.push(rec.id)
      continue
    }
    for (const item of value) {
      if (typeof item === 'string') strings++
      else if (
        typeof item === 'object' && item !== null && !Array.isArray(item) &&
        typeof (item as Record<string, unknown>).question === 'string' &&
        typeof (item as Record<string, unknown>).answer === 'string'
      ) pairs++
      else {
        badEntries.push(rec.id)
        break
      }
    }
  }
  if (missing.length > 0) {
    throw fail(`${missing.length} of ${reference.length} reference ids have no prediction: ${describeIds(missing)}`)
  }
  if (empty.length > 0) {
    throw fail(`${empty.length} ids have an empty prediction list (at least one answer is needed): ${describeIds(empty)}`)
  }
  if (wrongType.length > 0) {
    throw fail(`${wrongType.length} ids have a prediction that is not a list: ${describeIds(wrongType)}`)
  }
  if (badEntries.length > 0) {
    throw fail(`${badEntries.length} ids have an entry that is neither a string nor a {"question": string, "answer": string} object: ${describeIds(badEntries)}`)
  }
  if (strings > 0 && pairs > 0) {
    throw fail(`mixes answer strings (${strings}) and question-answer objects (${pairs}); use one form for the whole file`)
  }
  const listFor = (id: string): unknown[] => {
    const v = obj[id]
    return typeof v === 'string' ? [v] : (v as unknown[])
  }
  if (pairs > 0) {
    const byId = new Map<string, PredictedQaPair[]>()
    for (const rec of reference) {
      byId.set(rec.id, listFor(rec.id).map((p) => {
        const q = p as PredictedQaPair
        return { question: q.question, answer: q.answer }
      }))
    }
    return { mode: 'full', byId }
  }
  const byId = new Map<string, string[]>()
  for (const rec of reference) byId.set(rec.id, listFor(rec.id) as string[])
  return { mode: 'answers', byId }
}

/** Reads and validates a prediction file against the reference. */
export function loadPredictions(path: string, reference: readonly AmbigNqRecord[]): AmbigNqPredictions {
  return validatePredictions(readJson(path, (problem) => ERR_PREDICTIONS_INVALID(path, problem)), reference, path)
}

// ---------------------------------------------------------------------------------------------
// Scoring

/**
 * get_f1: golds are answer clusters (alias lists), preds are strings, matched greedily one-to-one in
 * order (for each gold, the first unused prediction that exact-matches one of its aliases).
 */
export function answerSetF1(golds: readonly (readonly string[])[], preds: readonly string[]): number {
  const goldSets = golds.map((aliases) => new Set(aliases.map(normalizeAnswer)))
  return greedyF1(goldSets, preds.map(normalizeAnswer), (aliases, pred) => aliases.has(pred))
}

/** The normalized, PTB-tokenized question texts the question metrics compare. */
interface QuestionTexts {
  prompt: string[]
  /** [record][annotation][pair] → gold alternatives (undefined for singleAnswer annotations). */
  gold: (string[][] | undefined)[][]
  /** [record][pair] → predicted question. */
  predicted: string[][]
}

function splitAlternatives(question: string): string[] {
  return question.split('|').map(pyStrip).filter((s) => s.length > 0)
}

/**
 * Tokenizes every question the way the official script does: one PTBTokenizer run over all prompt,
 * gold and predicted questions in this order (so look-aheads across lines agree), punctuation tokens
 * dropped, then normalize_answer.
 */
function tokenizeQuestions(reference: readonly AmbigNqRecord[], preds: Map<string, PredictedQaPair[]>): QuestionTexts {
  const lines: string[] = []
  const clean = (s: string) => s.replace(/\n/g, ' ')
  for (const rec of reference) {
    lines.push(clean(rec.question))
    for (const ann of rec.annotations) {
      if (ann.type !== 'multipleQAs') continue
      for (const pair of ann.qaPairs) for (const alt of splitAlternatives(pair.question)) lines.push(clean(alt))
    }
  }
  for (const rec of reference) for (const p of preds.get(rec.id) ?? []) lines.push(clean(p.question))
  const tokenized = cocoTokenizeLines(lines).map(normalizeAnswer)
  let at = 0
  const next = () => tokenized[at++] ?? ''
  const out: QuestionTexts = { prompt: [], gold: [], predicted: [] }
  for (const rec of reference) {
    out.prompt.push(next())
    out.gold.push(rec.annotations.map((ann) => {
      if (ann.type !== 'multipleQAs') return undefined
      return ann.qaPairs.map((pair) => {
        const alts = splitAlternatives(pair.question).map(() => next())
        // A gold question with no text at all: compare against one empty question.
        return alts.length > 0 ? alts : ['']
      })
    }))
  }
  for (const rec of reference) out.predicted.push((preds.get(rec.id) ?? []).map(() => next()))
  return out
}

interface PairScores {
  i: number
  j: number
  values: Record<QuestionMetricName, number>
}

function questionPairScores(predicted: string, goldAlts: readonly string[], prompt: string): Record<QuestionMetricName, number> {
  const [b1 = 0, b2 = 0, b3 = 0, b4 = 0] = bleuScores(predicted, goldAlts)
  return { 'F1 bleu1': b1, 'F1 bleu2': b2, 'F1 bleu3': b3, 'F1 bleu4': b4, 'F1 edit-f1': editF1(prompt, predicted, goldAlts) }
}

function scoreQuestion(
  rec: AmbigNqRecord,
  answers: readonly string[],
  questions: { prompt: string; gold: (string[][] | undefined)[]; predicted: string[] } | undefined,
): Record<string, number> {
  const ev: Record<string, number> = {}
  const raise = (m: string, v: number) => {
    ev[m] = Math.max(ev[m] ?? 0, v)
  }
  const predNorm = answers.map(normalizeAnswer)
  rec.annotations.forEach((ann, annIndex) => {
    if (ann.type === 'singleAnswer') {
      const f1 = answerSetF1([ann.answer], answers)
      raise('F1 answer', f1)
      if (questions) for (const m of QUESTION_METRICS) raise(m, f1)
      return
    }
    raise('F1 answer', answerSetF1(ann.qaPairs.map((p) => p.answer), answers))
    if (!questions) return
    const goldQuestions = questions.gold[annIndex] ?? []
    const candidates: PairScores[] = []
    ann.qaPairs.forEach((pair, i) => {
      const aliases = new Set(pair.answer.map(normalizeAnswer))
      predNorm.forEach((p, j) => {
        if (!aliases.has(p)) return
        candidates.push({ i, j, values: questionPairScores(questions.predicted[j] ?? '', goldQuestions[i] ?? [''], questions.prompt) })
      })
    })
    for (const m of QUESTION_METRICS) {
      // Stable sort, best first: ties keep (i, j) order, as Python's sorted(reverse=True) does.
      const ranked = [...candidates].sort((x, y) => y.values[m] - x.values[m])
      const usedGold = new Array<boolean>(ann.qaPairs.length).fill(false)
      const usedPred = new Array<boolean>(answers.length).fill(false)
      let total = 0
      for (const c of ranked) {
        if (usedGold[c.i] || usedPred[c.j]) continue
        usedGold[c.i] = true
        usedPred[c.j] = true
        total += c.values[m]
      }
      raise(m, (2 * total) / (ann.qaPairs.length + answers.length))
    }
  })
  return ev
}

function mean(values: readonly number[]): number {
  // Sequential summation in reference order, as the golden summaries were computed.
  let sum = 0
  for (const v of values) sum += v
  return values.length === 0 ? Number.NaN : sum / values.length
}

/** True for a question with no singleAnswer annotation (the "multi" subset). */
export function isMultiAnswer(rec: AmbigNqRecord): boolean {
  return !rec.annotations.some((a) => a.type === 'singleAnswer')
}

/**
 * Scores predictions against AmbigNQ reference records. `predictions` is the parsed prediction
 * file (id → list of answers, or of {question, answer}); it is validated first and an
 * AMBIGQA_ERR_PREDICTIONS_INVALID error names missing ids or empty lists.
 */
export function scoreAmbigNq(reference: AmbigNqRecord[], predictions: Record<string, unknown> | AmbigNqPredictions): AmbigNqScore {
  const preds = isValidated(predictions) ? predictions : validatePredictions(predictions, reference)
  const full = preds.mode === 'full'
  const texts = preds.mode === 'full' ? tokenizeQuestions(reference, preds.byId) : undefined
  const perQuestion: Record<string, Record<string, number>> = {}
  const rows: { multi: boolean; ev: Record<string, number> }[] = []
  reference.forEach((rec, idx) => {
    const answers = preds.mode === 'full' ? (preds.byId.get(rec.id) ?? []).map((p) => p.answer) : (preds.byId.get(rec.id) ?? [])
    const questions = texts
      ? { prompt: texts.prompt[idx] ?? '', gold: texts.gold[idx] ?? [], predicted: texts.predicted[idx] ?? [] }
      : undefined
    const ev = scoreQuestion(rec, answers, questions)
    const ordered: Record<string, number> = { 'F1 answer': ev['F1 answer'] ?? 0 }
    if (full) for (const m of QUESTION_METRICS) ordered[m] = ev[m] ?? 0
    perQuestion[rec.id] = ordered
    rows.push({ multi: isMultiAnswer(rec), ev: ordered })
  })
  const summarize = (m: MetricName): MetricValue => ({
    all: mean(rows.map((r) => r.ev[m] ?? 0)),
    multi: mean(rows.filter((r) => r.multi).map((r) => r.ev[m] ?? 0)),
  })
  const q = (m: QuestionMetricName) => (full ? summarize(m) : null)
  const metrics: AmbigNqMetrics = {
    'F1 answer': summarize('F1 answer'),
    'F1 bleu1': q('F1 bleu1'),
    'F1 bleu2': q('F1 bleu2'),
    'F1 bleu3': q('F1 bleu3'),
    'F1 bleu4': q('F1 bleu4'),
    'F1 edit-f1': q('F1 edit-f1'),
    n_all: rows.length,
    n_multi: rows.filter((r) => r.multi).length,
  }
  return { metrics, perQuestion }
}

function isValidated(p: Record<string, unknown> | AmbigNqPredictions): p is AmbigNqPredictions {
  return (p.mode === 'answers' || p.mode === 'full') && p.byId instanceof Map
}
