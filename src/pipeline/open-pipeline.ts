// The pipeline a configuration describes: its retriever, and the reader models when their
// folders load. A missing model is not fatal: search keeps working and `ask` says what to do.
import { openRetriever } from '../../retriever/open-retriever.js'
import { Reader } from '../../reader/reader.js'
import { QuestionDisambiguation } from '../../reader/question-disambiguation.js'
import { CrossEncoderReranker } from '../../retriever/cross-encoder-reranker.js'
import { DenseEncoder } from '../../retriever/dense-encoder.js'
import { AnswerSetDecider, deciderOptions, loadCalibration, plainDecider, VERIFIER_TOKENS } from '../../reader/answer-set-decider.js'
import { CandidateSupport, supportMissing } from '../../reader/candidate-support.js'
import type { Config } from '../../core/config.js'
import { AmbigqaError, ERR_CONFIG_INVALID } from '../../core/errors.js'
import { silentLogger, type Logger } from '../../core/log.js'
import { Pipeline } from './pipeline.js'

export async function openPipeline(config: Config, logger: Logger = silentLogger): Promise<Pipeline> {
  const retriever = await openRetriever(config, logger)
  let reranker: CrossEncoderReranker | undefined
  try {
    // A configured reranker that does not load is an error: silently reading unranked passages
    // would change the answers without saying so.
    if (config.reranker.model) {
      reranker = await CrossEncoderReranker.load(config.reranker.model, { ...config.reranker, logger })
    }
  } catch (error) {
    await retriever.close()
    throw error
  }
  const closeReranker = async () => { await reranker?.close() }
  // Other kinds open on request from the same configuration (the server's retriever argument).
  const retrievers = { retriever, retrieverKind: config.retriever, openRetriever: (kind: Config['retriever']) => openRetriever({ ...config, retriever: kind }, logger) }
  try {
    const qd = await QuestionDisambiguation.open(config.reader, logger)
    let reader: Reader | undefined
    let support: CandidateSupport | undefined
    let decided: Awaited<ReturnType<typeof openDecider>>
    try {
      // The reader recalls candidates; the decoders add what they know of each (config support,
      // off by default); the decider decides which make the set.
      reader = await Reader.open(config.reader, logger, qd.seq2seq ? { folder: config.reader.qd, model: qd.seq2seq } : undefined)
      if (config.support.spanLm !== '' || config.support.knowledge !== '') support = await CandidateSupport.open(config.support, logger)
      decided = await openDecider(config, logger)
    } catch (error) {
      await reader?.close()
      await support?.close()
      await qd.close()
      throw error
    }
    const opened = reader
    const supported = support
    return new Pipeline({
      ...retrievers, ...(reranker ? { reranker } : {}), read: config.reader.read, retrieve: config.reader.retrieve, reader: opened, ...(supported ? { support: supported } : {}), disambiguator: qd,
      decider: decided.decider,
      // The reader before QD's model: SpanSeqGen may read with it.
      close: async () => { await opened.close(); await supported?.close(); await qd.close(); await decided.close(); await closeReranker() },
    })
  } catch (error) {
    if (!(error instanceof AmbigqaError)) {
      await retriever.close()
      await closeReranker()
      throw error
    }
    logger.warn({ code: error.code }, `reader not loaded: ${error.message}`)
    return new Pipeline({ ...retrievers, ...(reranker ? { reranker } : {}), read: config.reader.read, retrieve: config.reader.retrieve, readerProblem: error.message, close: closeReranker })
  }
}

/** The answer-set decider: calibrated by config reader.calibration, with the sentence encoder its
 * question-only model was fit on (from the dense retriever's models folder; the retriever's own
 * encoder when it is the same model, so the question is embedded once); the plain rule without one
 * ('' for none), or when the calibration was fit on another reader's probabilities (they mean
 * something else). */
export async function openDecider(config: Config, logger: Logger = silentLogger): Promise<{ decider: AnswerSetDecider; close: () => Promise<void> }> {
  const r = config.reader
  const plain = { decider: plainDecider(r), close: async () => {} }
  if (r.calibration === '') return plain
  const models = loadCalibration(r.calibration)
  if (models.reader !== r.kind) {
    logger.warn({ calibration: r.calibration, fitFor: models.reader, reader: r.kind }, 'calibration not applied: it was fit on another reader; confidences are the reader\'s own')
    return plain
  }
  // A verifier fit on the decoders' features cannot verify without them.
  const missing = supportMissing(models.answer.features, config.support)
  if (missing) throw ERR_CONFIG_INVALID(missing.key, 'the configuration', `is off, but ${r.calibration} was fit with ${missing.features.join(', ')}`, `Set ${missing.key} as the calibration was fit (its MODEL_CARD.md), or give a calibration fit without them`)
  const encoder = await DenseEncoder.shared(models.questionOnly.encoder, config.dense.modelsDir, config.dense.threads, { device: config.dense.device, logger })
  const embed = async (question: string) => (await encoder.encode([question], 'query'))[0]!
  // The cross-encoder verifier reads each candidate in its words (reader/answer-set-decider.ts VerifierPair).
  let verifier: CrossEncoderReranker | undefined
  try {
    if (models.verifier) verifier = await CrossEncoderReranker.load(r.verifier, { precision: r.precision, device: r.device, threads: r.threads, maxTokens: VERIFIER_TOKENS })
  } catch (error) {
    await encoder.close()
    throw error
  }
  const decider = new AnswerSetDecider(deciderOptions(r), { models, embed, ...(verifier ? { verify: verifier.score.bind(verifier) } : {}) })
  return { decider, close: async () => { await encoder.close(); await verifier?.close() } }
}

