// Deciding the answer set after reading (RECTIFY's recall-then-verify; UNLI's lesson: a
// probability is judged by calibration, not by a label; AmbiEnt's: recognising ambiguity is a task
// of its own). The reader recalls candidates from many passages; each is verified: a logistic
// model over what the reader scored of it (its merged probability, and how strongly its own best
// passage answers with it whatever share of the joint probability that passage got: the
// extractive reader's candidateFeatures) gives a calibrated probability that it is a correct
// answer; where calibration.json stacks a cross-encoder verifier, the reader's first candidates
// are also read by it (the question, the candidate and the words around its span) and their
// probability is a logistic model over both logits. The set is every candidate at or over minConfidence (the best one always), and
// P(the question has more than one answer) comes from the question alone (its sentence embedding
// and its words), fit on AmbigNQ train's natural mix of questions, so that it is a probability a
// client can act on; with oneAnswerWhenUnambiguous (off by default: BENCHMARKS.md, "Ambiguity as a
// probability") a question judged unambiguous keeps its best answer alone.
// The models are a few numbers in calibration.json, fit by `ambigqa_train.fit_calibration` on the
// tuning sets (train/splits/reader-tune.txt, asqa-tune.txt), never on eval-300.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ERR_MODEL_INVALID, ERR_MODEL_MISSING } from '../core/errors.js'
import { hasAnswer } from '../core/has-answer.js'
import { normalizeAnswer } from '../core/normalize-answer.js'
import { READER_KINDS, type ReaderKind } from '../core/kinds.js'
import { isAmbiguous, type AnswerWindow, type Read, type ReadAnswer, type Stage } from '../core/stages.js'

const HOW_TO_BUILD = 'scripts/train-defaults (or: ambigqa train calibration-data, then ambigqa train calibration)'
export const CALIBRATION_FILE = 'calibration.json'

/** A logistic regression over standardised inputs: sigmoid(bias + Σ w·(x − mean)/scale). */
export interface LogisticModel { features: string[]; mean: number[]; scale: number[]; weights: number[]; bias: number }

export interface CalibrationModels {
  /** The reader whose probabilities the calibrator maps (config reader.kind): another's differ. */
  reader: ReaderKind
  /** Over answerFeatures and the reader's own features of each answer (ReadAnswer.features). */
  answer: LogisticModel
  /** Over the question's embedding by `encoder` (features e0..e383), plus its words when given. */
  questionOnly: LogisticModel & { encoder: string; words?: WordsModel }
  /** Over readingFeatures, the question-only logit among them. */
  ambiguity: LogisticModel
  /** The threshold chosen with the models on the tuning sets, for the record: config
   * reader.minConfidence (whose default it is) is what applies. */
  minConfidence: number
  /** The rest of the set rule and the reading the models were fit with, for the record: config
   * reader.maxAnswers, oneAnswerWhenUnambiguous, read and candidates (whose defaults they are) are
   * what apply. */
  maxAnswers?: number
  detector?: boolean
  read?: number
  candidates?: number
  /** The cross-encoder answer verifier's part (config reader.verifier is its model): the reader's
   * first `candidates` answers are read by it, and each one's confidence is `stack` over its
   * answer-model logit and the cross-encoder's (the others keep the answer model's). */
  verifier?: { candidates: number; stack: LogisticModel }
}

export function logit(model: LogisticModel, x: readonly number[]): number {
  let z = model.bias
  for (let i = 0; i < model.weights.length; i++) z += model.weights[i]! * ((x[i]! - model.mean[i]!) / model.scale[i]!)
  return z
}

export const sigmoid = (z: number): number => 1 / (1 + Math.exp(-z))

/** A linear model over the TF-IDF of a text's word 1-2 grams, as scikit-learn's TfidfVectorizer
 * (lowercase, default token pattern, sublinear tf, smoothed idf, L2-normalised rows) makes them:
 * fit_calibration.py QuestionFeatures. `checks`: the words part of some questions' logits as
 * scikit-learn computed them, so that a test holds this side to that one. */
export interface WordsModel { ngrams: number; terms: string[]; idf: number[]; weights: number[]; checks?: { question: string; logit: number }[] }

// scikit-learn's token_pattern (?u)\b\w\w+\b: runs of two or more of Python's word characters
// (letters, digits and underscore; not combining marks).
const WORD_RUN = /[\p{L}\p{N}_]{2,}/gu

