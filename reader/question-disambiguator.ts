// Question disambiguation (Min et al. 2020): for each answer of an ambiguous question, a minimal
// rewrite of the question that has that answer only. Input as the paper's QD model reads it, and
// as train/ambigqa_train/data.py writes it: prompt question [SEP] target answer [SEP] the other
// answers joined by the separator [SEP] passages.
import type { RetrievedPassage } from '../src/core/retriever.js'
import { generate } from './generate.js'
import type { GenerationOptions } from './generation-options.js'
import { qdInput } from './reader-input.js'
import type { Seq2SeqModel } from './seq2seq-model.js'

export interface DisambiguatorOptions {
  maxInputTokens: number
  separator: string
  generation: Partial<GenerationOptions>
}

export const defaultDisambiguatorOptions: DisambiguatorOptions = { maxInputTokens: 384, separator: '<SEP>', generation: {} }

export interface DisambiguationItem {
  question: string
  answers: readonly string[]
  passages: readonly RetrievedPassage[]
}

export class QuestionDisambiguator {
  readonly options: DisambiguatorOptions

  constructor(readonly model: Seq2SeqModel, options: Partial<DisambiguatorOptions> = {}) {
    this.options = { ...defaultDisambiguatorOptions, ...options }
  }

  input(question: string, answer: string, others: readonly string[], passages: readonly RetrievedPassage[]): number[] {
    const text = qdInput(question, answer, others, passages, this.options.separator)
    return this.model.tokenizer.encode(text, this.options.maxInputTokens)
  }

  /** One question per answer; a single answer keeps the prompt question as it is. */
  async disambiguate(items: readonly DisambiguationItem[], signal?: AbortSignal): Promise<string[][]> {
    const requests: { input: number[] }[] = []
    const owners: [number, number][] = []
    items.forEach((item, i) => {
      if (item.answers.length < 2) return
      item.answers.forEach((answer, j) => {
        requests.push({ input: this.input(item.question, answer, item.answers.filter((_, k) => k !== j), item.passages) })
        owners.push([i, j])
      })
    })
    const out = items.map((item) => item.answers.map(() => item.question))
    if (requests.length === 0) return out
    const options = { ...this.model.generationDefaults, ...this.options.generation }
    const hypotheses = await generate(this.model, requests, options, signal ? { signal } : {})
    hypotheses.forEach((list, r) => {
      const [i, j] = owners[r]!
      const text = this.model.tokenizer.decode(list[0]!.generated).trim()
      // An empty rewrite says nothing: the prompt question is the honest fallback.
      if (text.length > 0) out[i]![j] = text
    })
    return out
  }
}
