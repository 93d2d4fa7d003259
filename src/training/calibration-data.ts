// What the answer calibrator and the ambiguity detector are fit on (ambigqa_train.fit_calibration):
// - calibration-tune.jsonl: every question of the tuning split (train/splits/reader-tune.txt,
//   AmbigNQ train, never eval-300) read as the server reads it, before calibration: each returned
//   answer's features and whether it matches a gold answer (the metric's normalisation), the
//   reading features, the normalised gold clusters of each annotation (so the fit can score F1
//   answer exactly) and the question's embedding;
// - ambiguity-questions.jsonl: questions with a single/multi label and their embedding for the
//   question-only model: AmbigNQ train outside the tuning split (fit), AmbigNQ dev (measured;
//   `eval300` marks eval-300's), and AmbiEnt premise + hypothesis (measured: does it transfer?).
import { createWriteStream, mkdirSync, readFileSync, renameSync } from 'node:fs'
import { once } from 'node:events'
import { join } from 'node:path'
import { answerFeatures, readingFeatures } from '../../reader/answer-set-decider.js'
import type { DenseEncoder } from '../../retriever/dense-encoder.js'
import type { Logger } from '../core/log.js'
import { normalizeAnswer } from '../core/normalize-answer.js'
import type { Pipeline } from '../pipeline/pipeline.js'
import { passThroughReranker } from '../pipeline/pipeline.js'
import { loadIdList } from '../eval/questions.js'
import { isMultiAnswer, loadReference, type AmbigNqRecord } from '../eval/score-ambignq.js'

/** Each annotation's answer clusters, every alias normalised. */
export function goldClusters(record: AmbigNqRecord): string[][][] {
  return record.annotations.map((a) => (a.type === 'singleAnswer' ? [a.answer] : a.qaPairs.map((p) => p.answer)).map((c) => c.map(normalizeAnswer)))
}

const rounded = (v: Float32Array) => Array.from(v, (x) => Math.round(x * 1e5) / 1e5)

class JsonLines {
  private readonly stream
  constructor(private readonly path: string) {
    this.stream = createWriteStream(`${path}.tmp`)
  }

  async write(row: unknown): Promise<void> {
    if (!this.stream.write(`${JSON.stringify(row)}\n`)) await once(this.stream, 'drain')
  }

  /** Swapped in whole, so a killed run never leaves half a file under the real name. */
  async close(): Promise<void> {
    this.stream.end()
    await once(this.stream, 'finish')
    renameSync(`${this.path}.tmp`, this.path)
  }
}

export interface CalibrationDataOptions {
  shared: string
  tuneIds: string
  out: string
  /** A pipeline without a decider: the reader's raw probabilities are what is calibrated. */
  pipeline: Pipeline
  encoder: DenseEncoder
  read: number
  retrieve: number
  log: Logger
}

async function embedAll(encoder: DenseEncoder, texts: string[]): Promise<Float32Array[]> {
  const out: Float32Array[] = []
  for (let i = 0; i < texts.length; i += 64) out.push(...(await encoder.encode(texts.slice(i, i + 64), 'query')))
  return out
}

export async function writeCalibrationData(o: CalibrationDataOptions): Promise<{ tune: number; questions: number }> {
  const tuneIds = loadIdList(o.tuneIds)
  const train = loadReference(join(o.shared, 'ambignq/train_light.json'))
  const tune = train.filter((r) => tuneIds.has(r.id))
  const reader = o.pipeline.stages.reader!
  const reranker = o.pipeline.stages.reranker ?? passThroughReranker
  // A fresh checkout has no data/train yet (data build makes it, and is not needed for this).
  mkdirSync(o.out, { recursive: true })
  const tuneOut = new JsonLines(join(o.out, 'calibration-tune.jsonl'))
  const tuneEmbeddings = await embedAll(o.encoder, tune.map((r) => r.question))
  for (const [i, record] of tune.entries()) {
    const retrieved = await o.pipeline.retrieve(record.question, o.retrieve)
    const read = await reader.run(await reranker.rerank(retrieved, o.read))
    const golds = goldClusters(record)
    const aliases = new Set(golds.flat(2))
    const features = answerFeatures(read)
    await tuneOut.write({
      id: record.id, multi: isMultiAnswer(record), golds,
      answers: read.answers.map((a, j) => ({ answer: normalizeAnswer(a.answer), correct: aliases.has(normalizeAnswer(a.answer)), features: features[j] })),
      reading: readingFeatures(read, 0), embedding: rounded(tuneEmbeddings[i]!),
    })
    if (i % 50 === 0) o.log.info({ done: i, of: tune.length }, 'calibration data: tuning split read')
  }
  await tuneOut.close()

  const dev = loadReference(join(o.shared, 'ambignq/dev_light.json'))
  const eval300 = loadIdList(join(o.shared, 'splits/eval-300.txt'))
  const ambient = ['dev', 'test'].flatMap((split) => readFileSync(join(o.shared, `ambient/${split}.jsonl`), 'utf8').split('\n').filter((l) => l.trim()).map((l) => {
    const r = JSON.parse(l) as { id: number; premise: string; hypothesis: string; premise_ambiguous: boolean; hypothesis_ambiguous: boolean }
    return { id: `ambient-${split}-${r.id}`, source: `ambient-${split}`, eval300: false, label: r.premise_ambiguous || r.hypothesis_ambiguous, text: `${r.premise} ${r.hypothesis}` }
  }))
  const questions = [
    ...train.filter((r) => !tuneIds.has(r.id)).map((r) => ({ id: r.id, source: 'ambignq-train', eval300: false, label: isMultiAnswer(r), text: r.question })),
    ...dev.map((r) => ({ id: r.id, source: 'ambignq-dev', eval300: eval300.has(r.id), label: isMultiAnswer(r), text: r.question })),
    ...ambient,
  ]
  const questionsOut = new JsonLines(join(o.out, 'ambiguity-questions.jsonl'))
  for (let i = 0; i < questions.length; i += 512) {
    const chunk = questions.slice(i, i + 512)
    const embeddings = await embedAll(o.encoder, chunk.map((q) => q.text))
    for (const [j, q] of chunk.entries()) await questionsOut.write({ id: q.id, source: q.source, eval300: q.eval300, label: q.label, embedding: rounded(embeddings[j]!) })
    o.log.info({ done: i + chunk.length, of: questions.length }, 'calibration data: questions embedded')
  }
  await questionsOut.close()
  return { tune: tune.length, questions: questions.length }
}
