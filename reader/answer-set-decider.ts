// Deciding the answer set after reading (UNLI's lesson: a probability is judged by calibration,
// not by a label; AmbiEnt's: recognising ambiguity is a task of its own). Each answer's raw reader
// probability becomes a calibrated probability of being correct (a logistic calibrator over the
// reader's own scores: probability, share of the best, rank, evidence), answers under
// minConfidence are dropped, and P(the question has more than one answer) comes from a
// question-only model over the question's sentence embedding, plus what reading found (set size,
// the scores, distinct titles) when the fit gives those weight: the shipped fit uses the question
// alone, as its tuning split has no single-answer question. A question judged unambiguous keeps
// its best answer alone.
// The models are a few numbers in calibration.json, fit by `ambigqa_train.fit_calibration` on the
// tuning split (train/splits/reader-tune.txt), never on eval-300.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ERR_MODEL_INVALID, ERR_MODEL_MISSING } from '../src/core/errors.js'
import type { Read, ReadAnswer, Stage } from '../src/core/stages.js'

const HOW_TO_BUILD = 'scripts/train-defaults (or: ambigqa train calibration-data, then ambigqa train calibration)'
export const CALIBRATION_FILE = 'calibration.json'

/** A logistic regression over standardised inputs: sigmoid(bias + Σ w·(x − mean)/scale). */
export interface LogisticModel { features: string[]; mean: number[]; scale: number[]; weights: number[]; bias: number }

export interface CalibrationModels {
  /** The reader whose probabilities the calibrator maps (config reader.kind): another's differ. */
  reader: 'extractive' | 'spanseqgen'
  /** Over answerFeatures. */
  answer: LogisticModel
  /** Over the question's embedding by `encoder` (features e0..e383). */
  questionOnly: LogisticModel & { encoder: string }
  /** Over readingFeatures, the question-only logit among them. */
  ambiguity: LogisticModel
  /** The threshold chosen with the models on the tuning split, for the record: config
   * reader.minConfidence (whose default it is) is what applies. */
  minConfidence: number
}

export function logit(model: LogisticModel, x: readonly number[]): number {
  let z = model.bias
  for (let i = 0; i < model.weights.length; i++) z += model.weights[i]! * ((x[i]! - model.mean[i]!) / model.scale[i]!)
  return z
}

export const sigmoid = (z: number): number => 1 / (1 + Math.exp(-z))

const named = (model: LogisticModel, features: Record<string, number>): number[] => model.features.map((f) => features[f]!)

/** Where a passage lies in the reading order (the number read when it is not among them). */
function readRank(input: Read, id: string): number {
  const i = input.reranked.findIndex((p) => p.id === id)
  return i < 0 ? input.reranked.length : i
}

/** Per answer, what the reader knows of it: its probability as read (confidence before calibration). */
export function answerFeatures(input: Read): Record<string, number>[] {
  const best = input.answers[0]?.confidence ?? 0
  return input.answers.map((a, rank) => ({
    logProbability: Math.log(Math.max(a.confidence, 1e-9)),
    shareOfBest: best > 0 ? a.confidence / best : 0,
    rank,
    setSize: input.answers.length,
    evidence: a.evidence.length,
    firstEvidenceRank: Math.min(...a.evidence.map((p) => readRank(input, p.id)), input.reranked.length),
  }))
}

/** What reading found for the question as a whole, beside the question-only logit. */
export function readingFeatures(input: Read, questionLogit: number): Record<string, number> {
  const [first, second] = input.answers
  const titles = (passages: readonly { title: string }[]) => new Set(passages.map((p) => p.title)).size
  return {
    questionLogit,
    setSize: input.answers.length,
    logBest: Math.log(Math.max(first?.confidence ?? 0, 1e-9)),
    secondShare: first && second && first.confidence > 0 ? second.confidence / first.confidence : 0,
    answerTitles: titles(input.answers.map((a) => a.evidence[0]).filter((p) => p !== undefined)),
    readTitles: titles(input.reranked),
  }
}

export function loadCalibration(dir: string): CalibrationModels {
  const path = join(dir, CALIBRATION_FILE)
  if (!existsSync(path)) throw ERR_MODEL_MISSING(path, HOW_TO_BUILD)
  const models = JSON.parse(readFileSync(path, 'utf8')) as CalibrationModels
  if (models.reader !== 'extractive' && models.reader !== 'spanseqgen') throw ERR_MODEL_INVALID(path, 'does not say which reader it calibrates (reader: extractive or spanseqgen)', `Rebuild it with \`${HOW_TO_BUILD}\``)
  for (const key of ['answer', 'questionOnly', 'ambiguity'] as const) {
    const m = models[key]
    const n = m?.weights?.length
    if (!m || !n || m.mean?.length !== n || m.scale?.length !== n || m.features?.length !== n || typeof m.bias !== 'number') {
      throw ERR_MODEL_INVALID(path, `${key} is not a logistic model (features, mean, scale, weights of one length, bias)`, `Rebuild it with \`${HOW_TO_BUILD}\``)
    }
  }
  return models
}

/** The question's sentence embedding, by the encoder the question-only model was fit on. */
export type EmbedQuestion = (question: string) => Promise<Float32Array>

export interface DeciderOptions {
  minConfidence: number
  /** Cut the set to its best answer when ambiguity ≤ 0.5 (off: the detector only reports). */
  oneAnswerWhenUnambiguous: boolean
}

/**
 * The stage between reading and question disambiguation: calibrated confidences, the low ones
 * dropped, the ambiguity probability, and the set cut to its best answer when the question is
 * judged unambiguous.
 */
export function answerSetDecider(models: CalibrationModels, embed: EmbedQuestion, options: DeciderOptions): Stage<Read, Read> {
  return {
    name: 'decide',
    run: async (input) => {
      const features = answerFeatures(input)
      const calibrated: ReadAnswer[] = input.answers.map((a, i) => ({ ...a, confidence: sigmoid(logit(models.answer, named(models.answer, features[i]!))), readerProbability: a.confidence }))
      const questionLogit = logit(models.questionOnly, Array.from(await embed(input.question)))
      const ambiguity = sigmoid(logit(models.ambiguity, named(models.ambiguity, readingFeatures(input, questionLogit))))
      const kept = calibrated.filter((a) => a.confidence >= options.minConfidence).sort((a, b) => b.confidence - a.confidence)
      return { ...input, answers: ambiguity > 0.5 || !options.oneAnswerWhenUnambiguous ? kept : kept.slice(0, 1), ambiguity }
    },
  }
}
