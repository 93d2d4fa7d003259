// Creating onnxruntime sessions: the CPU by default; `cuda` (onnxruntime's CUDA provider, which
// needs libonnxruntime_providers_cuda.so beside libonnxruntime.so.1: scripts/gpu-runtime),
// `webgpu` (the WebGPU provider the official Linux binary holds, through Dawn's Vulkan backend:
// needs a Vulkan driver, a GPU's or the software one of scripts/software-gpu) or `auto` (CUDA,
// then WebGPU, then the CPU). A provider that cannot start falls back to the CPU with one warning
// per process, never a crash. On WebGPU an int8 model is served as its float rewrite
// (core/webgpu-graph.ts), since the provider has no int8 kernels; a model that still holds
// operators without a WebGPU kernel is named in one warning (onnxruntime would run those nodes on
// the CPU inside the WebGPU session, and say only "Some nodes were not assigned").
import ort from './onnx-runtime.js'
import type { Device } from './kinds.js'
import type { Logger } from './log.js'
import { silentLogger } from './log.js'
import { modelName, recordModel } from './model-devices.js'
import { bytesField, varintField } from './onnx-proto.js'
import { webgpuGraph } from './webgpu-graph.js'

export { DEVICES, type Device } from './kinds.js'
/** Where a session actually runs. */
export type RunDevice = Exclude<Device, 'auto'>

export interface SessionOptions {
  device: Device
  /** Threads inside one operator; 0 lets onnxruntime choose. */
  threads: number
  graphOptimization: 'disabled' | 'basic' | 'extended' | 'all'
  logger?: Logger
  /**
   * A file prefix: onnxruntime profiles the session's runs, each node with the provider that ran
   * it, until endProfiling writes <prefix>_<date>.json (core/onnx-placement.ts reads it).
   */
  profile?: string
}

export const defaultSessionOptions: SessionOptions = { device: 'cpu', threads: 2, graphOptimization: 'all' }

// bench/device-infer's rounding peer: the same models on the CPU with onnxruntime's graph
// optimization at another level, which rounds differently (fused kernels); every session made in
// this process after it (worker sessions included) uses that level.
let optimizationOverride: SessionOptions['graphOptimization'] | undefined
export function overrideGraphOptimization(level: SessionOptions['graphOptimization'] | undefined): void {
  optimizationOverride = level
}
export const graphOptimizationOf = (options: Pick<SessionOptions, 'graphOptimization'>): SessionOptions['graphOptimization'] => optimizationOverride ?? options.graphOptimization

/** The GPU providers a device asks for, in the order they are tried. */
export function gpuProviders(device: Device): Exclude<RunDevice, 'cpu'>[] {
  return device === 'auto' ? ['cuda', 'webgpu'] : device === 'cpu' ? [] : [device]
}

const HINT: Record<Exclude<RunDevice, 'cpu'>, string> = {
  cuda: 'it needs an NVIDIA GPU and onnxruntime-gpu\'s libonnxruntime_providers_cuda.so beside onnxruntime-node\'s libonnxruntime.so.1 (scripts/gpu-runtime packs them)',
  webgpu: 'it needs a Vulkan driver: a GPU\'s, or the software one eval "$(scripts/software-gpu env)" selects',
}

/** ModelProto { opset 13, graph { Relu(x: float[1]) -> y } }: what a provider is tried on first. */
function probeModel(): Uint8Array {
  const scalar = (name: string) => Buffer.concat([bytesField(1, name), bytesField(2, bytesField(1, Buffer.concat([varintField(1, 1), bytesField(2, bytesField(1, varintField(1, 1)))])))])
  const node = Buffer.concat([bytesField(1, 'x'), bytesField(2, 'y'), bytesField(4, 'Relu')])
  const graph = Buffer.concat([bytesField(1, node), bytesField(2, 'probe'), bytesField(11, scalar('x')), bytesField(12, scalar('y'))])
  return Buffer.concat([varintField(1, 8), bytesField(7, graph), bytesField(8, Buffer.concat([bytesField(1, ''), varintField(2, 13)]))])
}

