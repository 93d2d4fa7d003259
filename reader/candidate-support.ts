// What pretrained language models know of each candidate, for the answer verifier (issue 47): the
// reader's features say how well a span reads, not whether it is true, and the junk in the sets is
// knowledge ("who plays lord beric": two actors of other characters first). A stage between the
// reader and the decider adds to each candidate's features:
// - generative support: log P(candidate | question, top passages) under SpanSeqGen's decoder
//   (assets/models/span-lm, its own prompt, lm-prompt.ts spanPrefix): one prompt per question,
//   every candidate forced after it as the first answer of the line (LlamaLm.score);
// - a knowledge check: log P(candidate | question) with no passages, from a pretrained decoder
//   (closed-book), less log P(candidate) after a prompt without the question (pointwise mutual
//   information: a frequent name is likely after any question);
// - the decoder's own answers: what SpanSeqGen writes for the question that the extractive reader
//   missed joins the pool (`generated: 1`), with the passages that hold it as evidence.
// Each feature also relative to the question's best candidate (a question's candidates compete).
import type { Logger } from '../core/log.js'
import { hasAnswer } from '../core/has-answer.js'
import { normalizeAnswer } from '../core/normalize-answer.js'
import type { Read, ReadAnswer, Stage } from '../core/stages.js'
import { answerShape } from './extractive-reader.js'
import { LlamaLm } from './generation/llama-lm.js'
import { generatedLine, LM_ANSWER_SEPARATOR, pickEvidence, spanPrefix } from './lm-prompt.js'

/** What the stage reads of the configuration (core/config.ts `support.*` documents each). */
export interface SupportSettings {
  /** SpanSeqGen's decoder folder (an lm.json trained for `span`), '' for no generative support. */
  spanLm: string
  /** A pretrained GGUF for the knowledge check, '' for none. */
  knowledge: string
  /** Its pinned sha256, '' for unchecked. */
  knowledgeSha256?: string
  /** Whether SpanSeqGen's own answers join the pool (needs spanLm). */
  generate: boolean
  /** The reader's first candidates scored (the rest get the question's floor). */
  candidates: number
  threads: number
}

/** Features this stage adds (fit_calibration.py names them). */
export const SUPPORT_FEATURES = ['genMean', 'genSum', 'genEnd', 'genGap', 'kbMean', 'kbSum', 'kbPmi', 'kbGap', 'generated'] as const

/** Which of `features` (a verifier's inputs) the settings do not give: the config key that must be
 * set, and those features; undefined when all are given. */
export function supportMissing(features: readonly string[], settings: Pick<SupportSettings, 'spanLm' | 'knowledge' | 'generate'>): { key: string; features: string[] } | undefined {
  const needs = [
    { key: 'support.spanLm', on: settings.spanLm !== '', names: ['genMean', 'genSum', 'genEnd', 'genGap'] },
    { key: 'support.knowledge', on: settings.knowledge !== '', names: ['kbMean', 'kbSum', 'kbPmi', 'kbGap'] },
    { key: 'support.generate', on: settings.generate && settings.spanLm !== '', names: ['generated'] },
  ]
  for (const need of needs) {
    const wanted = features.filter((f) => need.names.includes(f))
    if (!need.on && wanted.length > 0) return { key: need.key, features: wanted }
  }
  return undefined
}

/** Tokens SpanSeqGen's answer line may take (as lm-span-reader.ts). */
const MAX_LINE_TOKENS = 64

/** Closed-book prompts: the question, and the same without it (the candidate's prior). */
export const knowledgePrefix = (question: string): string => `Question: ${question.split(/\s+/u).filter(Boolean).join(' ')}\nAnswer:`
export const PRIOR_PREFIX = 'Answer:'

/** A candidate as forced after a prompt: the answer as its line writes it, after one space. */
const asContinuation = (answer: string): string => ` ${answer.split(/\s+/u).filter(Boolean).join(' ')}`

export class CandidateSupport implements Stage<Read, Read> {
  readonly name = 'support'
  /** Milliseconds spent so far in each part, summed over questions (benchmarks read the cost from it). */
  readonly spent = { generate: 0, span: 0, knowledge: 0 }

  private constructor(private readonly settings: SupportSettings, private readonly spanLm: LlamaLm | undefined, private readonly knowledge: LlamaLm | undefined) {}

  static async open(settings: SupportSettings, logger?: Logger): Promise<CandidateSupport> {
    const log = logger ? { logger } : {}
    const spanLm = settings.spanLm === '' ? undefined : await LlamaLm.load(settings.spanLm, { threads: settings.threads, ...log })
    try {
      spanLm?.expectTask('span', 'CandidateSupport')
      const knowledge = settings.knowledge === '' ? undefined : await LlamaLm.loadBase(settings.knowledge, { threads: settings.threads, ...log, ...(settings.knowledgeSha256 ? { sha256: settings.knowledgeSha256 } : {}) })
      return new CandidateSupport(settings, spanLm, knowledge)
    } catch (e) {
      await spanLm?.close()
      throw e
    }
  }

