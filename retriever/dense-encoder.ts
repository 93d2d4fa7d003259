// Sentence encoders for dense retrieval: ONNX models run by onnxruntime-node, tokenized from
// their tokenizer.json by @huggingface/tokenizers, fully offline (scripts/assets lays out the
// folders). Each model keeps its own conventions: e5's "query: "/"passage: " prefixes with mean
// pooling, bge's query instruction with CLS pooling, MiniLM's plain mean pooling; all L2-normalised.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Tokenizer } from '@huggingface/tokenizers'
import ort from '../core/onnx-runtime.js'
import { createSession, deviceOf, type Device, type RunDevice } from '../core/onnx-session.js'
import type { Logger } from '../core/log.js'
import { ERR_MODEL_MISSING, ERR_USAGE } from '../core/errors.js'

interface Conventions {
  pooling: 'mean' | 'cls'
  queryPrefix: string
  passagePrefix: string
}

const CONVENTIONS: Record<string, Conventions> = {
  'e5-small-v2': { pooling: 'mean', queryPrefix: 'query: ', passagePrefix: 'passage: ' },
  'bge-small-en-v1.5': { pooling: 'cls', queryPrefix: 'Represent this sentence for searching relevant passages: ', passagePrefix: '' },
  'all-minilm-l6-v2': { pooling: 'mean', queryPrefix: '', passagePrefix: '' },
}

/** Every encoder scripts/assets provides: each base model in fp32 and int8. */
export const ENCODER_NAMES = Object.keys(CONVENTIONS).flatMap((name) => [name, `${name}-int8`])

/** tokenizer.json's own truncation is ignored by the JS tokenizer, so we cut here. MiniLM was
 * trained at 256 tokens, and a 100-word passage is about 150. */
const MAX_TOKENS = 256

export type TextKind = 'query' | 'passage'

interface SharedEntry { encoder: Promise<DenseEncoder>; users: number }
const shared = new Map<string, SharedEntry>()

export class DenseEncoder {
  readonly name: string
  private readonly conventions: Conventions
  /** Set on an encoder from shared(): its key there. */
  private sharedKey: string | undefined

  private constructor(name: string, private readonly session: ort.InferenceSession, private readonly tokenizer: Tokenizer, private readonly sepId: number) {
    this.name = name
    this.conventions = CONVENTIONS[name.replace(/-int8$/, '')]!
  }

  /** Where the encoder runs (the CPU when the device asked for could not start). */
  get device(): RunDevice {
    return deviceOf(this.session)
  }

  /**
   * One encoder per model, folder, threads and device for the whole process, counted by its users:
   * the dense retriever and the answer-set decider both embed questions with e5, so they share one
   * session (the question's vector itself travels from the retriever to the decider in the
   * pipeline's retrieval result). Each user closes it; the last close releases it.
   */
  static async shared(name: string, modelsDir: string, threads = 2, options: { device?: Device; logger?: Logger } = {}): Promise<DenseEncoder> {
    const key = JSON.stringify([name, modelsDir, threads, options.device ?? 'cpu'])
    let entry = shared.get(key)
    if (!entry) {
      entry = { encoder: DenseEncoder.load(name, modelsDir, threads, options), users: 0 }
      shared.set(key, entry)
      entry.encoder.catch(() => shared.delete(key))
    }
    entry.users++
    const encoder = await entry.encoder
    encoder.sharedKey = key
    return encoder
  }

  static async load(name: string, modelsDir: string, threads = 2, options: { device?: Device; logger?: Logger } = {}): Promise<DenseEncoder> {
    const dir = encoderDir(name, modelsDir)
    const tokenizerJson = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'))
    const tokenizer = new Tokenizer(tokenizerJson, {})
    const sep = (tokenizerJson.added_tokens as { id: number; content: string }[]).find((t) => t.content === '[SEP]')
    const session = await createSession(join(dir, 'model.onnx'), { device: options.device ?? 'cpu', threads, graphOptimization: 'all', ...(options.logger ? { logger: options.logger } : {}) })
    return new DenseEncoder(name, session, tokenizer, sep?.id ?? 102)
  }

  /** Unit vectors, one per text. */
  async encode(texts: readonly string[], kind: TextKind): Promise<Float32Array[]> {
    if (texts.length === 0) return []
    const prefix = kind === 'query' ? this.conventions.queryPrefix : this.conventions.passagePrefix
    const encoded = texts.map((text) => {
      const ids: number[] = this.tokenizer.encode(prefix + text).ids
      return ids.length > MAX_TOKENS ? [...ids.slice(0, MAX_TOKENS - 1), this.sepId] : ids
    })
    const length = Math.max(...encoded.map((ids) => ids.length))
    const n = encoded.length
    const inputIds = new BigInt64Array(n * length)
    const mask = new BigInt64Array(n * length)
    encoded.forEach((ids, i) => ids.forEach((id: number, j: number) => {
      inputIds[i * length + j] = BigInt(id)
      mask[i * length + j] = 1n
    }))
    const dims = [n, length]
    const output = await this.session.run({
      input_ids: new ort.Tensor('int64', inputIds, dims),
      attention_mask: new ort.Tensor('int64', mask, dims),
      token_type_ids: new ort.Tensor('int64', new BigInt64Array(n * length), dims),
    })
    const hidden = output.last_hidden_state!
    const width = hidden.dims[2]!
    const data = hidden.data as Float32Array
    return encoded.map((ids, i) => {
      const vector = new Float32Array(width)
      const base = i * length * width
      if (this.conventions.pooling === 'cls') vector.set(data.subarray(base, base + width))
      else {
        for (let t = 0; t < ids.length; t++) for (let d = 0; d < width; d++) vector[d]! += data[base + t * width + d]!
        for (let d = 0; d < width; d++) vector[d]! /= ids.length
      }
      let norm = 0
      for (let d = 0; d < width; d++) norm += vector[d]! * vector[d]!
      norm = Math.sqrt(norm) || 1
      for (let d = 0; d < width; d++) vector[d]! /= norm
      return vector
    })
  }

  async close(): Promise<void> {
    const entry = this.sharedKey === undefined ? undefined : shared.get(this.sharedKey)
    if (entry && --entry.users > 0) return
    if (entry) shared.delete(this.sharedKey!)
    await this.session.release()
  }
}

/** A known encoder's folder holding its model and tokenizer, or the error that says how to fetch it. */
export function encoderDir(name: string, modelsDir: string): string {
  if (!ENCODER_NAMES.includes(name)) throw ERR_USAGE(`unknown encoder '${name}'`, `Use one of: ${ENCODER_NAMES.join(', ')}`)
  const dir = join(modelsDir, name)
  for (const file of ['model.onnx', 'tokenizer.json']) {
    if (!existsSync(join(dir, file))) throw ERR_MODEL_MISSING(join(dir, file), `scripts/assets ${name}`)
  }
  return dir
}

/** What an encoder reads of a passage. */
export function passageText(title: string, text: string): string {
  return title ? `${title}. ${text}` : text
}
