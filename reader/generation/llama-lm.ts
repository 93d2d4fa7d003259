// A pretrained decoder-only model with a LoRA adapter, run by llama.cpp (node-llama-cpp): the
// base GGUF is fetched once by `scripts/assets lm-base` (it is 253 MB, too big for the repository),
// the adapter (15 MB) ships in the model folder, and on first load is merged into a Q8_0 copy of
// the base kept beside it (gguf-merge.ts: twice as fast to read a prompt as the base with the
// adapter applied at run time). Chosen over the project's ONNX generation engine because llama.cpp
// runs GGUF as it is: an ONNX export would be the dequantised 1 GB model.
//
// A model folder holds lm.json {base: {file, sha256}, adapter: "adapter.gguf", task, format,
// serve} and the adapter. One context with one sequence: llama.cpp computes on its own threads (the event
// loop stays free) and the calls take turns.
import { createHash } from 'node:crypto'
import { createReadStream, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { getLlama, LlamaLogLevel, type Llama, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token } from 'node-llama-cpp'
import { ERR_MODEL_INVALID, ERR_MODEL_MISSING } from '../../core/errors.js'
import type { Device } from '../../core/kinds.js'
import type { Logger } from '../../core/log.js'
import { recordModel } from '../../core/model-devices.js'
import { DEFAULT_LM_BASE_DIR } from '../../core/paths.js'
import { mergeLora } from './gguf-merge.js'

export const LM_FOLDER_FILE = 'lm.json'
const FETCH_BASE = 'scripts/assets lm-base'

export interface LmFolder {
  base: { file: string, sha256: string }
  adapter: string
  task: 'qd' | 'span'
  /** The prompt layout it was trained on (reader/lm-prompt.ts). */
  format: 'lm-prompt-v1'
  /**
   * How it is served, as its numbers were measured: `merged` (the default) into a Q8_0 copy of
   * the base (gguf-merge.ts says why), or `adapter`, applied to the base at run time.
   */
  serve?: 'merged' | 'adapter'
}

/** Whether a model folder is a decoder-only LM (an lm.json) rather than a seq2seq export. */
export function isLmFolder(dir: string): boolean {
  return existsSync(join(dir, LM_FOLDER_FILE))
}

export function readLmFolder(dir: string): LmFolder {
  const path = join(dir, LM_FOLDER_FILE)
  let spec: LmFolder
  try {
    spec = JSON.parse(readFileSync(path, 'utf8')) as LmFolder
  } catch (e) {
    throw ERR_MODEL_INVALID(path, `not readable JSON (${(e as Error).message})`, 'Rebuild the folder with `scripts/train-defaults qd-lm`')
  }
  if (spec.format !== 'lm-prompt-v1' || typeof spec.base?.file !== 'string' || typeof spec.adapter !== 'string' || ![undefined, 'merged', 'adapter'].includes(spec.serve)) {
    throw ERR_MODEL_INVALID(path, 'not an lm.json this server runs (format lm-prompt-v1, base.file, adapter, serve merged or adapter)', 'Rebuild the folder with `scripts/train-defaults qd-lm`')
  }
  return spec
}

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer)
  return hash.digest('hex')
}

export interface LlamaLmOptions {
  threads?: number
  /** Where the base GGUF files are (default models/base). */
  baseDir?: string
  logger?: Logger
  /** Draft tokens read per step by prompt-lookup decoding (0: one token a step). */
  lookahead?: number
  /** Where llama.cpp computes (openLlama): cpu (the default), cuda, webgpu (its Vulkan device) or auto. */
  device?: Device
  /**
   * Overrides the folder's `serve` (benchmarks compare both): true serves the base with the
   * adapter merged in, made once into `<baseDir>/merged/`; false applies the adapter at run time.
   */
  merge?: boolean
}

/** What `score` gives for one continuation. */
export interface ContinuationScore {
  /** Σ log P(token | prefix, the continuation's earlier tokens) over its tokens (natural log). */
  sum: number
  /** sum / tokens: length-normalised, so that long answers are not penalised for their length. */
  mean: number
  tokens: number
  /** log P(the next token is one of `ends`' first tokens | prefix + continuation), when `ends` is given. */
  end?: number
}

