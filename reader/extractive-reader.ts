// The extractive reader (DPR's reader; the AmbigQA paper's "Thresholding + QD" baseline): an
// encoder (BERT; or MPNet, the base-size one) reads `[CLS] question [SEP] title: text [SEP]`
// (MPNet: `<s> question </s></s> title: text </s>`) for each of the top passages on its own
// and scores every passage (selection) and every span of whole words (start + end). Answers are
// spans merged by their normalised text across passages: the reader's candidates, best first.
// Which of them make the answer set is the decider's (reader/answer-set-decider.ts), not the reader's.
// Scores are computed exactly as train/ambigqa_train/extractive.py `best_spans` computes them.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import ort from '../core/onnx-runtime.js'
import type { RetrievedPassage } from '../core/retriever.js'
import { containsTokens, hasAnswer } from '../core/has-answer.js'
import { normalizeAnswer } from '../core/normalize-answer.js'
import { ERR_MODEL_INVALID, ERR_MODEL_MISSING } from '../core/errors.js'
import type { Logger } from '../core/log.js'
import type { Device } from '../core/onnx-session.js'
import { Seq2SeqTokenizer } from './generation/seq2seq-tokenizer.js'
import type { PredictedAnswer, ReadingQuestion } from './types.js'
import { WorkerSession } from '../core/worker-session.js'
import { WordPieceCache, type PiecedText, type Word } from './word-pieces.js'

const HOW_TO_BUILD = 'scripts/train-defaults (or: ambigqa train export extractive <checkpoint> <out>)'
const OUTPUTS = ['start_logits', 'end_logits', 'relevance_logits'] as const

export interface ExtractiveOptions {
  /** Tokens of one question + passage input (the length the model was trained at). */
  maxInputTokens: number
  maxQuestionTokens: number
  /** Longest answer, in word pieces. */
  maxAnswerTokens: number
  /** Passages per ONNX run. */
  batchSize: number
  /** The most candidates returned (best first), for the decider to choose from. */
  candidates: number
  /**
   * The retriever's order as a prior on the passage score: the passage ranked r gets
   * -rankPrior * ln(r) added to its selection logit (0: the model's selection alone, as DPR).
   */
  rankPrior: number
  /**
   * Drop an answer that holds a better one's words and more ("American League (AL) champion
   * Oakland Athletics" after "Oakland Athletics"): the same answer with its context.
   */
  dropContaining: boolean
}

/** The options the configuration sets (`reader.*` of the same names); the rest keep their defaults. */
export const EXTRACTIVE_SETTINGS = ['candidates', 'rankPrior', 'dropContaining'] as const satisfies readonly (keyof ExtractiveOptions)[]

export type ExtractiveSettings = Pick<ExtractiveOptions, (typeof EXTRACTIVE_SETTINGS)[number]>

/** The configured options out of the reader's settings. */
export function extractiveSettings(settings: ExtractiveSettings): ExtractiveSettings {
  return Object.fromEntries(EXTRACTIVE_SETTINGS.map((key) => [key, settings[key]])) as unknown as ExtractiveSettings
}

export const defaultExtractiveOptions: ExtractiveOptions = {
  maxInputTokens: 256, maxQuestionTokens: 64, maxAnswerTokens: 10, batchSize: 16, candidates: 20, rankPrior: 0, dropContaining: false,
}

/**
 * A span of one passage: where it lies in the passage's input text and its log score over every
 * passage read (`score`); what a verifier reads of it beside that: `local`, its log probability
 * among the spans of its own passage, `inPassage`, its rank there (0 for the passage's best), and
 * the passage's selection logit (`relevance`) and log probability among the passages read
 * (`passageLogProb`).
 */
export interface ScoredSpan { passage: number; start: number; end: number; text: string; score: number; local: number; inPassage: number; relevance: number; passageLogProb: number }

/** fieldAt: which field of `pieced.text` (`title: text`) a character lies in (passageFields). */
interface Input { ids: number[]; typeIds: number[]; pieced: PiecedText; passageStart: number; fieldAt: (position: number) => number }

