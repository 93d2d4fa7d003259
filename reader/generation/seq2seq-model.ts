// An encoder-decoder exported in the Hugging Face / Optimum ONNX layout (BART, T5, ours or a
// user's), loaded once from a folder and run by onnxruntime-node with the decoder's KV cache.
// Layouts accepted: decoder_model_merged.onnx (one graph, a `use_cache_branch` switch), or
// decoder_model.onnx + decoder_with_past_model.onnx; `int8` picks the `_quantized` files.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import ort from '../../core/onnx-runtime.js'
import { ERR_MODEL_INVALID, ERR_MODEL_MISSING } from '../../core/errors.js'
import { createSession, defaultSessionOptions, type SessionOptions } from '../../core/onnx-session.js'
import { Seq2SeqTokenizer } from './seq2seq-tokenizer.js'
import { LogSoftmaxSession } from './log-softmax-session.js'
import { generationDefaultsFrom, type GenerationOptions } from './generation-options.js'

export type Precision = 'fp32' | 'int8'

export interface ModelConfig {
  decoderStartTokenId: number
  eosTokenIds: number[]
  padTokenId: number
  vocabSize: number
  decoderLayers: number
  heads: number
  headDim: number
}

/** The encoder's output for a batch, kept for every decoder step. */
export interface EncoderState {
  hidden: ort.Tensor
  mask: ort.Tensor
  batch: number
}

/** Key/value tensors per decoder layer; the encoder part is computed once and never changes. */
export interface PastState {
  decoder: ort.Tensor[]
  encoder: ort.Tensor[]
  length: number
}

export interface DecoderOutput {
  /** Next-token logits of each row, `batch × vocab`, from the last decoder position. */
  logits: Float32Array
  past?: PastState
}

export interface LoadOptions extends Partial<SessionOptions> {
  precision?: Precision
}

const HOW_TO_BUILD = 'ambigqa train export seq2seq <checkpoint> <model folder>'

function readJson(path: string): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>
  } catch (error) {
    throw ERR_MODEL_INVALID.withCause(error, path, `not readable JSON (${(error as Error).message})`, `Re-export the model with \`${HOW_TO_BUILD}\``)
  }
}

function int(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined
}

function ids(value: unknown): number[] {
  if (Array.isArray(value)) return value.filter((v): v is number => typeof v === 'number')
  const one = int(value)
  return one === undefined ? [] : [one]
}

function modelConfig(dir: string, raw: Record<string, unknown>, generation: Record<string, unknown>): ModelConfig {
  const path = join(dir, 'config.json')
  const need = (name: string, ...keys: string[]): number => {
    for (const key of keys) {
      const v = int(generation[key]) ?? int(raw[key])
      if (v !== undefined) return v
    }
    throw ERR_MODEL_INVALID(path, `has no ${name} (${keys.join(' or ')})`, `Re-export the model with \`${HOW_TO_BUILD}\``)
  }
  const dModel = need('model width', 'd_model')
  const heads = need('decoder head count', 'decoder_attention_heads', 'num_heads')
  const eos = ids(generation.eos_token_id).length > 0 ? ids(generation.eos_token_id) : ids(raw.eos_token_id)
  if (eos.length === 0) throw ERR_MODEL_INVALID(path, 'has no eos_token_id', `Re-export the model with \`${HOW_TO_BUILD}\``)
  return {
    decoderStartTokenId: need('decoder start token', 'decoder_start_token_id'),
    eosTokenIds: eos,
    padTokenId: need('pad token', 'pad_token_id'),
    vocabSize: need('vocabulary size', 'vocab_size'),
    decoderLayers: need('decoder layer count', 'decoder_layers', 'num_decoder_layers'),
    heads,
    headDim: int(raw.d_kv) ?? dModel / heads,
  }
}

export class Seq2SeqModel {
  private constructor(
    readonly dir: string,
    readonly precision: Precision,
    readonly config: ModelConfig,
    readonly generationDefaults: GenerationOptions,
    readonly tokenizer: Seq2SeqTokenizer,
    private readonly encoder: ort.InferenceSession,
    /** The graph for the first step (merged, or decoder_model.onnx). */
    private readonly decoderFirst: ort.InferenceSession,
    /** The graph for later steps with the cache (merged again, or decoder_with_past_model.onnx). */
    private readonly decoderWithPast: ort.InferenceSession,
    private readonly merged: boolean,
    private readonly logSoftmaxSession: LogSoftmaxSession,
  ) {}