/** The words part of the logit: Σ weight · tf-idf over the terms of the vocabulary. */
export function wordsScorer(words: WordsModel): (text: string) => number {
  const index = new Map(words.terms.map((t, i) => [t, i]))
  return (text) => {
    const tokens = text.toLowerCase().match(WORD_RUN) ?? []
    const counts = new Map<number, number>()
    for (let n = 1; n <= words.ngrams; n++) {
      for (let i = 0; i + n <= tokens.length; i++) {
        const term = index.get(tokens.slice(i, i + n).join(' '))
        if (term !== undefined) counts.set(term, (counts.get(term) ?? 0) + 1)
      }
    }
    let norm = 0
    let dot = 0
    for (const [term, count] of counts) {
      const value = (1 + Math.log(count)) * words.idf[term]!
      norm += value * value
      dot += value * words.weights[term]!
    }
    return norm > 0 ? dot / Math.sqrt(norm) : 0
  }
}

/** The question-only logit of a question from its embedding and, when the model has them, its words. */
export function questionScorer(model: CalibrationModels['questionOnly']): (embedding: readonly number[], question: string) => number {
  const words = model.words ? wordsScorer(model.words) : () => 0
  return (embedding, question) => logit(model, embedding) + words(question)
}

const named = (model: LogisticModel, features: Record<string, number>): number[] => model.features.map((f) => features[f]!)

/** Where a passage lies in the reading order (the number read when it is not among them). */
function readRank(input: Read, id: string): number {
  const i = input.reranked.findIndex((p) => p.id === id)
  return i < 0 ? input.reranked.length : i
}

/** Per answer, what the reader knows of it: its probability as read (confidence before
 * calibration), and its own features when the reader gives them (extractive-reader.ts candidateFeatures). */
export function answerFeatures(input: Read): Record<string, number>[] {
  const best = input.answers[0]?.confidence ?? 0
  return input.answers.map((a, rank) => ({
    ...a.features,
    logProbability: Math.log(Math.max(a.confidence, 1e-9)),
    shareOfBest: best > 0 ? a.confidence / best : 0,
    rank,
    setSize: input.answers.length,
    evidence: a.evidence.length,
    firstEvidenceRank: Math.min(...a.evidence.map((p) => readRank(input, p.id)), input.reranked.length),
  }))
}

/** A verified candidate counts towards the set's spread when its confidence reaches this. */
export const VERIFIED = 0.25

/**
 * What reading found for the question as a whole, beside the question-only logit: the reader's
 * set, and the verified candidates (`verified`: each answer's calibrated confidence, in answer
 * order): the best three confidences, their sum, how many reach VERIFIED and from how many
 * passages. ambigqa_train/fit_calibration.py set_features computes the same from the same inputs.
 */
export function readingFeatures(input: Read, questionLogit: number, verified: readonly number[] = []): Record<string, number> {
  const [first, second] = input.answers
  const titles = (passages: readonly { title: string }[]) => new Set(passages.map((p) => p.title)).size
  const sorted = [...verified].sort((a, b) => b - a)
  const over = input.answers.filter((_, i) => (verified[i] ?? 0) >= VERIFIED)
  return {
    questionLogit,
    setSize: input.answers.length,
    logBest: Math.log(Math.max(first?.confidence ?? 0, 1e-9)),
    secondShare: first && second && first.confidence > 0 ? second.confidence / first.confidence : 0,
    answerTitles: titles(input.answers.map((a) => a.evidence[0]).filter((p) => p !== undefined)),
    readTitles: titles(input.reranked),
    verifiedFirst: sorted[0] ?? 0,
    verifiedSecond: sorted[1] ?? 0,
    verifiedThird: sorted[2] ?? 0,
    verifiedSum: sorted.reduce((s, c) => s + c, 0),
    verifiedCount: over.length,
    verifiedPassages: new Set(over.map((a, i) => a.features?.passage ?? -1 - i)).size,
  }
}

