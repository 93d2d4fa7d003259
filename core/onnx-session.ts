// Creating onnxruntime sessions for the reader: CPU by default; `cuda` asks for the CUDA provider
// and falls back to the CPU with one warning when the machine has no usable GPU, never a crash.
import ort from './onnx-runtime.js'
import type { Logger } from './log.js'
import { silentLogger } from './log.js'

export type Device = 'cpu' | 'cuda'

export interface SessionOptions {
  device: Device
  /** Threads inside one operator; 0 lets onnxruntime choose. */
  threads: number
  graphOptimization: 'disabled' | 'basic' | 'extended' | 'all'
  logger?: Logger
}

export const defaultSessionOptions: SessionOptions = { device: 'cpu', threads: 2, graphOptimization: 'all' }

const failedDevices = new Set<string>()

export async function createSession(path: string, options: SessionOptions): Promise<ort.InferenceSession> {
  const base: ort.InferenceSession.SessionOptions = {
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: options.graphOptimization,
  }
  // After one failure the CPU is used straight away: the other files of the model would fail the same way.
  if (options.device === 'cuda' && !failedDevices.has('cuda')) {
    try {
      return await ort.InferenceSession.create(path, { ...base, executionProviders: ['cuda'] })
    } catch (error) {
      failedDevices.add('cuda')
      const logger = options.logger ?? silentLogger
      logger.warn({ err: (error as Error).message }, 'device cuda is not usable here; running the model on the CPU. On a CUDA 12 machine, reinstall onnxruntime-node without ONNXRUNTIME_NODE_INSTALL=skip so it fetches the CUDA libraries; otherwise set reader.device (or reranker.device) to cpu')
    }
  }
  return ort.InferenceSession.create(path, { ...base, executionProviders: ['cpu'] })
}