  static async load(dir: string, options: LoadOptions = {}): Promise<Seq2SeqModel> {
    const precision = options.precision ?? 'fp32'
    const suffix = precision === 'int8' ? '_quantized' : ''
    const file = (name: string): string => join(dir, name)
    for (const name of ['config.json', 'tokenizer.json', `encoder_model${suffix}.onnx`]) {
      if (!existsSync(file(name))) throw ERR_MODEL_MISSING(file(name), HOW_TO_BUILD)
    }
    const mergedPath = file(`decoder_model_merged${suffix}.onnx`)
    const splitPaths = [file(`decoder_model${suffix}.onnx`), file(`decoder_with_past_model${suffix}.onnx`)] as const
    const merged = existsSync(mergedPath)
    if (!merged) for (const path of splitPaths) if (!existsSync(path)) throw ERR_MODEL_MISSING(`${mergedPath} (or ${path})`, HOW_TO_BUILD)

    const raw = readJson(file('config.json'))
    const generation = existsSync(file('generation_config.json')) ? readJson(file('generation_config.json')) : {}
    const config = modelConfig(dir, raw, generation)
    const tokenizer = Seq2SeqTokenizer.load(dir)
    if (tokenizer.vocabSize > config.vocabSize) {
      throw ERR_MODEL_INVALID(file('tokenizer.json'), `has ${tokenizer.vocabSize} tokens but config.json's vocab_size is ${config.vocabSize}`, `The tokenizer does not belong to this model: re-export both with \`${HOW_TO_BUILD}\``)
    }
    const sessionOptions = { ...defaultSessionOptions, ...options }
    const encoder = await createSession(file(`encoder_model${suffix}.onnx`), sessionOptions)
    let decoderFirst: ort.InferenceSession
    let decoderWithPast: ort.InferenceSession
    if (merged) {
      decoderFirst = decoderWithPast = await createSession(mergedPath, sessionOptions)
    } else {
      decoderFirst = await createSession(splitPaths[0], sessionOptions)
      decoderWithPast = await createSession(splitPaths[1], sessionOptions)
    }
    const layersInGraph = decoderWithPast.inputNames.filter((n) => /^past_key_values\.\d+\.decoder\.key$/.test(n)).length
    if (layersInGraph !== config.decoderLayers) {
      throw ERR_MODEL_INVALID(merged ? mergedPath : splitPaths[1], `has ${layersInGraph} cached decoder layers but config.json says ${config.decoderLayers}`, `Export the model with its KV cache (text2text-generation-with-past): \`${HOW_TO_BUILD}\``)
    }
    const logSoftmax = await LogSoftmaxSession.create(sessionOptions.threads)
    return new Seq2SeqModel(dir, precision, config, generationDefaultsFrom(generation, raw, config), tokenizer, encoder, decoderFirst, decoderWithPast, merged, logSoftmax)
  }

  /** Runs the encoder over right-padded inputs. */
  async encode(inputs: readonly (readonly number[])[]): Promise<EncoderState> {
    const batch = inputs.length
    const length = Math.max(1, ...inputs.map((row) => row.length))
    const inputIds = new BigInt64Array(batch * length).fill(BigInt(this.config.padTokenId))
    const mask = new BigInt64Array(batch * length)
    inputs.forEach((row, i) => row.forEach((id, j) => {
      inputIds[i * length + j] = BigInt(id)
      mask[i * length + j] = 1n
    }))
    const maskTensor = new ort.Tensor('int64', mask, [batch, length])
    const out = await this.encoder.run({ input_ids: new ort.Tensor('int64', inputIds, [batch, length]), attention_mask: maskTensor })
    return { hidden: out.last_hidden_state!, mask: maskTensor, batch }
  }

  /** Repeats each row of the encoder state `times` times (the beams of one input share it). */
  expandEncoder(state: EncoderState, times: number): EncoderState {
    if (times === 1) return state
    return { hidden: repeatRows(state.hidden, times), mask: repeatRows(state.mask, times), batch: state.batch * times }
  }