// What may stand between a title's echo and the subject's name again: an article, a quote.
const ECHO_LEAD = /^(?:(?:the|a|an) )?["'\u201c\u2018]?/

/**
 * The fields of `title: text` a span must keep to, by character: 0 the title, 1 the title's echo
 * at the text's start, 2 the rest of the text, -1 the separator between the title and the text.
 * DPR's first passage of a Wikipedia article opens with the article's title, then the article,
 * which opens with its subject: "Dominic Janes Dominic Janes (born ...", "Fryingpan River The
 * Fryingpan River is ...". A span from that echo into the text read "Dominic Janes Dominic Janes".
 * An echo is the title followed by its own first word again (after "the", "a", "an" or a quote):
 * a text that merely opens with its title ("Windows Media Player 11 is ...", "Comcast
 * Corporation, ...") has none, so a longer name there stays one span. Without an echo, field 1 is
 * empty. train/ambigqa_train/extractive.py's field_at is the same rule.
 */
export function passageFields(title: string, text: string): (position: number) => number {
  const textStart = title.length + 2
  const head = title.split(' ')[0]!.toLowerCase()
  const rest = text.slice(title.length + 1).toLowerCase()
  const opensWithHead = (s: string) => s.startsWith(head) && !/^[\p{L}\p{N}]/u.test(s.slice(head.length))
  const echo = head !== '' && text.startsWith(`${title} `) && (opensWithHead(rest) || opensWithHead(rest.replace(ECHO_LEAD, '')))
  const echoEnd = echo ? textStart + title.length : textStart
  return (position) => (position < title.length ? 0 : position < textStart ? -1 : position < echoEnd ? 1 : 2)
}

/**
 * How the encoder writes a question and a passage as one input (its tokenizer's pair template,
 * which the Python side's tokenizer applies): BERT's `[CLS] q [SEP] p [SEP]` with token types 0
 * then 1; MPNet's `<s> q </s></s> p </s>` with none. `positions` is the longest input its position
 * table holds (MPNet's starts at 2, after the padding index).
 */
interface PairLayout { cls: string; sep: string; pad: string; seps: number; typed: boolean; positions?: number }

const ENCODER_TYPES = ['bert', 'mpnet'] as const

function pairLayout(dir: string): PairLayout {
  const path = join(dir, 'config.json')
  let config: { model_type?: unknown; max_position_embeddings?: unknown } = {}
  try {
    if (existsSync(path)) config = JSON.parse(readFileSync(path, 'utf8')) as typeof config
  } catch (e) {
    throw ERR_MODEL_INVALID(path, `not readable JSON (${(e as Error).message})`, `Re-export the model with \`${HOW_TO_BUILD}\``)
  }
  const table = typeof config.max_position_embeddings === 'number' && config.max_position_embeddings > 0 ? config.max_position_embeddings : undefined
  const type = config.model_type ?? 'bert'
  // transformers' MPNet numbers positions from 2 whatever the config says (its padding index is 1).
  if (type === 'mpnet') return { cls: '<s>', sep: '</s>', pad: '<pad>', seps: 2, typed: false, ...(table !== undefined ? { positions: table - 2 } : {}) }
  if (type !== 'bert') throw ERR_MODEL_INVALID(path, `names an encoder of type ${JSON.stringify(type)} (the reader reads ${ENCODER_TYPES.join(', ')})`, `Re-export the model with \`${HOW_TO_BUILD}\``)
  return { cls: '[CLS]', sep: '[SEP]', pad: '[PAD]', seps: 1, typed: true, ...(table !== undefined ? { positions: table } : {}) }
}

interface Logits { start: Float32Array; end: Float32Array; relevance: number; length: number }

/** One passage as the model read it. */
export interface ReadPassage { input: Input; logits: Logits }

export interface ExtractiveLoadOptions { precision?: 'fp32' | 'int8'; device?: Device; threads?: number; logger?: Logger }

export class ExtractiveReader {
  readonly options: ExtractiveOptions
  private readonly pieces: WordPieceCache
  private readonly cls: number
  private readonly sep: number
  private readonly pad: number

  private constructor(readonly dir: string, private readonly session: WorkerSession, readonly tokenizer: Seq2SeqTokenizer, private readonly layout: PairLayout, options: Partial<ExtractiveOptions>) {
    this.options = { ...defaultExtractiveOptions, ...options }
    this.pieces = new WordPieceCache(tokenizer)
    const id = (token: string) => {
      const value = tokenizer.tokenId(token)
      if (value === undefined) throw ERR_MODEL_INVALID(join(dir, 'tokenizer.json'), `has no ${token} token`, `Re-export the model with \`${HOW_TO_BUILD}\``)
      return value
    }
    this.cls = id(layout.cls)
    this.sep = id(layout.sep)
    this.pad = id(layout.pad)
  }

  static async load(dir: string, load: ExtractiveLoadOptions = {}, options: Partial<ExtractiveOptions> = {}): Promise<ExtractiveReader> {
    const file = join(dir, load.precision === 'fp32' ? 'model.onnx' : 'model_quantized.onnx')
    for (const path of [file, join(dir, 'tokenizer.json')]) if (!existsSync(path)) throw ERR_MODEL_MISSING(path, HOW_TO_BUILD)
    const session = await WorkerSession.create(file, { device: load.device ?? 'cpu', threads: load.threads ?? 2, graphOptimization: 'all', ...(load.logger ? { logger: load.logger } : {}) })
    const missing = OUTPUTS.filter((o) => !session.outputNames.includes(o))
    if (missing.length > 0) {
      await session.release()
      throw ERR_MODEL_INVALID(file, `has no output ${missing.join(', ')} (an extractive reader gives ${OUTPUTS.join(', ')})`, `Re-export the model with \`${HOW_TO_BUILD}\``)
    }
    let layout: PairLayout
    try {
      layout = pairLayout(dir)
      const typed = session.inputNames.includes('token_type_ids')
      if (typed !== layout.typed) {
        throw ERR_MODEL_INVALID(file, `${typed ? 'reads' : 'does not read'} token_type_ids, but the encoder its config.json names ${layout.typed ? 'does' : 'does not'}`, `Re-export the model with \`${HOW_TO_BUILD}\``)
      }
    } catch (err) {
      await session.release()
      throw err
    }
    // An input longer than the model's position table fails inside onnxruntime; cut it instead.
    const maxInputTokens = Math.min(options.maxInputTokens ?? defaultExtractiveOptions.maxInputTokens, layout.positions ?? Infinity)
    return new ExtractiveReader(dir, session, Seq2SeqTokenizer.load(dir), layout, { ...options, maxInputTokens })
  }

  /**
   * `[CLS] question [SEP] title: text [SEP]` (MPNet: `<s> question </s></s> title: text </s>`),
   * the passage cut to fit (truncation="only_second").
   */
  input(question: string, passage: { title: string; text: string }): Input {
    const q = this.tokenizer.encodePlain(question).slice(0, this.options.maxQuestionTokens)
    const seps = new Array<number>(this.layout.seps).fill(this.sep)
    const passageStart = q.length + 1 + seps.length
    const pieced = this.pieces.encode(`${passage.title}: ${passage.text}`, Math.max(0, this.options.maxInputTokens - passageStart - 1))
    const ids = [this.cls, ...q, ...seps, ...pieced.ids, this.sep]
    const typeIds = ids.map((_, i) => (i < passageStart ? 0 : 1))
    return { ids, typeIds, pieced, passageStart, fieldAt: passageFields(passage.title, passage.text) }
  }

  async read(items: readonly ReadingQuestion[], signal?: AbortSignal): Promise<PredictedAnswer[][]> {
    const spans = await this.spans(items, signal)
    return items.map((item, i) => this.candidates(item, spans[i]!))
  }

  /** Every question's best spans (a few per passage), best first. */
  async spans(items: readonly ReadingQuestion[], signal?: AbortSignal): Promise<ScoredSpan[][]> {
    return (await this.readPassages(items, signal)).map((read) => this.scoreSpans(read))
  }

  /**
   * Each question's passages as the model read them: the spans of its top n are
   * `scoreSpans(read.slice(0, n))`. Each question's passages are batched among themselves, never
   * with another question's: the int8 model quantises each batch's activations with one scale, so
   * a passage read beside other questions' passages scored differently from run to run (the
   * answers to a question depended on who else was asking; BENCHMARKS.md, "Answer sets, fifth
   * session").
   */
  async readPassages(items: readonly ReadingQuestion[], signal?: AbortSignal): Promise<ReadPassage[][]> {
    return Promise.all(items.map(async (item) => {
      const inputs = item.passages.map((p) => this.input(item.question, p))
      const logits = await this.run(inputs, signal)
      return inputs.map((input, i) => ({ input, logits: logits[i]! }))
    }))
  }

  /**
   * Runs the model over inputs in batches of similar length; logits in input order. Every batch
   * is sent to the model's worker at once, so the model never waits for this thread between
   * batches (a server busy refusing requests got a turn only now and then).
   */
  private async run(inputs: Input[], signal?: AbortSignal): Promise<Logits[]> {
    signal?.throwIfAborted()
    const order = inputs.map((_, i) => i).sort((a, b) => inputs[a]!.ids.length - inputs[b]!.ids.length)
    const batches: number[][] = []
    for (let b = 0; b < order.length; b += this.options.batchSize) batches.push(order.slice(b, b + this.options.batchSize))
    const out = new Array<Logits>(inputs.length)
    await Promise.all(batches.map(async (batch) => {
      const length = Math.max(...batch.map((i) => inputs[i]!.ids.length))
      const ids = new BigInt64Array(batch.length * length).fill(BigInt(this.pad))
      const mask = new BigInt64Array(batch.length * length)
      const types = new BigInt64Array(batch.length * length)
      batch.forEach((i, row) => {
        const x = inputs[i]!
        x.ids.forEach((t, j) => {
          ids[row * length + j] = BigInt(t)
          mask[row * length + j] = 1n
          types[row * length + j] = BigInt(x.typeIds[j]!)
        })
      })
      const shape = [batch.length, length]
      const result = await this.session.run({
        input_ids: new ort.Tensor('int64', ids, shape), attention_mask: new ort.Tensor('int64', mask, shape),
        ...(this.layout.typed ? { token_type_ids: new ort.Tensor('int64', types, shape) } : {}),
      })
      const start = result.start_logits!.data as Float32Array
      const end = result.end_logits!.data as Float32Array
      const relevance = result.relevance_logits!.data as Float32Array
      batch.forEach((i, row) => {
        out[i] = { start: start.slice(row * length, (row + 1) * length), end: end.slice(row * length, (row + 1) * length), relevance: relevance[row]!, length: inputs[i]!.ids.length }
      })
    }))
    return out
  }

  /**
   * log P(passage) (softmax of the selection scores over the passages read, in retrieval order,
   * each less the rank prior) + start + end, with
   * start and end log-softmaxed over the spans' tokens of every passage at once; a span starts at
   * a word's first piece and ends at a word's last. The 5 best spans of each passage.
   */
  scoreSpans(read: readonly ReadPassage[]): ScoredSpan[] {
    if (read.length === 0) return []
    const inputs = read.map((r) => r.input)
    const logits = read.map((r) => r.logits)
    const passageLp = logSoftmax(logits.map((l, p) => l.relevance - this.options.rankPrior * Math.log(p + 1)))
    const startOk = (x: Input, t: number) => { const k = t - x.passageStart; return k >= 0 && k < x.pieced.ids.length && (k === 0 || x.pieced.wordOf[k - 1] !== x.pieced.wordOf[k]) }
    const endOk = (x: Input, t: number) => { const k = t - x.passageStart; return k >= 0 && k < x.pieced.ids.length && (k + 1 === x.pieced.ids.length || x.pieced.wordOf[k + 1] !== x.pieced.wordOf[k]) }
    const startNorm = logSumExpOver(inputs, logits, (l) => l.start, startOk)
    const endNorm = logSumExpOver(inputs, logits, (l) => l.end, endOk)
    const spans: ScoredSpan[] = []
    inputs.forEach((x, p) => {
      const l = logits[p]!
      // A span lies in one field of `title: text` (passageFields).
      const oneField = (first: Word, last: Word) => { const f = x.fieldAt(first.start); return f >= 0 && f === x.fieldAt(last.end - 1) }
      // The passage's own normalisers: a second answer in another passage is that passage's best
      // span however little probability the joint softmax leaves it.
      const localNorm = logSumExpOver([x], [l], (v) => v.start, startOk) + logSumExpOver([x], [l], (v) => v.end, endOk) - startNorm - endNorm
      const best: ScoredSpan[] = []
      for (let i = x.passageStart; i < x.passageStart + x.pieced.ids.length; i++) {
        if (!startOk(x, i)) continue
        for (let j = i; j < Math.min(i + this.options.maxAnswerTokens, x.passageStart + x.pieced.ids.length); j++) {
          if (!endOk(x, j)) continue
          const score = l.start[i]! - startNorm + l.end[j]! - endNorm + passageLp[p]!
          if (best.length < 5 || score > best[best.length - 1]!.score) {
            const words = x.pieced.words
            const first = words[x.pieced.wordOf[i - x.passageStart]!]!
            const last = words[x.pieced.wordOf[j - x.passageStart]!]!
            if (!oneField(first, last)) continue
            const local = score - passageLp[p]! - localNorm
            best.push({ passage: p, start: first.start, end: last.end, text: x.pieced.text.slice(first.start, last.end), score, local, inPassage: 0, relevance: l.relevance, passageLogProb: passageLp[p]! })
            best.sort((a, b) => b.score - a.score)
            if (best.length > 5) best.pop()
          }
        }
      }
      best.forEach((span, rank) => { span.inPassage = rank })
      spans.push(...best)
    })
    return spans.sort((a, b) => b.score - a.score)
  }

  /**
   * The reader's candidates: spans merged by normalised text (probabilities summed over passages),
   * best first, at most `candidates`; citation marks at a span's ends cut and one with a mark
   * inside left out (withoutCitations), a span cut across a bracket or a quotation mark left out, and
   * an answer whose words lie inside a better one's (the same answer cut short), or with
   * `dropContaining` one that holds a better one's words and more (the same answer with its
   * context). Each carries its evidence and its features for the decider (candidateFeatures,
   * answerShape); which make the set is the decider's.
   */
  candidates(item: ReadingQuestion, spans: readonly ScoredSpan[]): PredictedAnswer[] {
    const merged = new Map<string, { text: string; probability: number; spans: ScoredSpan[] }>()
    for (const span of spans) {
      const text = withoutCitations(span.text)
      if (text === null || !balanced(text)) continue
      const key = normalizeAnswer(text)
      if (key.length === 0) continue
      const entry = merged.get(key)
      if (entry) {
        entry.probability += Math.exp(span.score)
        entry.spans.push(span)
      } else {
        merged.set(key, { text, probability: Math.exp(span.score), spans: [span] })
      }
    }
    const ranked = [...merged.values()].sort((a, b) => b.probability - a.probability)
    const kept: { text: string; probability: number; spans: ScoredSpan[]; words: string[] }[] = []
    for (const answer of ranked) {
      if (kept.length >= this.options.candidates) break
      const words = normalizeAnswer(answer.text).split(' ')
      if (kept.some((k) => k.words.length > words.length && containsTokens(k.words, words))) continue
      if (this.options.dropContaining && kept.some((k) => k.words.length < words.length && containsTokens(words, k.words))) continue
      kept.push({ ...answer, words })
    }
    const titles = new Set(item.passages.map((p) => normalizeAnswer(p.title)))
    return kept.map((a) => {
      // Evidence: every passage read that holds the answer (DPR's match), else the ones it came from.
      const holding = item.passages.filter((p) => hasAnswer(`${p.title} ${p.text}`, [a.text]))
      const from = [...new Set(a.spans.map((s) => s.passage))].sort((x, y) => x - y)
      const evidence = holding.length > 0 ? holding : from.map((p) => item.passages[p]!)
      const best = a.spans.reduce((x, y) => (y.local > x.local ? y : x))
      const passage = item.passages[best.passage]!
      // Span offsets are into the input's `title: text`.
      const shift = passage.title.length + 2
      return {
        answer: a.text, probability: Math.min(1, a.probability), evidence, features: { ...candidateFeatures(a.spans, a.words.length, holding.length), ...answerShape(item.question, a.text, titles) },
        window: { title: passage.title, text: wordsAround(passage.text, best.start - shift, best.end - shift, WINDOW_WORDS) },
      }
    })
  }

  async close(): Promise<void> {
    await this.session.release()
  }
}

/**
 * What the answer verifier (reader/answer-set-decider.ts) reads of a candidate beside its merged
 * probability: how strongly its own passages answer with it, however little of the joint
 * probability those passages got. `passage` is the passage of its best local span (the decider
 * counts the distinct passages of the verified candidates).
 */
export function candidateFeatures(spans: readonly ScoredSpan[], words: number, holding: number): Record<string, number> {
  const best = spans.reduce((a, b) => (b.local > a.local ? b : a))
  const passages = new Set(spans.map((s) => s.passage))
  // Per passage, its best span of this candidate: how much of each passage's own answer mass it holds.
  const perPassage = new Map<number, number>()
  for (const s of spans) perPassage.set(s.passage, Math.max(perPassage.get(s.passage) ?? -Infinity, s.local))
  return {
    bestLocal: best.local,
    localMass: [...perPassage.values()].reduce((sum, l) => sum + Math.exp(l), 0),
    bestInPassage: Math.min(...spans.map((s) => s.inPassage)),
    bestRelevance: Math.max(...spans.map((s) => s.relevance)),
    bestPassageLogProb: Math.max(...spans.map((s) => s.passageLogProb)),
    firstSpanPassage: Math.log1p(Math.min(...passages)),
    spanPassages: passages.size,
    topSpanPassages: new Set(spans.filter((s) => s.inPassage === 0).map((s) => s.passage)).size,
    holdingPassages: holding,
    words,
    passage: best.passage,
  }
}

/**
 * Whether the candidate has the shape the question asks for (a date for "when", a name for "who", a
 * number for "how many"), how much of it repeats the question (a small reader often answers with
 * words of the question or with the wrong kind of thing), and whether it names a passage read
 * (`titles`, normalised: a person or a film is often what "who" or "which" asks for).
 */
export function answerShape(question: string, answer: string, titles: ReadonlySet<string>): Record<string, number> {
  const q = question.toLowerCase()
  const words = answer.split(/\s+/).filter(Boolean)
  const hasDigit = /\d/.test(answer) ? 1 : 0
  const capitalised = words.length > 0 ? words.filter((w) => /^[A-Z]/.test(w)).length / words.length : 0
  const askWhen = /^(when|what year|what date)\b|\bwhat year\b/.test(q) ? 1 : 0
  const askWho = /^(who|whom|whose)\b|\bwho\b/.test(q) ? 1 : 0
  const askHowMany = /\bhow (many|much)\b/.test(q) ? 1 : 0
  const questionWords = new Set(normalizeAnswer(question).split(' '))
  const own = normalizeAnswer(answer).split(' ').filter(Boolean)
  return {
    hasDigit, capitalised, askWhen, askWho, askHowMany,
    whenDate: askWhen * hasDigit, whoName: askWho * capitalised, howManyNumber: askHowMany * hasDigit,
    inQuestion: own.length > 0 ? own.filter((w) => questionWords.has(w)).length / own.length : 0,
    titleMatch: titles.has(normalizeAnswer(answer)) ? 1 : 0,
  }
}

/** Words kept on each side of a candidate's span in the window the answer verifier reads. */
export const WINDOW_WORDS = 30

/**
 * The words of `text` around the characters start..end (offsets into `text`; a span in the title
 * before it gives negative ones, and the window then opens the text): `words` whole words on each
 * side, so that the verifier reads a candidate in its sentence, not its whole passage.
 */
export function wordsAround(text: string, start: number, end: number, words: number): string {
  const bounds = [...text.matchAll(/\S+/g)].map((m) => [m.index, m.index + m[0].length] as const)
  if (bounds.length === 0) return ''
  let first = bounds.findIndex(([, b]) => b > start)
  if (first < 0) first = bounds.length - 1
  let last = bounds.findIndex(([a]) => a >= end) - 1
  if (last < 0 && end > 0) last = bounds.length - 1
  last = Math.max(first, last)
  const from = bounds[Math.max(0, first - words)]![0]
  const to = bounds[Math.min(bounds.length - 1, last + words)]![1]
  return text.slice(from, to)
}

// A Wikipedia citation mark: "[2]", "[109]".
const MARK = String.raw`\[\d{1,3}\]`
const CITATION = new RegExp(MARK)
const CITATIONS_AT_END = new RegExp(String.raw`[,;:]?(?:\s*${MARK})+\s*$`)
const CITATIONS_AT_START = new RegExp(String.raw`^\s*(?:${MARK}\s*)+`)

/**
 * The span without the Wikipedia citation marks at its ends ("Ouagadougou[2]" → "Ouagadougou",
 * "Sylva, North Carolina,[13]" → "Sylva, North Carolina"), or null for one with a mark inside: it
 * runs from one sentence's end into the next ("Richard Petty,[5] Dale Earnhardt"). A mark never
 * belongs to an answer, and the official metric's normalisation keeps its digits ("ouagadougou2").
 * train/ambigqa_train/extractive.py without_citations is the same for the committees.
 */
export function withoutCitations(text: string): string | null {
  const trimmed = text.replace(CITATIONS_AT_END, '').replace(CITATIONS_AT_START, '')
  return CITATION.test(trimmed) ? null : trimmed
}

/**
 * Whether every bracket the span opens it closes and the other way round: "Bob Brown (aka Captain
 * Rock" is a span cut across a parenthesis, never an answer as the passage writes it.
 */
function balanced(text: string): boolean {
  for (const [open, close] of [['(', ')'], ['[', ']'], ['{', '}']] as const) {
    let depth = 0
    for (const ch of text) {
      if (ch === open) depth++
      else if (ch === close && --depth < 0) return false
    }
    if (depth !== 0) return false
  }
  return (text.match(/"/g)?.length ?? 0) % 2 === 0
}

function logSumExp(values: readonly number[]): number {
  const max = Math.max(...values)
  return max + Math.log(values.reduce((s, v) => s + Math.exp(v - max), 0))
}

function logSoftmax(values: readonly number[]): number[] {
  const norm = logSumExp(values)
  return values.map((v) => v - norm)
}

/** log Σ exp(logit) over the allowed tokens of every input (the others are masked, as in training). */
function logSumExpOver(inputs: Input[], logits: Logits[], pick: (l: Logits) => Float32Array, allowed: (x: Input, t: number) => boolean): number {
  const values: number[] = []
  inputs.forEach((x, p) => {
    const l = pick(logits[p]!)
    for (let t = 0; t < logits[p]!.length; t++) if (allowed(x, t)) values.push(l[t]!)
  })
  return logSumExp(values)
}
