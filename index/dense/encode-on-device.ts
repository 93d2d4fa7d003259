// `ambigqa index encode --device cuda` (issue 26): the store's passages encoded by the PyTorch
// rebuild of the same sentence encoder (train/ambigqa_train/encode_passages.py), on a GPU, into the
// same dense_vectors table in the same layout as store-vectors.ts writes (and resumed by
// either). onnxruntime-node has no GPU path here, and 21M passages take days on a CPU. This side
// checks the store and the encoder, and holds the store's build lock while Python writes.
import { AmbigqaError, ERR_USAGE } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import { encoderDir } from '../../retriever/dense-encoder.js'
import { PassageStore } from '../../retriever/passage-store.js'
import { runPythonLines } from '../../core/python-process.js'

/** Where `index encode` encodes: cpu is onnxruntime-node (store-vectors.ts); cuda is PyTorch. */
export const ENCODE_DEVICES = ['cpu', 'cuda'] as const
export type EncodeDevice = (typeof ENCODE_DEVICES)[number]

export interface PythonEncodeOptions {
  store: string
  model: string
  modelsDir: string
  batchSize: number
  /** cuda for the CLI; cpu runs the same PyTorch path on the CPU (its test, and a measurement). */
  device: EncodeDevice
  threads?: number
  /** Passages per committed chunk (store-vectors.ts's default). */
  chunkSize?: number
  log: Logger
}

export function parseEncodeDevice(device: string): EncodeDevice {
  if (!(ENCODE_DEVICES as readonly string[]).includes(device)) throw ERR_USAGE(`--device ${device} is not a device`, 'Give cpu (onnxruntime, the default) or cuda (PyTorch in .venv-train, on an NVIDIA GPU)')
  return device as EncodeDevice
}

export async function encodeStoreInPython(options: PythonEncodeOptions): Promise<{ encoded: number; seconds: number }> {
  encoderDir(options.model, options.modelsDir)
  // Checks the store is ready, creates the table and takes the build lock; held until Python is done.
  const store = PassageStore.openForUpdate(options.store)
  const errors: string[] = []
  let done: { encoded: number; seconds: number } | undefined
  try {
    const args = ['--store', store.dir, '--model', options.model, '--models-dir', options.modelsDir, '--batch-size', String(options.batchSize),
      '--device', options.device, '--threads', String(options.threads ?? 2), '--chunk-size', String(options.chunkSize ?? 1024)]
    await runPythonLines('encode_passages', args, (line) => {
      if (!line.startsWith('{')) return options.log.info({ line }, 'encode')
      const event = JSON.parse(line) as { done?: { encoded: number; seconds: number } } & Record<string, unknown>
      if (event.done) done = { encoded: event.done.encoded, seconds: event.done.seconds }
      else options.log.info(event, `encoding with ${options.model} on ${options.device}`)
    }, { onError: (line) => { if (line.trim()) errors.push(line) } })
  } catch (err) {
    // Python says why it stopped on its last line of standard error (a SystemExit message, or a
    // traceback's last line): that, rather than an exit code, is what the user needs.
    const why = errors.at(-1)
    if (err instanceof AmbigqaError && why !== undefined) {
      throw ERR_USAGE.withCause(err, `index encode --device ${options.device} stopped: ${why}`, 'Run it where PyTorch sees the device (cuda: an NVIDIA GPU with the CUDA build of torch), or use --device cpu for onnxruntime')
    }
    throw err
  } finally {
    store.close()
  }
  if (!done) throw ERR_USAGE(`index encode --device ${options.device}: the encoder ended without its summary line`, 'Run it again: it resumes at the first chunk not written')
  return done
}