  /**
   * The decoder over whole sequences (all rows the same length), without a cache. With
   * `keepCache` it also returns the cache for `step`; without it this is the recompute-everything
   * path the benchmark compares against.
   */
  async decodeFull(encoder: EncoderState, sequences: readonly (readonly number[])[], keepCache = true): Promise<DecoderOutput> {
    const batch = sequences.length
    const length = sequences[0]!.length
    const inputIds = new BigInt64Array(batch * length)
    sequences.forEach((row, i) => row.forEach((id, j) => { inputIds[i * length + j] = BigInt(id) }))
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', inputIds, [batch, length]),
      encoder_attention_mask: encoder.mask,
      encoder_hidden_states: encoder.hidden,
    }
    if (this.merged) {
      const empty = new ort.Tensor('float32', new Float32Array(0), [batch, this.config.heads, 0, this.config.headDim])
      for (let layer = 0; layer < this.config.decoderLayers; layer++) {
        for (const part of ['decoder', 'encoder']) for (const kv of ['key', 'value']) feeds[`past_key_values.${layer}.${part}.${kv}`] = empty
      }
      feeds.use_cache_branch = new ort.Tensor('bool', [false], [1])
    }
    const out = await this.decoderFirst.run(feeds)
    const logits = lastPosition(out.logits!)
    if (!keepCache) return { logits }
    const past: PastState = { decoder: [], encoder: [], length }
    for (let layer = 0; layer < this.config.decoderLayers; layer++) {
      past.decoder.push(out[`present.${layer}.decoder.key`]!, out[`present.${layer}.decoder.value`]!)
      past.encoder.push(out[`present.${layer}.encoder.key`]!, out[`present.${layer}.encoder.value`]!)
    }
    return { logits, past }
  }

  /** One decoder step with the cache: the next token of each row. */
  async step(encoder: EncoderState, tokens: readonly number[], past: PastState): Promise<DecoderOutput> {
    const batch = tokens.length
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(tokens, (t) => BigInt(t)), [batch, 1]),
      encoder_attention_mask: encoder.mask,
    }
    if (this.decoderWithPast.inputNames.includes('encoder_hidden_states')) feeds.encoder_hidden_states = encoder.hidden
    for (let layer = 0; layer < this.config.decoderLayers; layer++) {
      feeds[`past_key_values.${layer}.decoder.key`] = past.decoder[2 * layer]!
      feeds[`past_key_values.${layer}.decoder.value`] = past.decoder[2 * layer + 1]!
      feeds[`past_key_values.${layer}.encoder.key`] = past.encoder[2 * layer]!
      feeds[`past_key_values.${layer}.encoder.value`] = past.encoder[2 * layer + 1]!
    }
    if (this.merged) feeds.use_cache_branch = new ort.Tensor('bool', [true], [1])
    const out = await this.decoderWithPast.run(feeds)
    const decoder: ort.Tensor[] = []
    for (let layer = 0; layer < this.config.decoderLayers; layer++) {
      decoder.push(out[`present.${layer}.decoder.key`]!, out[`present.${layer}.decoder.value`]!)
    }
    return { logits: lastPosition(out.logits!), past: { decoder, encoder: past.encoder, length: past.length + 1 } }
  }

  /** log_softmax of each of the `rows` rows of next-token logits (rows × vocab), in a new array. */
  logSoftmax(logits: Float32Array, rows: number): Promise<Float32Array> {
    return this.logSoftmaxSession.run(logits, rows)
  }

  /** The cache rows reordered to follow the beams that survived (`rows[i]` = source row of row i). */
  reorder(past: PastState, rows: readonly number[]): PastState {
    return { decoder: past.decoder.map((t) => gatherRows(t, rows)), encoder: past.encoder, length: past.length }
  }

  async close(): Promise<void> {
    const sessions = new Set([this.encoder, this.decoderFirst, this.decoderWithPast])
    await Promise.all([...sessions].map((s) => s.release()))
    await this.logSoftmaxSession.release()
  }
}

function lastPosition(logits: ort.Tensor): Float32Array {
  const [batch, length, vocab] = logits.dims as [number, number, number]
  const data = logits.data as Float32Array
  if (length === 1) return data
  const out = new Float32Array(batch * vocab)
  for (let i = 0; i < batch; i++) out.set(data.subarray((i * length + length - 1) * vocab, (i * length + length) * vocab), i * vocab)
  return out
}

function rowSize(tensor: ort.Tensor): number {
  return tensor.dims.slice(1).reduce((a, b) => a * b, 1)
}

function gatherRows(tensor: ort.Tensor, rows: readonly number[]): ort.Tensor {
  const size = rowSize(tensor)
  const data = tensor.data as Float32Array
  const out = new Float32Array(rows.length * size)
  rows.forEach((row, i) => out.set(data.subarray(row * size, (row + 1) * size), i * size))
  return new ort.Tensor('float32', out, [rows.length, ...tensor.dims.slice(1)])
}

function repeatRows(tensor: ort.Tensor, times: number): ort.Tensor {
  const rows = Array.from({ length: tensor.dims[0]! * times }, (_, i) => Math.floor(i / times))
  if (tensor.type === 'float32') return gatherRows(tensor, rows)
  const size = rowSize(tensor)
  const data = tensor.data as BigInt64Array
  const out = new BigInt64Array(rows.length * size)
  rows.forEach((row, i) => out.set(data.subarray(row * size, (row + 1) * size), i * size))
  return new ort.Tensor('int64', out, [rows.length, ...tensor.dims.slice(1)])
}