export function loadCalibration(dir: string): CalibrationModels {
  const path = join(dir, CALIBRATION_FILE)
  if (!existsSync(path)) throw ERR_MODEL_MISSING(path, HOW_TO_BUILD)
  const models = JSON.parse(readFileSync(path, 'utf8')) as CalibrationModels
  if (!READER_KINDS.includes(models.reader)) throw ERR_MODEL_INVALID(path, `does not say which reader it calibrates (reader: ${READER_KINDS.join(' or ')})`, `Rebuild it with \`${HOW_TO_BUILD}\``)
  const check = (key: string, m: LogisticModel | undefined) => {
    const n = m?.weights?.length
    if (!m || !n || m.mean?.length !== n || m.scale?.length !== n || m.features?.length !== n || typeof m.bias !== 'number') {
      throw ERR_MODEL_INVALID(path, `${key} is not a logistic model (features, mean, scale, weights of one length, bias)`, `Rebuild it with \`${HOW_TO_BUILD}\``)
    }
  }
  for (const key of ['answer', 'questionOnly', 'ambiguity'] as const) check(key, models[key])
  const words = models.questionOnly.words
  if (words && !(Number.isInteger(words.ngrams) && words.ngrams >= 1 && words.terms?.length > 0 && words.idf?.length === words.terms.length && words.weights?.length === words.terms.length)) {
    throw ERR_MODEL_INVALID(path, 'questionOnly.words is not a words model (ngrams, and terms, idf and weights of one length)', `Rebuild it with \`${HOW_TO_BUILD}\``)
  }
  if (models.verifier) {
    check('verifier.stack', models.verifier.stack)
    if (models.verifier.stack.weights.length !== 2 || !Number.isInteger(models.verifier.candidates) || models.verifier.candidates < 1) {
      throw ERR_MODEL_INVALID(path, 'verifier is not a stack of two logits over a number of candidates', `Rebuild it with \`${HOW_TO_BUILD}\``)
    }
  }
  return models
}

/** The question's sentence embedding, by the encoder the question-only model was fit on. */
export type EmbedQuestion = (question: string) => Promise<Float32Array>

/** Tokens of one verifier pair (train/configs/verifier*.json max_len): a question, a candidate and
 * about 60 words around it. */
export const VERIFIER_TOKENS = 160

/** A verifier pair as a cross-encoder reads it (retriever/cross-encoder-reranker.ts `[CLS] question
 * [SEP] title: text [SEP]`): the candidate, then its passage's title and the words around its span. */
export interface VerifierPair { question: string; title: string; text: string }

export function verifierPair(question: string, answer: string, window: AnswerWindow): VerifierPair {
  return { question, title: `${answer} [SEP] ${window.title}`, text: window.text }
}

/** The cross-encoder's logit for each pair of one question, in order. */
export type VerifyAnswers = (question: string, pairs: readonly { title: string; text: string }[], signal?: AbortSignal) => Promise<number[]>

/**
 * What decides the set (config reader.*). Without a calibration (the plain rule) the reader's
 * probabilities are the confidences: the answers within `keep` of the best one's; with one, the
 * answers whose calibrated confidence reaches `minConfidence`. Either way the most confident is
 * kept, at most `maxAnswers`, and nothing when the reader's best probability is under
 * `minProbability` (an honest "not in these passages" beats a wrong answer).
 */
export interface DeciderOptions {
  keep: number
  minProbability: number
  minConfidence: number
  /** Cut the set to its best answer when ambiguity ≤ 0.5 (off: the detector only reports). */
  oneAnswerWhenUnambiguous: boolean
  /** The most answers a set keeps. */
  maxAnswers: number
  /** An answer that joins names ("Carlton and Essendon") becomes one answer a name (splitJoined). */
  splitJoined: boolean
  /** A bare year becomes the whole date its evidence writes ("1997" → "1 July 1997": completeDates). */
  completeDates: boolean
}

/** What a calibrated decider verifies with: calibration.json's models, the question's embedding by
 * their encoder (used when the retriever did not hand on its own vector by that encoder), and the
 * cross-encoder verifier when the models stack one. */
export interface Calibration { models: CalibrationModels; embed: EmbedQuestion; verify?: VerifyAnswers }

/**
 * The set out of candidates ranked best first: the first always, then each whose confidence
 * reaches both `floor` and `share` of the first's, at most `size`. The one rule every set is cut by.
 */
export function answerSet<A extends { confidence: number }>(ranked: readonly A[], rule: { floor: number; share: number; size: number }): A[] {
  const best = ranked[0]?.confidence ?? 0
  return ranked.filter((a, i) => i === 0 || (a.confidence >= rule.floor && a.confidence >= rule.share * best)).slice(0, rule.size)
}

// Where a joined answer parts: ", and", ",", "and", "&".
const JOINS = /\s*(?:,\s*and\s+|,\s+|\s+and\s+|\s+&\s+)\s*/