// Whether a provider starts, tried once per process (thread) on a one-node model, so that a model
// is not prepared for a device that is not there (the WebGPU rewrite is made only where it runs).
const starts = new Map<string, Promise<string | undefined>>()
/** Why a GPU provider cannot start here (onnxruntime's message), or undefined when it starts. */
export function deviceProblem(provider: Exclude<RunDevice, 'cpu'>): Promise<string | undefined> {
  let known = starts.get(provider)
  if (!known) {
    known = ort.InferenceSession.create(probeModel(), { executionProviders: [provider] })
      .then(async (session) => { await session.release(); return undefined }, (error: unknown) => (error as Error).message)
    starts.set(provider, known)
  }
  return known
}

// After one failure a provider is not tried again: the other files of the model would fail the same way.
const failed = new Set<string>()
const warnedModels = new Set<string>()
const sessionDevices = new WeakMap<ort.InferenceSession, RunDevice>()
const sessionNotes = new WeakMap<ort.InferenceSession, string>()

/** Where a session made by createSession runs. */
export const deviceOf = (session: ort.InferenceSession): RunDevice => sessionDevices.get(session) ?? 'cpu'
/** How it runs there, when not as the file itself ("int8 operators as float"); empty otherwise. */
export const deviceNoteOf = (session: ort.InferenceSession): string => sessionNotes.get(session) ?? ''

/** The session, recorded (for `health`) until it is released. */
function held(session: ort.InferenceSession, path: string, device: RunDevice, note: string): ort.InferenceSession {
  sessionDevices.set(session, device)
  if (note) sessionNotes.set(session, note)
  const forget = recordModel({ model: path, device, ...(note ? { note } : {}) })
  const release = session.release.bind(session)
  session.release = async () => { forget(); await release() }
  return session
}

export async function createSession(path: string, options: SessionOptions): Promise<ort.InferenceSession> {
  const base: ort.InferenceSession.SessionOptions = {
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: graphOptimizationOf(options),
    ...(options.profile ? { enableProfiling: true, profileFilePrefix: options.profile } : {}),
  }
  const logger = options.logger ?? silentLogger
  for (const provider of gpuProviders(options.device)) {
    if (failed.has(provider)) continue
    let problem = await deviceProblem(provider)
    if (problem === undefined) {
      try {
        let file = path
        let note = ''
        if (provider === 'webgpu') {
          const graph = webgpuGraph(path)
          file = graph.path
          if (graph.rewritten) note = 'int8 operators as float'
          if (graph.unsupported.size > 0) {
            const ops = [...graph.unsupported].map(([o, n]) => `${o} ×${n}`).join(', ')
            note = [note, `${ops} on the CPU`].filter(Boolean).join('; ')
            if (!warnedModels.has(path)) logger.warn({ model: path, device: provider, ops: Object.fromEntries(graph.unsupported) }, `model ${modelName(path)}: ${ops} have no WebGPU kernel; those nodes run on the CPU inside its WebGPU session`)
            warnedModels.add(path)
          }
        }
        const session = await ort.InferenceSession.create(file, { ...base, executionProviders: [provider] })
        return held(session, path, provider, note)
      } catch (error) {
        problem = (error as Error).message
      }
    }
    failed.add(provider)
    logger.warn({ err: problem, device: options.device, model: path }, `device ${provider} is not usable here (${HINT[provider]}); ${options.device === 'auto' && provider === 'cuda' ? 'trying webgpu, then the CPU' : 'running the model on the CPU'}, as every later model of this process. First met loading ${modelName(path)}. Set reader.device (or --device) to cpu to silence this`)
  }
  const session = await ort.InferenceSession.create(path, { ...base, executionProviders: ['cpu'] })
  return held(session, path, 'cpu', '')
}
