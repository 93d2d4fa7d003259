// What the answer calibrator and the ambiguity detector are fit on (ambigqa_train.fit_calibration):
// - calibration-tune.jsonl: every question of the tuning sets (train/splits/reader-tune.txt, AmbigNQ
//   train; train/splits/asqa-tune.txt, AmbigNQ dev questions of ASQA outside eval-300; never
//   eval-300) read by the extractive reader at each of several passage counts, one row per question
//   and count: every candidate the reader returns with its features (the reader's and the candidate's own:
//   extractive-reader.ts candidateFeatures) and whether it matches a gold answer (the metric's
//   normalisation), the reading features, the normalised gold clusters of each annotation (so the
//   fit can score F1 answer exactly) and the question's embedding;
// - ambiguity-questions.jsonl: questions with a single/multi label and their embedding for the
//   question-only model and the ambiguity probability: AmbigNQ train outside the tuning split (fit),
//   every AmbigNQ dev question (measured; `eval300` marks eval-300's), and AmbiEnt premise +
//   hypothesis (measured: does it transfer?), each with its text;
// - verifier-pairs.jsonl: at the most passages read, each question's first `verifyTop` candidates
//   as the answer verifier reads them (verifierPair) with their label: what `train verifier` trains
//   the cross-encoder on, fold by fold (its `set`).
import { createWriteStream, mkdirSync, readFileSync, renameSync } from 'node:fs'
import { once } from 'node:events'
import { join } from 'node:path'
import { answerFeatures, readingFeatures, verifierPair } from '../../reader/answer-set-decider.js'
import type { DenseEncoder } from '../../retriever/dense-encoder.js'
import type { Logger } from '../../core/log.js'
import { normalizeAnswer } from '../../core/normalize-answer.js'
import { ERR_USAGE } from '../../core/errors.js'
import type { Read, Stage } from '../../core/stages.js'
import type { Retriever } from '../../core/retriever.js'
import type { ExtractiveReader } from '../../reader/extractive-reader.js'
import { readAnswers } from '../../reader/reader.js'
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

/** A tuning set: AmbigNQ questions (train or dev) by an id list, never eval-300's. */
export interface TuneSet { name: string; ids: string; reference: 'train' | 'dev' }

export interface CalibrationDataOptions {
  shared: string
  tuneSets: TuneSet[]
  out: string
  /** Without a retriever and a reader only ambiguity-questions.jsonl is written (the tuning sets'
   * ids are still left out of the train questions). */
  retriever?: Retriever
  /** Its candidates (as many as its `candidates` option) are written: the fit decides the set. */
  reader?: ExtractiveReader
  encoder: DenseEncoder
  /** Passages read: each question's top max(reads) are read once, and its candidates written for each n. */
  reads: number[]
  /** Run on each question's candidates before their features are written (reader/candidate-support.ts:
   * the decoders' scores), as the pipeline runs it before the decider; with one passage count only. */
  support?: Stage<Read, Read>
  /** Candidates per question written as verifier pairs (the reader's first ones, as the decider verifies them). */
  verifyTop: number
  retrieve: number
  log: Logger
}

async function embedAll(encoder: DenseEncoder, texts: string[]): Promise<Float32Array[]> {
  const out: Float32Array[] = []
  for (let i = 0; i < texts.length; i += 64) out.push(...(await encoder.encode(texts.slice(i, i + 64), 'query')))
  return out
}

export async function writeCalibrationData(o: CalibrationDataOptions): Promise<{ tune: number; questions: number }> {
  const eval300 = loadIdList(join(o.shared, 'splits/eval-300.txt'))
  const references = { train: loadReference(join(o.shared, 'ambignq/train_light.json')), dev: loadReference(join(o.shared, 'ambignq/dev_light.json')) }
  const tuneIds = new Set<string>()
  for (const set of o.tuneSets) {
    const ids = loadIdList(set.ids)
    const leaked = [...ids].filter((id) => eval300.has(id))
    if (leaked.length > 0) throw ERR_USAGE(`${set.ids} holds ${leaked.length} eval-300 questions (${leaked[0]})`, 'Nothing is tuned on eval-300: give an id list without them')
    for (const id of ids) tuneIds.add(id)
  }
  // The decoders' scores cost seconds a question: read at the one passage count served.
  if (o.support && o.reads.length !== 1) throw ERR_USAGE(`the candidates' support is computed at one passage count, not ${o.reads.join(', ')}`, 'Pass --reads 20 (the count the server reads) with --support')
  // A fresh checkout has no data/train yet (data build makes it, and is not needed for this).
  mkdirSync(o.out, { recursive: true })
  if (o.retriever && o.reader) await readTuningSets(o, o.retriever, o.reader, references)
  return { tune: tuneIds.size, questions: await writeQuestions(o, references, eval300, tuneIds) }
}