/**
 * The set with each answer that joins names split into one answer a name, in its place, with its
 * confidence, and as evidence the passages of its own that hold the name (AmbigNQ lists each name as
 * an answer; a span read "Carlton and Essendon", "Emma Watson and Dan Stevens"). Split only when it
 * joins with "and" or "&", every part starts with a capital ("200 cm wide and 95 cm tall" stays),
 * and no passage read is titled with the whole ("Simon & Garfunkel" is one answer). A part already
 * in the set is not repeated; at most `size` answers.
 */
export function splitJoined(set: readonly ReadAnswer[], read: readonly { title: string }[], size: number): ReadAnswer[] {
  const titles = new Set(read.map((p) => normalizeAnswer(p.title)))
  return rewriteAnswers(set, (a) => {
    const parts = a.answer.split(JOINS).filter((x) => x !== '')
    const split = / and | & /.test(a.answer) && parts.length > 1 && parts.every((x) => /^\p{Lu}/u.test(x)) && !titles.has(normalizeAnswer(a.answer))
    return split ? parts : [a.answer]
  }).slice(0, size)
}

/** The set with each answer written as `as` gives it (one answer or several), each in its place with
 * its confidence; a new text's evidence the passages of its own that hold it (all of them when none
 * does), and an answer already in the set not repeated. What splitJoined and completeDates share. */
function rewriteAnswers(set: readonly ReadAnswer[], as: (a: ReadAnswer) => string[]): ReadAnswer[] {
  const seen = new Set<string>()
  const out: ReadAnswer[] = []
  for (const a of set) {
    for (const answer of as(a)) {
      const key = normalizeAnswer(answer)
      if (seen.has(key)) continue
      seen.add(key)
      if (answer === a.answer) { out.push(a); continue }
      const holding = a.evidence.filter((p) => hasAnswer(`${p.title} ${p.text}`, [answer]))
      out.push({ ...a, answer, evidence: holding.length > 0 ? holding : a.evidence })
    }
  }
  return out
}

// A date written whole: "1 July 1997", "July 4, 1776" (the year filled in per answer).
const MONTHS = 'January|February|March|April|May|June|July|August|September|October|November|December'
// A question that asks for the year itself ("What year did the first thor come out?"): its year stays.
const ASKS_A_YEAR = /\b(?:what|which) (?:year|decade|century)\b/i

/**
 * The set with each bare year ("1997") made the first whole date in that year its evidence writes
 * ("1 July 1997"), in the evidence's words, with the evidence that holds it: AmbigNQ's annotators
 * answer a "when" with the date, and the reader often reads only its year. A year stays when the
 * question asks for a year, or when no evidence passage dates it. A date already in the set is not
 * repeated.
 */
export function completeDates(question: string, set: readonly ReadAnswer[]): ReadAnswer[] {
  if (ASKS_A_YEAR.test(question)) return [...set]
  return rewriteAnswers(set, (a) => {
    const year = /^(?:1\d{3}|20\d{2})$/.exec(a.answer.trim())?.[0]
    if (year === undefined) return [a.answer]
    const dated = new RegExp(`\\b(?:\\d{1,2} (?:${MONTHS}),? ${year}|(?:${MONTHS}) \\d{1,2},? ${year})\\b`)
    return [a.evidence.map((p) => dated.exec(p.text)?.[0]).find((d) => d !== undefined) ?? a.answer]
  })
}

/** The decided set with the rules `options` turns on: names joined split (splitJoined), then bare
 * years dated (completeDates). Each follows the set alone, so bench/set-rules gives offline what
 * the decider serves. */
export function setRules(input: Pick<Read, 'question' | 'reranked'>, set: readonly ReadAnswer[], options: Pick<DeciderOptions, 'splitJoined' | 'completeDates' | 'maxAnswers'>): ReadAnswer[] {
  const split = options.splitJoined ? splitJoined(set, input.reranked, options.maxAnswers) : [...set]
  return options.completeDates ? completeDates(input.question, split) : split
}

/** The reader's candidates (best first) as a decider takes them: none when even the best one's
 * probability is under minProbability. */
function floored<A extends { confidence: number }>(candidates: readonly A[], minProbability: number): readonly A[] {
  return (candidates[0]?.confidence ?? 0) < minProbability ? [] : candidates
}

/** The plain rule over a reader's candidates, its probabilities as confidences (the decider without a calibration). */
export function plainSet<A extends { confidence: number }>(candidates: readonly A[], options: Pick<DeciderOptions, 'keep' | 'minProbability' | 'maxAnswers'>): A[] {
  return answerSet(floored(candidates, options.minProbability), { floor: 0, share: options.keep, size: options.maxAnswers })
}

