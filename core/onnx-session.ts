// Creating onnxruntime sessions: the CPU by default; `cuda` (onnxruntime's CUDA provider, which
// needs libonnxruntime_providers_cuda.so beside libonnxruntime.so.1: scripts/gpu-runtime),
// `webgpu` (the WebGPU provider the official Linux binary holds, through Dawn's Vulkan backend:
// needs a GPU's Vulkan driver) or `auto` (CUDA, then WebGPU, then the CPU). A provider that cannot
// start falls back to the CPU with one warning per process, never a crash. Operators a provider
// lacks (int8 ones, often) run on the CPU inside the same session: onnxruntime says so in a
// warning of its own ("Some nodes were not assigned to the preferred execution providers").
import ort from './onnx-runtime.js'
import type { Device } from './kinds.js'
import type { Logger } from './log.js'
import { silentLogger } from './log.js'

export { DEVICES, type Device } from './kinds.js'
/** Where a session actually runs. */
export type RunDevice = Exclude<Device, 'auto'>

export interface SessionOptions {
  device: Device
  /** Threads inside one operator; 0 lets onnxruntime choose. */
  threads: number
  graphOptimization: 'disabled' | 'basic' | 'extended' | 'all'
  logger?: Logger
}

export const defaultSessionOptions: SessionOptions = { device: 'cpu', threads: 2, graphOptimization: 'all' }

/** The GPU providers a device asks for, in the order they are tried. */
export function gpuProviders(device: Device): Exclude<RunDevice, 'cpu'>[] {
  return device === 'auto' ? ['cuda', 'webgpu'] : device === 'cpu' ? [] : [device]
}

const HINT: Record<Exclude<RunDevice, 'cpu'>, string> = {
  cuda: 'it needs an NVIDIA GPU and onnxruntime-gpu\'s libonnxruntime_providers_cuda.so beside onnxruntime-node\'s libonnxruntime.so.1 (scripts/gpu-runtime packs them)',
  webgpu: 'it needs a GPU with a Vulkan driver and libvulkan1',
}

// After one failure a provider is not tried again: the other files of the model would fail the same way.
const failed = new Set<string>()
const sessionDevices = new WeakMap<ort.InferenceSession, RunDevice>()

/** Where a session made by createSession runs. */
export const deviceOf = (session: ort.InferenceSession): RunDevice => sessionDevices.get(session) ?? 'cpu'

export async function createSession(path: string, options: SessionOptions): Promise<ort.InferenceSession> {
  const base: ort.InferenceSession.SessionOptions = {
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: options.graphOptimization,
  }
  const logger = options.logger ?? silentLogger
  for (const provider of gpuProviders(options.device)) {
    if (failed.has(provider)) continue
    try {
      const session = await ort.InferenceSession.create(path, { ...base, executionProviders: [provider] })
      sessionDevices.set(session, provider)
      return session
    } catch (error) {
      failed.add(provider)
      logger.warn({ err: (error as Error).message, device: options.device }, `device ${provider} is not usable here (${HINT[provider]}); ${options.device === 'auto' && provider === 'cuda' ? 'trying webgpu, then the CPU' : 'running the model on the CPU'}. Set reader.device (or --device) to cpu to silence this`)
    }
  }
  const session = await ort.InferenceSession.create(path, { ...base, executionProviders: ['cpu'] })
  sessionDevices.set(session, 'cpu')
  return session
}