  async run(input: Read, signal?: AbortSignal): Promise<Read> {
    const answers = [...input.answers]
    const prefix = spanPrefix(input.question, pickEvidence([input.reranked]))
    let t = performance.now()
    if (this.spanLm && this.settings.generate) answers.push(...(await this.generated(input, answers, prefix, signal)))
    this.spent.generate += performance.now() - t
    // Scored: the reader's first `candidates` and every generated one (they follow the reader's).
    const order = answers.map((_, i) => i).filter((i) => i < this.settings.candidates || i >= input.answers.length)
    const continuations = order.map((i) => asContinuation(answers[i]!.answer))
    const opts = signal ? { signal } : {}
    const features: Record<string, number>[] = answers.map(() => ({}))
    t = performance.now()
    if (this.spanLm) {
      const scores = await this.spanLm.score(prefix, continuations, { ends: [LM_ANSWER_SEPARATOR.trimEnd(), '\n'], ...opts })
      order.forEach((i, k) => Object.assign(features[i]!, { genMean: scores[k]!.mean, genSum: scores[k]!.sum, genEnd: scores[k]!.end! }))
    }
    this.spent.span += performance.now() - t
    t = performance.now()
    if (this.knowledge) {
      const given = await this.knowledge.score(knowledgePrefix(input.question), continuations, opts)
      const prior = await this.knowledge.score(PRIOR_PREFIX, continuations, opts)
      order.forEach((i, k) => Object.assign(features[i]!, { kbMean: given[k]!.mean, kbSum: given[k]!.sum, kbPmi: given[k]!.sum - prior[k]!.sum }))
    }
    this.spent.knowledge += performance.now() - t
    return { ...input, answers: answers.map((a, i) => ({ ...a, features: { ...a.features, ...withGaps(features, i), generated: i >= input.answers.length ? 1 : 0 } })) }
  }

  /** SpanSeqGen's own answers that no candidate already is (by the metric's normalisation), with
   * the passages read that hold them as evidence; a candidate no passage holds is left out (the
   * verifier's features need a passage, and an answer without one has no evidence to show). */
  private async generated(input: Read, answers: readonly ReadAnswer[], prefix: string, signal?: AbortSignal): Promise<ReadAnswer[]> {
    const [line] = await this.spanLm!.lines(prefix, [''], MAX_LINE_TOKENS, signal)
    const known = new Set(answers.map((a) => normalizeAnswer(a.answer)))
    const out: ReadAnswer[] = []
    for (const text of generatedLine(line ?? '').split(LM_ANSWER_SEPARATOR.trim()).map((a) => a.trim())) {
      const key = normalizeAnswer(text)
      if (key === '' || known.has(key)) continue
      known.add(key)
      const evidence = input.reranked.filter((p) => hasAnswer(`${p.title} ${p.text}`, [text]))
      if (evidence.length === 0) continue
      const shape = answerShape(input.question, text, new Set(input.reranked.map((p) => normalizeAnswer(p.title))))
      out.push({ answer: text, confidence: floorConfidence(answers), evidence, features: { ...floorFeatures(answers), ...shape, words: key.split(' ').length, holdingPassages: evidence.length, passage: input.reranked.indexOf(evidence[0]!) } })
    }
    return out
  }

  async close(): Promise<void> {
    await this.spanLm?.close()
    await this.knowledge?.close()
  }
}

const SCORES = ['genMean', 'genSum', 'genEnd', 'kbMean', 'kbSum', 'kbPmi'] as const
const GAPS = [['genMean', 'genGap'], ['kbPmi', 'kbGap']] as const

/** Each score as it is (the question's lowest where the candidate was not scored: past
 * `candidates`), and how far the two main ones lie below the question's best (0 for the best). */
function withGaps(features: readonly Record<string, number>[], i: number): Record<string, number> {
  const own = { ...features[i] }
  const values = (name: string) => features.map((f) => f[name]).filter((v): v is number => v !== undefined)
  for (const name of SCORES) {
    const all = values(name)
    if (all.length > 0 && own[name] === undefined) own[name] = Math.min(...all)
  }
  for (const [name, gap] of GAPS) {
    const all = values(name)
    if (all.length > 0) own[gap] = own[name]! - Math.max(...all)
  }
  return own
}

/** A generated candidate's confidence before calibration: below every candidate read. */
function floorConfidence(answers: readonly ReadAnswer[]): number {
  return answers.length === 0 ? 1e-6 : Math.min(...answers.map((a) => a.confidence)) / 2
}

/** The reader's scores for a candidate it did not read: each at the question's lowest (the
 * verifier learns `generated`'s own weight); no span of it was read. */
function floorFeatures(answers: readonly ReadAnswer[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const a of answers) {
    for (const [k, v] of Object.entries(a.features ?? {})) out[k] = Math.min(out[k] ?? Infinity, v)
  }
  return { ...out, spanPassages: 0, topSpanPassages: 0 }
}
