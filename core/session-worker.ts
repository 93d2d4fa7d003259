// The worker side of WorkerSession (worker-session.ts): one onnxruntime session, run on request;
// a release message, after the runs sent before it, ends it.
// onnxruntime-node runs a session synchronously on the thread that calls it, so here it blocks
// only this worker, never the server's event loop.
import { parentPort, workerData } from 'node:worker_threads'
import ort from './onnx-runtime.js'
import type { Logger } from './log.js'
import { createSession, deviceNoteOf, deviceOf, type SessionOptions } from './onnx-session.js'
import type { FromWorker, ToWorker, WireTensor } from './worker-session.js'

const { path, options } = workerData as { path: string; options: Omit<SessionOptions, 'logger'> }
const port = parentPort!
const post = (message: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer)

try {
  // createSession warns once (a GPU provider asked for and not usable): the warning goes to the main
  // thread's logger, the only part of a logger it uses.
  const logger = { warn: (fields: object, message: string) => post({ kind: 'warning', fields, message }) } as unknown as Logger
  const session = await createSession(path, { ...options, logger })
  port.on('message', async (message: ToWorker) => {
    if (message.kind === 'release') {
      // The main thread sends it once every run it sent has come back: nothing is cut short.
      await session.release()
      process.exit(0)
    }
    try {
      const feeds = Object.fromEntries(Object.entries(message.feeds).map(([name, t]) => [name, new ort.Tensor(t.type as 'float32', t.data as Float32Array, t.dims)]))
      const result = await session.run(feeds)
      // Copies: onnxruntime's output buffers are its own, not ours to transfer.
      const outputs: Record<string, WireTensor> = {}
      for (const [name, tensor] of Object.entries(result)) outputs[name] = { type: tensor.type, data: (tensor.data as Float32Array).slice(), dims: [...tensor.dims] }
      post({ kind: 'result', id: message.id, outputs }, Object.values(outputs).map((t) => t.data.buffer as ArrayBuffer))
    } catch (error) {
      post({ kind: 'error', id: message.id, message: error instanceof Error ? error.message : String(error) })
    }
  })
  post({ kind: 'ready', inputNames: [...session.inputNames], outputNames: [...session.outputNames], device: deviceOf(session), note: deviceNoteOf(session) })
} catch (error) {
  post({ kind: 'failed', message: error instanceof Error ? error.message : String(error) })
}
