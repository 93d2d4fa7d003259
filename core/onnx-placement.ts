// Which provider ran each node of a model: one run of a session made as createSession makes it
// (the WebGPU rewrite included), profiled by onnxruntime, whose profile names the provider of every
// node it ran. What the tests and BENCHMARKS.md's device table read, so that a model whose nodes
// quietly run on the CPU inside a GPU session is seen.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type ort from './onnx-runtime.js'
import { createSession, deviceOf, type RunDevice, type SessionOptions } from './onnx-session.js'

export interface NodeRun {
  /** The node's name in the session's graph (after onnxruntime's fusions). */
  node: string
  op: string
  /** Where it ran: cpu, cuda, webgpu (onnxruntime's CPUExecutionProvider and so on). */
  device: string
  /** The element types of its inputs and outputs (float, int64, bool...). */
  types: string[]
  /** Elements of the largest float tensor it read or wrote (0 when it touched none). */
  floatElements: number
}

export interface Placement {
  device: RunDevice
  /** The outputs of each run, in order. */
  outputs: Record<string, ort.Tensor>[]
  nodes: NodeRun[]
}

/** The feeds of one run, from the outputs of the run before it (undefined for the first) and the session's input names. */
export type Step = (previous: Record<string, ort.Tensor> | undefined, inputNames: readonly string[]) => Record<string, ort.Tensor>

const PROVIDERS: Record<string, string> = { CPUExecutionProvider: 'cpu', WebGpuExecutionProvider: 'webgpu', CUDAExecutionProvider: 'cuda' }

interface ProfileEvent { cat?: string; name?: string; args?: { op_name?: string; provider?: string; input_type_shape?: Record<string, number[]>[]; output_type_shape?: Record<string, number[]>[] } }

/** The nodes of one profiled run, from onnxruntime's profile (a JSON list of trace events). */
export function nodeRuns(events: readonly ProfileEvent[]): NodeRun[] {
  const runs: NodeRun[] = []
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name?.endsWith('_kernel_time') || !e.args?.provider) continue
    const tensors = [...(e.args.input_type_shape ?? []), ...(e.args.output_type_shape ?? [])].flatMap((t) => Object.entries(t))
    const floatElements = Math.max(0, ...tensors.filter(([type]) => type === 'float').map(([, dims]) => dims.reduce((a, b) => a * b, 1)))
    runs.push({ node: e.name.slice(0, -'_kernel_time'.length), op: e.args.op_name ?? '', device: PROVIDERS[e.args.provider] ?? e.args.provider, types: [...new Set(tensors.map(([type]) => type))], floatElements })
  }
  return runs
}

/**
 * Runs `path` as createSession serves it, once per step (a decoder's first step, then a step with
 * its cache), and says where each node ran.
 */
export async function placement(path: string, options: SessionOptions, steps: readonly Step[]): Promise<Placement> {
  const dir = mkdtempSync(join(tmpdir(), 'onnx-placement-'))
  try {
    const session = await createSession(path, { ...options, profile: join(dir, 'run') })
    try {
      const outputs: Record<string, ort.Tensor>[] = []
      for (const step of steps) outputs.push(await session.run(step(outputs.at(-1), session.inputNames)))
      session.endProfiling()
      const file = readdirSync(dir).find((f) => f.endsWith('.json'))
      if (!file) throw new Error(`onnxruntime wrote no profile for ${path}`)
      return { device: deviceOf(session), outputs, nodes: nodeRuns(JSON.parse(readFileSync(join(dir, file), 'utf8')) as ProfileEvent[]) }
    } finally {
      await session.release()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Nodes per device: { webgpu: 2378, cpu: 7 }. */
export function nodesPerDevice(nodes: readonly NodeRun[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const n of nodes) counts[n.device] = (counts[n.device] ?? 0) + 1
  return counts
}