/** What one position's filtered logits give: log P(each asked token) under the full softmax. */
function logProbabilities(next: { logits?: Map<Token, number>; totalLogitWeight?: number; token?: Token | null } | undefined, asked: readonly Token[]): number[] {
  // The greedy choice is the top logit, and totalLogitWeight is Σ exp(logit − top): so
  // log P(t) = logit(t) − top − log Σ. (llama.cpp's `includeMax` filter is not used: in 3.22 it
  // adds the top token only when it is already listed.)
  const top = next?.token == null ? undefined : next.logits?.get(next.token)
  if (top === undefined || next?.totalLogitWeight === undefined) throw new Error('llama.cpp gave no logits for a scored position')
  const log = Math.log(next.totalLogitWeight)
  return asked.map((t) => {
    const logit = next.logits!.get(t)
    if (logit === undefined) throw new Error(`llama.cpp gave no logit for token ${t}`)
    return logit - top - log
  })
}

/** The controlled-evaluation item that asks for `tokens`' logits after `token` (and the greedy top, see logProbabilities). */
function asking(token: Token, tokens: readonly Token[]): [Token, { generateNext: { token: true; totalLogitWeight: true; logits: { filter: { tokens: readonly Token[]; includeSelected: true } }; options: { temperature: 0 } } }] {
  return [token, { generateNext: { token: true, totalLogitWeight: true, logits: { filter: { tokens, includeSelected: true } }, options: { temperature: 0 } } }]
}

const logSumExp = (xs: readonly number[]): number => {
  const m = Math.max(...xs)
  return m === -Infinity ? m : m + Math.log(xs.reduce((s, x) => s + Math.exp(x - m), 0))
}

/**
 * The base with the adapter merged in, made on first use and kept beside the bases under a name
 * of both files' sha256, so a new adapter or base gets a file of its own. Each process writes its
 * own .part file and renames it whole: two that merge at once both end with the same file.
 */
async function mergedBase(base: string, baseSha: string, adapter: string, logger?: Logger): Promise<string> {
  const out = join(dirname(base), 'merged', `${baseSha.slice(0, 16)}-${(await sha256(adapter)).slice(0, 16)}-q8_0.gguf`)
  if (existsSync(out)) return out
  mkdirSync(dirname(out), { recursive: true })
  logger?.info({ base, adapter, out }, 'merging the LoRA adapter into its base, once (about 10 s)')
  const started = performance.now()
  const weights = mergeLora(base, adapter, out, `${out}.${process.pid}.part`)
  logger?.info({ out, weights, seconds: Math.round((performance.now() - started) / 100) / 10 }, 'adapter merged')
  return out
}

/**
 * The draft for prompt-lookup decoding: where the longest tail of `written` (at least one token)
 * last occurs in `source`, the tokens that follow it there, at most `n`.
 */
export function lookupDraft<T>(source: readonly T[], written: readonly T[], n: number): T[] {
  if (n <= 0 || written.length === 0) return []
  let best = -1
  let bestLength = 0
  for (let i = source.length - 2; i >= 0; i--) {
    let length = 0
    while (length < written.length && length <= i && source[i - length] === written[written.length - 1 - length]) length++
    if (length > bestLength) { best = i; bestLength = length }
  }
  return best < 0 ? [] : source.slice(best + 1, best + 1 + n)
}

/**
 * llama.cpp as every user of it here starts it: a binary node-llama-cpp ships prebuilt (never a
 * build or a download), its own log quiet but for errors, which go to `logger`. `device` (the
 * reader's): cpu, or the GPU build it asks for (cuda: @node-llama-cpp/linux-x64-cuda; webgpu:
 * @node-llama-cpp/linux-x64-vulkan, on the Vulkan device WebGPU uses; auto: CUDA, then Vulkan). A
 * build that cannot start, or that sees no device, falls back to the CPU with one warning per
 * build and process, as the ONNX sessions do: llama.cpp itself would run every layer on the CPU
 * inside its GPU build without a word.
 */
