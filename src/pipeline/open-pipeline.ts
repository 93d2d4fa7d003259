// The pipeline a configuration describes: its retriever, and the reader models when their
// folders load. A missing model is not fatal: search keeps working and `ask` says what to do.
import { openRetriever } from '../../retriever/open-retriever.js'
import { Reader } from '../../reader/reader.js'
import type { Config } from '../config.js'
import { AmbigqaError } from '../errors.js'
import { silentLogger, type Logger } from '../log.js'
import { Pipeline } from './pipeline.js'

export async function openPipeline(config: Config, logger: Logger = silentLogger): Promise<Pipeline> {
  const retriever = await openRetriever(config)
  try {
    const reader = await Reader.open(config.reader, logger)
    return new Pipeline({ retriever, reader: reader.readStage, disambiguator: reader.disambiguateStage, close: () => reader.close() })
  } catch (error) {
    if (!(error instanceof AmbigqaError)) {
      await retriever.close()
      throw error
    }
    logger.warn({ code: error.code }, `reader not loaded: ${error.message}`)
    return new Pipeline({ retriever, readerProblem: error.message })
  }
}
