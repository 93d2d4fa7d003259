// SpanSeqGen on the pretrained decoder (Gemma 3 270M + a LoRA adapter, llama-lm.ts): the answer set
// generated as one line from the question and its first passages (reader/lm-prompt.ts spanPrefix,
// the trainer's prompt), greedy. llama.cpp gives this path no token probabilities, so an answer's
// `probability` is its place in the line, 1/(rank + 1): an order, not a calibrated confidence.
import { hasAnswer } from '../core/has-answer.js'
import type { LlamaLm } from './generation/llama-lm.js'
import { generatedLine, LM_ANSWER_SEPARATOR, pickEvidence, spanPrefix } from './lm-prompt.js'
import type { PredictedAnswer, ReadingQuestion } from './types.js'

/** Tokens the answer line may take (a set of five long answers). */
const MAX_LINE_TOKENS = 64

export class LmSpanReader {
  /** `constrainToPassages`: an answer no passage read holds is dropped (config reader.constrainToPassages). */
  constructor(readonly lm: LlamaLm, private readonly options: { constrainToPassages: boolean }) {
    lm.expectTask('span', 'LmSpanReader')
  }

  async read(items: readonly ReadingQuestion[], signal?: AbortSignal): Promise<PredictedAnswer[][]> {
    const out: PredictedAnswer[][] = []
    for (const item of items) {
      const [line] = await this.lm.lines(spanPrefix(item.question, pickEvidence([item.passages])), [''], MAX_LINE_TOKENS, signal)
      const answers = [...new Set(generatedLine(line ?? '').split(LM_ANSWER_SEPARATOR.trim()).map((a) => a.trim()).filter((a) => a !== ''))]
      const read = answers.map((answer) => ({ answer, evidence: item.passages.filter((p) => hasAnswer(`${p.title} ${p.text}`, [answer])) }))
      out.push(read.filter((a) => !this.options.constrainToPassages || a.evidence.length > 0).map((a, rank) => ({ ...a, probability: 1 / (rank + 1) })))
    }
    return out
  }

  async close(): Promise<void> {
    await this.lm.close()
  }
}