export async function openLlama(logger?: Logger, device: Device = 'cpu'): Promise<Llama> {
  const options = { build: 'never', progressLogs: false, logLevel: LlamaLogLevel.error,
    logger: (level: LlamaLogLevel, message: string) => { if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) logger?.warn({ llama: message.trim() }, 'llama.cpp') } } as const
  for (const gpu of llamaGpus(device)) {
    if (llamaFailed.has(gpu)) continue
    let why: string
    try {
      const llama = await getLlama({ ...options, gpu })
      const devices = llama.gpu === gpu ? await llama.getGpuDeviceNames() : []
      if (devices.length > 0) return llama
      why = llama.gpu !== gpu ? `llama.cpp started ${llama.gpu || 'the CPU build'}` : gpu === 'vulkan'
        ? 'llama.cpp sees no Vulkan GPU; it uses a CPU-type device such as lavapipe only when GGML_VK_VISIBLE_DEVICES names it'
        : 'llama.cpp sees no CUDA device'
      await llama.dispose()
    } catch (error) {
      why = (error as Error).message
    }
    llamaFailed.add(gpu)
    logger?.warn({ device, gpu, err: why }, `llama.cpp's ${gpu} build is not usable here (${why}); the decoders run on the CPU`)
  }
  return getLlama({ ...options, gpu: false })
}

/** llama.cpp's GPU builds a device asks for, in the order they are tried. */
export function llamaGpus(device: Device): ('cuda' | 'vulkan')[] {
  return device === 'auto' ? ['cuda', 'vulkan'] : device === 'cuda' ? ['cuda'] : device === 'webgpu' ? ['vulkan'] : []
}
const llamaFailed = new Set<string>()

export class LlamaLm {
  private turn: Promise<unknown> = Promise.resolve()
  private forget: () => void = () => {}

  /** `spec`: undefined for a pretrained model served as it is (loadBase). */
  private constructor(readonly spec: LmFolder | undefined, private readonly llama: Llama, private readonly model: LlamaModel,
    private readonly context: LlamaContext, private readonly sequence: LlamaContextSequence, private readonly lookahead: number) {}

  /**
   * A pretrained GGUF with no adapter (the knowledge check reads what the model learnt in
   * pretraining). `sha256`, when given, must be the file's: a different file would score otherwise.
   */
  static async loadBase(path: string, options: Pick<LlamaLmOptions, 'threads' | 'logger' | 'device'> & { sha256?: string; fetch?: string } = {}): Promise<LlamaLm> {
    const fetch = options.fetch ?? FETCH_BASE
    if (!existsSync(path)) throw ERR_MODEL_MISSING(path, fetch)
    if (options.sha256 !== undefined) {
      const digest = await sha256(path)
      if (digest !== options.sha256) throw ERR_MODEL_INVALID(path, `sha256 ${digest} is not the pinned ${options.sha256}`, `Fetch it again with \`${fetch}\``)
    }
    const llama = await openLlama(options.logger, options.device)
    try {
      const model = await llama.loadModel({ modelPath: path })
      const context = await model.createContext({ contextSize: 2048, threads: options.threads ?? 2 })
      return new LlamaLm(undefined, llama, model, context, context.getSequence(), 0).held(path)
    } catch (e) {
      await llama.dispose()
      throw e
    }
  }

  static async load(dir: string, options: LlamaLmOptions = {}): Promise<LlamaLm> {
    const spec = readLmFolder(dir)
    const base = join(options.baseDir ?? DEFAULT_LM_BASE_DIR, spec.base.file)
    if (!existsSync(base)) throw ERR_MODEL_MISSING(base, FETCH_BASE)
    const adapter = join(dir, spec.adapter)
    if (!existsSync(adapter)) throw ERR_MODEL_MISSING(adapter, 'scripts/train-defaults qd-lm')
    // A base that is not the file the adapter was trained against would answer, wrongly: refuse it.
    const digest = await sha256(base)
    if (digest !== spec.base.sha256) throw ERR_MODEL_INVALID(base, `sha256 ${digest} is not the base the adapter was trained on (${spec.base.sha256})`, `Fetch it again with \`${FETCH_BASE}\``)
    let merged: string | undefined
    if (options.merge ?? spec.serve !== 'adapter') {
      try {
        merged = await mergedBase(base, spec.base.sha256, adapter, options.logger)
      } catch (e) {
        // A read-only install, a full disk: the adapter applied at run time serves, slower (and its
        // rewrites differ by rounding: BENCHMARKS.md, "QD latency").
        options.logger?.warn({ err: (e as Error).message, base, adapter }, 'could not merge the adapter into its base: applying it at run time')
      }
    }
    const llama = await openLlama(options.logger, options.device)
    try {
      const model = await llama.loadModel({ modelPath: merged ?? base })
      const lora = merged ? {} : { lora: { adapters: [{ filePath: adapter }] } }
      const context = await model.createContext({ contextSize: 2048, threads: options.threads ?? 2, ...lora })
      return new LlamaLm(spec, llama, model, context, context.getSequence(), options.lookahead ?? 0).held(dir)
    } catch (e) {
      await llama.dispose()  // and the model with it
      throw e
    }
  }

