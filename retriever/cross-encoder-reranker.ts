// The reranker's serving side: a BERT cross-encoder exported as model.onnx (train/, or any
// sequence-classification model with one logit and a tokenizer.json) scores each (question,
// passage) pair as it was trained: [CLS] question [SEP] title: text [SEP], the passage cut first.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Tokenizer } from '@huggingface/tokenizers'
import ort from '../core/onnx-runtime.js'
import { ERR_MODEL_INVALID, ERR_MODEL_MISSING } from '../core/errors.js'
import type { Reranked, Retrieved, Stage } from '../core/stages.js'
import { defaultSessionOptions, type SessionOptions } from '../core/onnx-session.js'
import { WorkerSession } from '../core/worker-session.js'
import type { RetrievedPassage } from '../core/retriever.js'

export interface RerankerOptions extends Partial<SessionOptions> {
  precision?: 'fp32' | 'int8'
  /** Pair length in tokens (the length the model was trained at). */
  maxTokens?: number
  /** Pairs scored in one run. */
  batchSize?: number
}

const HOW_TO_BUILD = 'ambigqa train export cross-encoder <checkpoint> <model folder>'

/** What a pair reads of a passage: `title: text`. */
type PairText = Pick<RetrievedPassage, 'title' | 'text'>

export class CrossEncoderReranker implements Stage<Retrieved, Reranked> {
  readonly name = 'cross-encoder'

  private constructor(
    readonly dir: string,
    private readonly session: WorkerSession,
    private readonly tokenizer: Tokenizer,
    private readonly cls: number,
    private readonly sep: number,
    private readonly maxTokens: number,
    private readonly batchSize: number,
  ) {}

  static async load(dir: string, options: RerankerOptions = {}): Promise<CrossEncoderReranker> {
    const file = join(dir, options.precision === 'int8' ? 'model_quantized.onnx' : 'model.onnx')
    for (const path of [file, join(dir, 'tokenizer.json')]) if (!existsSync(path)) throw ERR_MODEL_MISSING(path, HOW_TO_BUILD)
    const tokenizer = new Tokenizer(JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')), {})
    const cls = tokenizer.token_to_id('[CLS]')
    const sep = tokenizer.token_to_id('[SEP]')
    if (cls === undefined || sep === undefined) throw ERR_MODEL_INVALID(join(dir, 'tokenizer.json'), 'has no [CLS] or [SEP] token', 'The reranker must be a BERT-style cross-encoder')
    // In a worker thread, as the extractive reader's: scoring 100 passages (or a set's candidates,
    // as the answer verifier) would otherwise hold the server's event loop while it computes.
    const { precision: _precision, maxTokens: _maxTokens, batchSize: _batchSize, ...sessionOptions } = options
    const session = await WorkerSession.create(file, { ...defaultSessionOptions, ...sessionOptions })
    return new CrossEncoderReranker(dir, session, tokenizer, cls, sep, options.maxTokens ?? 256, options.batchSize ?? 16)
  }

  private pair(question: readonly number[], passage: PairText): number[] {
    const q = question.slice(0, Math.max(1, Math.floor(this.maxTokens / 2)))
    const room = Math.max(0, this.maxTokens - q.length - 3)
    const p = this.tokenizer.encode(`${passage.title}: ${passage.text}`, { add_special_tokens: false }).ids.slice(0, room)
    return [this.cls, ...q, this.sep, ...p, this.sep]
  }

  /** One logit per passage, in the passages' order (only their title and text are read). */
  async score(question: string, passages: readonly PairText[], signal?: AbortSignal): Promise<number[]> {
    const q = this.tokenizer.encode(question, { add_special_tokens: false }).ids
    const scores: number[] = []
    for (let start = 0; start < passages.length; start += this.batchSize) {
      signal?.throwIfAborted()
      const pairs = passages.slice(start, start + this.batchSize).map((p) => this.pair(q, p))
      const n = pairs.length
      const length = Math.max(...pairs.map((ids) => ids.length))
      const ids = new BigInt64Array(n * length)
      const mask = new BigInt64Array(n * length)
      const types = new BigInt64Array(n * length)
      pairs.forEach((pair, i) => {
        const second = pair.indexOf(this.sep) + 1
        pair.forEach((id, j) => {
          ids[i * length + j] = BigInt(id)
          mask[i * length + j] = 1n
          if (j >= second) types[i * length + j] = 1n
        })
      })
      const feeds: Record<string, ort.Tensor> = {
        input_ids: new ort.Tensor('int64', ids, [n, length]),
        attention_mask: new ort.Tensor('int64', mask, [n, length]),
      }
      if (this.session.inputNames.includes('token_type_ids')) feeds.token_type_ids = new ort.Tensor('int64', types, [n, length])
      const out = await this.session.run(feeds)
      const logits = out.logits!.data as Float32Array
      const width = logits.length / n
      for (let i = 0; i < n; i++) scores.push(logits[i * width]!)
    }
    return scores
  }

  /** The retrieved passages reordered by the cross-encoder's logit (ties keep retrieval order), cut to `read`. */
  async run(input: Retrieved, signal?: AbortSignal): Promise<Reranked> {
    const scores = await this.score(input.question, input.passages, signal)
    const order = scores.map((score, i) => ({ score, i })).sort((a, b) => b.score - a.score || a.i - b.i)
    return { ...input, reranked: order.slice(0, input.read).map(({ score, i }) => ({ ...input.passages[i]!, score })) }
  }

  async close(): Promise<void> {
    await this.session.release()
  }
}