async function readTuningSets(o: CalibrationDataOptions, retriever: Retriever, reader: ExtractiveReader, references: Record<TuneSet['reference'], AmbigNqRecord[]>): Promise<void> {
  const tuneOut = new JsonLines(join(o.out, 'calibration-tune.jsonl'))
  const pairsOut = new JsonLines(join(o.out, 'verifier-pairs.jsonl'))
  const most = Math.max(...o.reads)
  let read = 0
  for (const set of o.tuneSets) {
    const ids = loadIdList(set.ids)
    const records = references[set.reference].filter((r) => ids.has(r.id))
    const embeddings = await embedAll(o.encoder, records.map((r) => r.question))
    for (const [i, record] of records.entries()) {
      const passages = await retriever.search(record.question, Math.max(o.retrieve, most))
      const [readPassages] = await reader.readPassages([{ question: record.question, passages: passages.slice(0, most) }])
      const golds = goldClusters(record)
      const aliases = new Set(golds.flat(2))
      for (const n of o.reads) {
        const reranked = passages.slice(0, n)
        const answers = reader.candidates({ question: record.question, passages: reranked }, reader.scoreSpans(readPassages!.slice(0, n)))
        const reading: Read = { question: record.question, retrieve: passages.length, read: n, passages, reranked, timings: { retrievalMs: 0, totalMs: 0 }, answers: readAnswers(answers) }
        const input = o.support ? await o.support.run(reading) : reading
        const features = answerFeatures(input)
        await tuneOut.write({
          id: record.id, set: set.name, read: n, question: record.question, multi: isMultiAnswer(record), golds,
          answers: input.answers.map((a, j) => ({ answer: normalizeAnswer(a.answer), correct: aliases.has(normalizeAnswer(a.answer)), features: { ...a.features, ...features[j] } })),
          reading: readingFeatures(input, 0), embedding: rounded(embeddings[i]!),
        })
        if (n !== most) continue
        for (const [rank, a] of input.answers.slice(0, o.verifyTop).entries()) {
          if (!a.window) continue
          await pairsOut.write({ id: record.id, set: set.name, read: n, rank, answer: normalizeAnswer(a.answer), ...verifierPair(record.question, a.answer, a.window), label: aliases.has(normalizeAnswer(a.answer)) ? 1 : 0 })
        }
      }
      if (++read % 50 === 0) o.log.info({ set: set.name, done: i + 1, of: records.length }, 'calibration data: tuning questions read')
    }
  }
  await tuneOut.close()
  await pairsOut.close()
}

/** ambiguity-questions.jsonl: the labelled questions with their text and embedding; the number written. */
async function writeQuestions(o: CalibrationDataOptions, references: Record<TuneSet['reference'], AmbigNqRecord[]>, eval300: Set<string>, tuneIds: Set<string>): Promise<number> {
  const dev = references.dev
  const ambient = ['dev', 'test'].flatMap((split) => readFileSync(join(o.shared, `ambient/${split}.jsonl`), 'utf8').split('\n').filter((l) => l.trim()).map((l) => {
    const r = JSON.parse(l) as { id: number; premise: string; hypothesis: string; premise_ambiguous: boolean; hypothesis_ambiguous: boolean }
    return { id: `ambient-${split}-${r.id}`, source: `ambient-${split}`, eval300: false, label: r.premise_ambiguous || r.hypothesis_ambiguous, text: `${r.premise} ${r.hypothesis}` }
  }))
  const questions = [
    ...references.train.filter((r) => !tuneIds.has(r.id)).map((r) => ({ id: r.id, source: 'ambignq-train', eval300: false, label: isMultiAnswer(r), text: r.question })),
    // Every dev question: the question-only model never fits on dev, so all 1,702 outside eval-300 measure it.
    ...dev.map((r) => ({ id: r.id, source: 'ambignq-dev', eval300: eval300.has(r.id), tune: tuneIds.has(r.id), label: isMultiAnswer(r), text: r.question })),
    ...ambient,
  ]
  const questionsOut = new JsonLines(join(o.out, 'ambiguity-questions.jsonl'))
  for (let i = 0; i < questions.length; i += 512) {
    const chunk = questions.slice(i, i + 512)
    const embeddings = await embedAll(o.encoder, chunk.map((q) => q.text))
    for (const [j, q] of chunk.entries()) await questionsOut.write({ ...q, embedding: rounded(embeddings[j]!) })
    o.log.info({ done: i + chunk.length, of: questions.length }, 'calibration data: questions embedded')
  }
  await questionsOut.close()
  return questions.length
}