  /** Where llama.cpp computes: cpu, cuda or vulkan. */
  get device(): 'cpu' | 'cuda' | 'vulkan' {
    return this.llama.gpu === 'cuda' || this.llama.gpu === 'vulkan' ? this.llama.gpu : 'cpu'
  }

  /** Recorded for `health` (core/model-devices.ts) until closed. */
  private held(model: string): this {
    const onGpu = this.model.gpuLayers
    const layers = this.model.fileInsights.totalLayers
    this.forget = recordModel({ model, device: this.device, note: `llama.cpp${this.device !== 'cpu' && onGpu < layers ? `, ${onGpu} of ${layers} layers on the GPU` : ''}` })
    return this
  }

  tokenize(text: string): Token[] {
    return this.model.tokenize(text)
  }

  /** Refuses a model folder trained for another task than the caller's. */
  expectTask(task: LmFolder['task'], caller: string): void {
    if (this.spec?.task !== task) throw new Error(`${caller}: the model folder is trained for ${this.spec?.task ?? 'nothing (a pretrained model)'}, not ${task}`)
  }

  /**
   * log P(continuation | BOS + prefix) for each continuation, its tokens forced after the one
   * shared prefix: the prefix is read once, each continuation read after it in one batch of its
   * own and erased after. The prefix and each continuation are tokenized apart and
   * the ids concatenated, as lm-prompt.ts feeds segments. `ends`: texts whose first tokens may
   * follow a continuation (a separator, a newline); their summed probability after it is `end`.
   * Calls take turns with `lines`.
   *
   * One continuation a batch, not several continuations on copies of the prefix's cache in one
   * batch (node-llama-cpp copies a sequence's cache, internally): that was 1.5x faster on a busy
   * machine, but a continuation's log probability then moved with its companions (by up to 0.22
   * nats measured: llama.cpp's CPU kernels round by the batch's shape, cause not isolated). Here
   * it depends only on the prefix and itself.
   */
  async score(prefix: string, continuations: readonly string[], options: { ends?: readonly string[]; signal?: AbortSignal } = {}): Promise<ContinuationScore[]> {
    const run = this.turn.then(() => this.scoreNow(prefix, continuations, options.ends ?? [], options.signal))
    this.turn = run.catch(() => undefined)
    return run
  }

  private async scoreNow(prefix: string, continuations: readonly string[], ends: readonly string[], signal?: AbortSignal): Promise<ContinuationScore[]> {
    signal?.throwIfAborted()
    const bos = this.model.tokens.bos
    const prompt = [...(bos === null ? [] : [bos]), ...this.tokenize(prefix)]
    if (prompt.length === 0) throw new Error('score: an empty prefix with no BOS token has nothing to condition on')
    const pieces = continuations.map((c) => this.tokenize(c))
    const endTokens = [...new Set(ends.map((e) => this.tokenize(e)[0]).filter((t): t is Token => t !== undefined))]
    const firsts = [...new Set(pieces.map((p) => p[0]).filter((t): t is Token => t !== undefined))]
    // The prefix read whole on an empty context, its last token asked for every continuation's
    // first token. Not kept from an earlier call: the part read again would be read in another
    // batch, and llama.cpp's CPU kernels round by the batch's shape (by up to 0.3 nats measured on
    // Gemma 3 270M), so the same question would score otherwise after another one.
    await this.sequence.clearHistory()
    const read = await this.sequence.controlledEvaluate(prompt.map((t, i) => (i === prompt.length - 1 ? asking(t, firsts) : t)))
    const firstLogs = logProbabilities(read[prompt.length - 1]?.next, firsts)
    const first = new Map(firsts.map((t, i) => [t, firstLogs[i]!]))
    const scores: ContinuationScore[] = []
    for (const tokens of pieces) {
      signal?.throwIfAborted()
      if (tokens.length === 0) {
        scores.push({ sum: 0, mean: 0, tokens: 0 })
        continue
      }
      const start = this.sequence.nextTokenIndex
      const out = await this.sequence.controlledEvaluate(tokens.map((t, i) => (i < tokens.length - 1 ? asking(t, [tokens[i + 1]!]) : endTokens.length > 0 ? asking(t, endTokens) : t)))
      await this.sequence.eraseContextTokenRanges([{ start, end: this.sequence.nextTokenIndex }])
      let sum = first.get(tokens[0]!)!
      for (let i = 0; i < tokens.length - 1; i++) sum += logProbabilities(out[i]?.next, [tokens[i + 1]!])[0]!
      const end = endTokens.length > 0 ? logSumExp(logProbabilities(out[tokens.length - 1]?.next, endTokens)) : undefined
      scores.push({ sum, mean: sum / tokens.length, tokens: tokens.length, ...(end === undefined ? {} : { end }) })
    }
    return scores
  }