/**
 * The stage between reading and question disambiguation, the one owner of the answer set: the
 * reader recalls candidates, and this decides which make the set. Without a calibration, the plain
 * rule over the reader's probabilities (a generative reader's set, written by the model, passes
 * whole: see `generativeSet`). With one, each candidate verified (its calibrated confidence), the set
 * those at or over minConfidence (the most confident always: an empty set scores as a wrong one,
 * and its confidence says how sure it is), the ambiguity probability (the `ambiguity` model over
 * readingFeatures: the shipped one is the question-only logit as it is), and, with
 * oneAnswerWhenUnambiguous, the set cut to its best answer when the question is judged unambiguous.
 * Either way, the set's answers are then written as AmbigNQ writes them (setRules).
 */
export class AnswerSetDecider implements Stage<Read, Read> {
  readonly name = 'decide'
  private readonly questionLogit: ((embedding: readonly number[], question: string) => number) | undefined

  constructor(private readonly options: DeciderOptions, private readonly calibration?: Calibration) {
    if (calibration?.models.verifier && !calibration.verify) throw ERR_MODEL_MISSING('the answer verifier (config reader.verifier)', 'calibration.json stacks a cross-encoder verifier: give its model folder')
    this.questionLogit = calibration ? questionScorer(calibration.models.questionOnly) : undefined
  }

  async run(input: Read, signal?: AbortSignal): Promise<Read> {
    const decided = await this.decide(input, signal)
    return { ...decided, answers: setRules(input, decided.answers, this.options) }
  }

  private async decide(input: Read, signal?: AbortSignal): Promise<Read> {
    const { options, calibration } = this
    if (!calibration) return { ...input, answers: plainSet(input.answers, options) }
    const read = { ...input, answers: [...floored(input.answers, options.minProbability)] }
    const { models, verify } = calibration
    const verifier = models.verifier
    const logits = answerFeatures(read).map((f) => logit(models.answer, named(models.answer, f)))
    if (verifier && verify) {
      // The reader's first candidates (its order: what the stack was fit on) that carry a window.
      const verified = read.answers.map((a, i) => ({ a, i })).filter(({ a, i }) => i < verifier.candidates && a.window)
      const cross = await verify(read.question, verified.map(({ a }) => verifierPair(read.question, a.answer, a.window!)), signal)
      verified.forEach(({ i }, k) => { logits[i] = logit(verifier.stack, [logits[i]!, cross[k]!]) })
    }
    const confidences = logits.map(sigmoid)
    const calibrated: ReadAnswer[] = read.answers.map((a, i) => ({ ...a, confidence: confidences[i]!, readerProbability: a.confidence }))
    // The retriever's vector of the question when it embedded it with the same encoder.
    const embedding = read.query?.encoder === models.questionOnly.encoder ? read.query.vector : await calibration.embed(read.question)
    const byQuestion = this.questionLogit!(Array.from(embedding), read.question)
    const ambiguity = sigmoid(logit(models.ambiguity, named(models.ambiguity, readingFeatures(read, byQuestion, confidences))))
    const ranked = calibrated.sort((a, b) => b.confidence - a.confidence)
    const size = isAmbiguous(ambiguity) || !options.oneAnswerWhenUnambiguous ? options.maxAnswers : 1
    return { ...read, answers: answerSet(ranked, { floor: options.minConfidence, share: 0, size }), ambiguity }
  }
}

/** The plain rule's settings for a generative reader (SpanSeqGen): the model writes the set, so
 * every answer it wrote is kept. */
export function generativeSet(options: DeciderOptions): DeciderOptions {
  return { ...options, keep: 0, minProbability: 0, maxAnswers: Number.MAX_SAFE_INTEGER }
}

/** The decider's options out of the reader's settings (config reader.*). */
export function deciderOptions(settings: DeciderOptions): DeciderOptions {
  const { keep, minProbability, minConfidence, oneAnswerWhenUnambiguous, maxAnswers, splitJoined, completeDates } = settings
  return { keep, minProbability, minConfidence, oneAnswerWhenUnambiguous, maxAnswers, splitJoined, completeDates }
}

/** The decider without a calibration for a reader of `kind`: the plain rule over an extractive
 * reader's candidates, a generative reader's set whole. */
export function plainDecider(settings: DeciderOptions & { kind: ReaderKind }): AnswerSetDecider {
  const options = deciderOptions(settings)
  return new AnswerSetDecider(settings.kind === 'extractive' ? options : generativeSet(options))
}
