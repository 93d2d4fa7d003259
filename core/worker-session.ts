// An onnxruntime session in a worker thread. onnxruntime-node's `run` computes synchronously on
// the calling thread (inside a setImmediate): a reader batch of 16 passages held the server's
// event loop for half a second, during which no request was accepted, refused or answered. In a
// worker the model computes while the main thread keeps serving; tensors cross as transferred
// buffers (a copy of the outputs, no copy of the inputs).
import { Worker } from 'node:worker_threads'
import ort from './onnx-runtime.js'
import { ERR_INTERNAL } from './errors.js'
import { silentLogger, type Logger } from './log.js'
import { recordModel } from './model-devices.js'
import { graphOptimizationOf, type RunDevice, type SessionOptions } from './onnx-session.js'

type TypedArray = Float32Array | BigInt64Array | Int32Array | Uint8Array | Int8Array | Float64Array
export interface WireTensor { type: string; data: TypedArray; dims: number[] }
export type ToWorker = { kind: 'run'; id: number; feeds: Record<string, WireTensor> } | { kind: 'release' }
export type FromWorker =
  | { kind: 'ready'; inputNames: string[]; outputNames: string[]; device: RunDevice; note: string }
  | { kind: 'failed'; message: string }
  | { kind: 'warning'; fields: object; message: string }
  | { kind: 'result'; id: number; outputs: Record<string, WireTensor> }
  | { kind: 'error'; id: number; message: string }

interface Pending { resolve: (outputs: Record<string, ort.Tensor>) => void; reject: (error: unknown) => void; done: Promise<unknown> }

/** The part of ort.InferenceSession the readers use, computed in a worker thread. */
export class WorkerSession {
  private readonly pending = new Map<number, Pending>()
  private next = 0
  private dead: Error | undefined
  private forget: () => void = () => {}

  private constructor(private readonly worker: Worker, readonly inputNames: readonly string[], readonly outputNames: readonly string[], private readonly path: string,
    /** Where the session runs (the CPU when a GPU provider asked for could not start). */
    readonly device: RunDevice) {
    worker.on('message', (message: FromWorker) => {
      if (message.kind !== 'result' && message.kind !== 'error') return
      const waiting = this.pending.get(message.id)
      this.pending.delete(message.id)
      if (message.kind === 'error') waiting?.reject(ERR_INTERNAL(`onnxruntime failed on ${this.path}: ${message.message}`))
      else waiting?.resolve(Object.fromEntries(Object.entries(message.outputs).map(([name, t]) => [name, new ort.Tensor(t.type as 'float32', t.data as Float32Array, t.dims)])))
    })
    const fail = (error: Error) => {
      this.dead ??= error
      for (const waiting of this.pending.values()) waiting.reject(ERR_INTERNAL(`the model worker for ${this.path} stopped: ${error.message}`))
      this.pending.clear()
    }
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`exit code ${code}`)))
  }

  /** Loads the model in a new worker; fails as createSession does (the same options, the GPU fallback included). */
  static async create(path: string, options: SessionOptions): Promise<WorkerSession> {
    const { logger, ...plain } = options
    const log: Logger = logger ?? silentLogger
    const worker = new Worker(new URL('./session-worker.js', import.meta.url), { workerData: { path, options: { ...plain, graphOptimization: graphOptimizationOf(plain) } } })
    const listeners: { message?: (m: FromWorker) => void; error?: (e: Error) => void; exit?: (code: number) => void } = {}
    const ready = await new Promise<{ inputNames: string[]; outputNames: string[]; device: RunDevice; note: string }>((resolve, reject) => {
      listeners.message = (message) => {
        if (message.kind === 'warning') log.warn(message.fields, message.message)
        else if (message.kind === 'ready') resolve(message)
        else if (message.kind === 'failed') reject(new Error(message.message))
      }
      listeners.error = reject
      listeners.exit = (code) => reject(new Error(`the model worker exited with code ${code} while loading ${path}`))
      worker.on('message', listeners.message).on('error', listeners.error).on('exit', listeners.exit)
    }).catch(async (error: unknown) => {
      await worker.terminate()
      throw error
    })
    // Only ours: the Worker's own listeners keep its port working.
    worker.off('message', listeners.message!).off('error', listeners.error!).off('exit', listeners.exit!)
    const session = new WorkerSession(worker, ready.inputNames, ready.outputNames, path, ready.device)
    session.forget = recordModel({ model: path, device: ready.device, ...(ready.note ? { note: ready.note } : {}) })
    return session
  }

  /** Runs the model on the feeds; their buffers are transferred to the worker (do not reuse them). */
  run(feeds: Record<string, ort.Tensor>): Promise<Record<string, ort.Tensor>> {
    if (this.dead) return Promise.reject(ERR_INTERNAL(`the model worker for ${this.path} stopped: ${this.dead.message}`))
    const id = this.next++
    const wire: Record<string, WireTensor> = {}
    for (const [name, tensor] of Object.entries(feeds)) wire[name] = { type: tensor.type, data: tensor.data as TypedArray, dims: [...tensor.dims] }
    let settle!: Pick<Pending, 'resolve' | 'reject'>
    const done = new Promise<Record<string, ort.Tensor>>((resolve, reject) => { settle = { resolve, reject } })
    this.pending.set(id, { ...settle, done: done.catch(() => undefined) })
    this.worker.postMessage({ kind: 'run', id, feeds: wire } satisfies ToWorker, Object.values(wire).map((t) => t.data.buffer as ArrayBuffer))
    return done
  }

  /**
   * Releases the session and ends the worker once the runs already sent are done (terminating a
   * worker inside onnxruntime's run aborts the whole process); runs asked for after this fail.
   */
  async release(): Promise<void> {
    if (this.dead) return
    this.dead = new Error('the session was released')
    this.forget()
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()))
    await Promise.allSettled([...this.pending.values()].map((p) => p.done))
    this.worker.postMessage({ kind: 'release' } satisfies ToWorker)
    await exited
  }
}