  /**
   * Greedy, as the trainer generated its held-out lines: BOS and the prefix, then for each forced
   * segment the segment and a generated line, ended by the first token holding a newline (or
   * maxTokens). A later segment reads the earlier lines as written. Calls take turns.
   * `signal` stops it at the decoder's next step (the token it writes, or the prompt it reads:
   * llama.cpp reads a batch whole) with the abort's reason thrown, never a line cut short; each
   * line is told to `onLine` as it is finished, with the lines so far. Every call starts on a
   * cleared context, so an aborted one leaves nothing behind for the next.
   */
  async lines(prefix: string, forced: readonly string[], maxTokens: number, signal?: AbortSignal, onLine?: (line: string, lines: readonly string[]) => void): Promise<string[]> {
    const run = this.turn.then(() => this.generate(prefix, forced, maxTokens, signal, onLine))
    this.turn = run.catch(() => undefined)
    return run
  }

  private async generate(prefix: string, forced: readonly string[], maxTokens: number, signal?: AbortSignal, onLine?: (line: string, lines: readonly string[]) => void): Promise<string[]> {
    const so: string[] = []
    const heard = onLine && ((generated: Token[]) => { so.push(this.model.detokenize(generated)); onLine(so.at(-1)!, [...so]) })
    return (await this.generateTokens(prefix, forced, maxTokens, signal, heard)).lines.map((l) => this.model.detokenize(l.generated))
  }

  /**
   * What `lines` writes, as tokens: BOS and the prefix, then per forced segment its tokens and the
   * tokens generated after it. Read in order, they are the whole sequence the model saw (a line's
   * last token is read as the next segment's first). Benchmarks compare two builds token by token
   * (bench/lm-device). Calls take turns.
   */
  async lineTokens(prefix: string, forced: readonly string[], maxTokens: number): Promise<{ prompt: Token[]; lines: { forced: Token[]; generated: Token[] }[] }> {
    const run = this.turn.then(() => this.generateTokens(prefix, forced, maxTokens))
    this.turn = run.catch(() => undefined)
    return run
  }

  private async generateTokens(prefix: string, forced: readonly string[], maxTokens: number, signal?: AbortSignal, onLine?: (generated: Token[]) => void): Promise<{ prompt: Token[]; lines: { forced: Token[]; generated: Token[] }[] }> {
    signal?.throwIfAborted()
    await this.sequence.clearHistory()
    const bos = this.model.tokens.bos
    const prompt = this.tokenize(prefix)
    let pending: Token[] = [...(bos === null ? [] : [bos]), ...prompt]
    const lines: { forced: Token[]; generated: Token[] }[] = []
    for (const segment of forced) {
      signal?.throwIfAborted()
      const tokens = this.tokenize(segment)
      const input = [...pending, ...tokens]
      const out = this.lookahead > 0 ? await this.lookupLine(input, prompt, maxTokens, signal) : await this.plainLine(input, maxTokens, signal)
      lines.push({ forced: tokens, generated: out })
      onLine?.(out)
      // The line's last token was sampled, not yet read: it leads the next segment's input.
      pending = out.slice(-1)
    }
    return { prompt: [...(bos === null ? [] : [bos]), ...prompt], lines }
  }

