// Where each model this process holds runs (the ONNX sessions of core/onnx-session.ts and
// core/worker-session.ts, llama.cpp's models): `health` reports it, so that a model served on the
// CPU when a GPU was asked for is seen, not guessed.
import { relative, isAbsolute, basename, dirname, join } from 'node:path'
import { PROJECT_ROOT } from './paths.js'

export interface ModelDevice {
  /** The model file (or folder), as given. */
  model: string
  /** Where it runs: cpu, cuda, webgpu, vulkan. */
  device: string
  /** How, when it is not the file itself that runs there ("int8 operators as float"). */
  note?: string
}

const held = new Map<number, ModelDevice>()
let next = 0

/** Records a loaded model; the function returned forgets it (call it when the model is released). */
export function recordModel(entry: ModelDevice): () => void {
  const id = next++
  held.set(id, entry)
  return () => { held.delete(id) }
}

export function modelDevices(): ModelDevice[] {
  return [...held.values()]
}

/** A model's short name: its path inside the project, else its folder and file. */
export function modelName(path: string): string {
  const inside = relative(PROJECT_ROOT, path)
  return inside && !inside.startsWith('..') && !isAbsolute(inside) ? inside : join(basename(dirname(path)), basename(path))
}

/** "assets/models/extractive/model_quantized.onnx on webgpu (int8 operators as float), ..." (one entry per distinct line). */
export function describeModelDevices(): string {
  const lines = modelDevices().map((m) => `${modelName(m.model)} on ${m.device}${m.note ? ` (${m.note})` : ''}`)
  return [...new Set(lines)].join(', ')
}