  /**
   * The raw logits of `asked` after `tokens`, read whole in one batch on an empty context, and the
   * greedy choice there: where two builds' greedy lines part, how far apart the two tokens were.
   * Calls take turns.
   */
  async nextLogits(tokens: readonly Token[], asked: readonly Token[]): Promise<{ top: Token; logits: number[] }> {
    const run = this.turn.then(async () => {
      if (tokens.length === 0) throw new Error('nextLogits: no tokens to condition on')
      await this.sequence.clearHistory()
      const read = await this.sequence.controlledEvaluate(tokens.map((t, i) => (i === tokens.length - 1 ? asking(t, asked) : t)))
      const next = read[tokens.length - 1]?.next
      if (next?.token == null || next.logits === undefined) throw new Error('llama.cpp gave no logits for the last position')
      return { top: next.token, logits: asked.map((t) => next.logits!.get(t) ?? Number.NaN) }
    })
    this.turn = run.catch(() => undefined)
    return run
  }

  detokenize(tokens: readonly Token[]): string {
    return this.model.detokenize(tokens)
  }

  /** Whether a generated token ends the line. */
  private ends(t: Token, length: number, maxTokens: number): boolean {
    return this.model.detokenize([t]).includes('\n') || length >= maxTokens || this.model.isEogToken(t)
  }

  /** One token a step. */
  private async plainLine(input: Token[], maxTokens: number, signal?: AbortSignal): Promise<Token[]> {
    const out: Token[] = []
    for await (const t of this.sequence.evaluate(input, { temperature: 0 })) {
      out.push(t)
      if (this.ends(t, out.length, maxTokens)) break
      signal?.throwIfAborted()
    }
    return out
  }

  /**
   * Prompt-lookup decoding: a rewrite mostly copies the prompt, so the tokens that followed the
   * line's last words in the prompt are read as a draft in one batch with the greedy choice after
   * each; the draft's tokens up to its first disagreement are kept, with the model's own token
   * there, and the rest erased from the context. A step is mostly reading the weights once, so a
   * short batch costs little more than one token. On the merged model the batch's logits were the
   * one-step logits bit for bit where checked, and the lines greedy's (on eval-300's longer prompts
   * some still differ, cause not found); with the adapter applied at run time they are not
   * (llama.cpp's batched LoRA products round differently: logits up to 0.6 apart), and the lines
   * differ where the model's top two are that close (BENCHMARKS.md, "QD latency").
   */
  private async lookupLine(input: Token[], source: readonly Token[], maxTokens: number, signal?: AbortSignal): Promise<Token[]> {
    const greedy = { generateNext: { token: true, options: { temperature: 0 } } }
    const first = await this.sequence.controlledEvaluate(input.map((t, i) => (i === input.length - 1 ? [t, greedy] : t)))
    let next = first[input.length - 1]?.next.token
    const out: Token[] = []
    while (next != null) {
      out.push(next)
      if (this.ends(next, out.length, maxTokens)) break
      signal?.throwIfAborted()
      const draft = lookupDraft(source, out, Math.min(this.lookahead, maxTokens - out.length))
      const batch = [next, ...draft]
      const read = await this.sequence.controlledEvaluate(batch.map((t) => [t, greedy]))
      // read[i] is the model's choice after batch[i]; draft[i] stands while it equals read[i].
      let kept = 0
      let ended = false
      while (kept < draft.length && read[kept]?.next.token === draft[kept]) {
        out.push(draft[kept]!)
        kept++
        if (this.ends(draft[kept - 1]!, out.length, maxTokens)) { ended = true; break }
      }
      // The draft past what was kept leaves the context, and so does a kept token that ended the
      // line: a line's last token is read as the next segment's first, as one token a step leaves it.
      const drop = draft.length - kept + (ended ? 1 : 0)
      if (drop > 0) {
        const end = this.sequence.nextTokenIndex
        await this.sequence.eraseContextTokenRanges([{ start: end - drop, end }])
      }
      if (ended) break
      next = read[kept]?.next.token
    }
    return out
  }

  async close(): Promise<void> {
    await this.turn
    this.forget()
    await this.context.dispose()
    await this.model.dispose()
    await this.llama.dispose()
  }
}
