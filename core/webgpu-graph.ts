// The graph a WebGPU session serves for an int8 model. onnxruntime's WebGPU provider (1.30) has
// no kernel for the int8 operators of a dynamically quantized export (DynamicQuantizeLinear,
// MatMulInteger): left as they are, every matrix product of the shipped models ran on the CPU
// inside a "WebGPU" session (the e5 encoder: 127 of 801 nodes, all of its MatMulIntegers). Here
// each of them becomes float operators that compute the same numbers from the same int8 weights:
//   DynamicQuantizeLinear(x) -> scale = (max(0, max x) - min(0, min x)) / 255 (1 when that is 0),
//     zero point = round(clip(-min(0, min x) / scale, 0, 255)), q = clip(round(x / scale) + zp, 0, 255),
//     all in float, the rounding half to even as onnxruntime's (Round itself has no WebGPU kernel);
//   MatMulInteger(q, W, zp, Wzp) -> MatMul(q - zp, float(W) - float(Wzp)): the integers are exact in
//     float32 (|products| < 2^15, sums of 384 < 2^24), so the int32 result is the same number;
//   the Cast to float that follows it becomes an Identity.
// On the CPU the rewritten graph gives the int8 graph's outputs bit for bit (measured on the e5
// encoder, the extractive reader and the BART encoder and decoder). On a GPU its floats round
// otherwise, and an activation that then quantizes one step apart can grow through the layers, as
// on the CPU under another optimization level (BENCHMARKS.md, "Every model on a GPU API"). A graph
// of dequantized fp32 weights would round as steadily as fp32 e5 does there (within 4.5e-6), but
// would be another model than the one shipped and measured. The weights stay int8 in the file (the
// Cast of a constant is folded once when the session loads): the rewrite is the shipped one's size.
// It is made once per model (by its sha256) into models/device-graphs, as the QD adapter's merge is.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { PROJECT_ROOT } from './paths.js'
import { writeAtomic } from './write-atomic.js'
import { DataType, bytesField, floatScalar, intAttribute, readFields, readNode, text, writeNode, type Field, type Node } from './onnx-proto.js'

/** Where the rewritten graphs are kept (ignored by git, as the rest of models/). */
export const DEFAULT_DEVICE_GRAPHS_DIR = join(PROJECT_ROOT, 'models', 'device-graphs')

/** Bumped whenever the rewrite changes, so that a graph made by an older one is made again. */
const REWRITE_VERSION = 1

/**
 * Operators onnxruntime 1.30's WebGPU provider has no kernel for, among those an exported model
 * may hold (its placement log: "webgpu kernel not found in registries"); a node of these runs on
 * the CPU even in a WebGPU session.
 */
export const NO_WEBGPU_KERNEL: ReadonlySet<string> = new Set([
  'DynamicQuantizeLinear', 'MatMulInteger', 'ConvInteger', 'QLinearMatMul', 'QLinearConv', 'MatMulIntegerToFloat',
  'DynamicQuantizeMatMul', 'QLinearAdd', 'QLinearMul', 'QuantizeLinear', 'Round',
])

const C = { zero: 'webgpu_graph/0', one: 'webgpu_graph/1', two: 'webgpu_graph/2', half: 'webgpu_graph/0.5', top: 'webgpu_graph/255' }

const op = (opType: string, inputs: string[], outputs: string[], attributes: Buffer[] = []): Node => ({ inputs, outputs, name: `${outputs[0]}/node`, opType, domain: '', attributes })

/** round(v), half to even, for |v| < 2^22, in operators the WebGPU provider has. */
function roundHalfEven(v: string, out: string): Node[] {
  const p = `${out}/round`
  return [
    op('Add', [v, C.half], [`${p}/plus`]), op('Floor', [`${p}/plus`], [`${p}/up`]),
    // A tie (v = n + 0.5) rounds to the even one of n and n + 1.
    op('Sub', [`${p}/up`, v], [`${p}/gap`]), op('Equal', [`${p}/gap`, C.half], [`${p}/tie`]),
    op('Div', [`${p}/up`, C.two], [`${p}/halved`]), op('Floor', [`${p}/halved`], [`${p}/halvedDown`]), op('Mul', [`${p}/halvedDown`, C.two], [`${p}/even`]),
    op('Equal', [`${p}/even`, `${p}/up`], [`${p}/isEven`]), op('Not', [`${p}/isEven`], [`${p}/isOdd`]), op('And', [`${p}/tie`, `${p}/isOdd`], [`${p}/down`]),
    op('Sub', [`${p}/up`, C.one], [`${p}/less`]), op('Where', [`${p}/down`, `${p}/less`, `${p}/up`], [out]),
  ]
}

/** DynamicQuantizeLinear's three outputs, computed in float: q and zp are whole numbers 0…255. */
function dynamicQuantize(x: string, scale: string, p: string): Node[] {
  return [
    op('ReduceMin', [x], [`${p}/min`], [intAttribute('keepdims', 0)]), op('ReduceMax', [x], [`${p}/max`], [intAttribute('keepdims', 0)]),
    op('Min', [`${p}/min`, C.zero], [`${p}/min0`]), op('Max', [`${p}/max`, C.zero], [`${p}/max0`]),
    op('Sub', [`${p}/max0`, `${p}/min0`], [`${p}/range`]), op('Div', [`${p}/range`, C.top], [`${p}/step`]),
    op('Equal', [`${p}/range`, C.zero], [`${p}/flat`]), op('Where', [`${p}/flat`, C.one, `${p}/step`], [scale]),
    op('Div', [`${p}/min0`, scale], [`${p}/minSteps`]), op('Neg', [`${p}/minSteps`], [`${p}/zpRaw`]),
    op('Clip', [`${p}/zpRaw`, C.zero, C.top], [`${p}/zpClipped`]), ...roundHalfEven(`${p}/zpClipped`, `${p}/zp`),
    op('Div', [x, scale], [`${p}/steps`]), ...roundHalfEven(`${p}/steps`, `${p}/rounded`),
    op('Add', [`${p}/rounded`, `${p}/zp`], [`${p}/shifted`]), op('Clip', [`${p}/shifted`, C.zero, C.top], [`${p}/q`]),
    op('Sub', [`${p}/q`, `${p}/zp`], [`${p}/centred`]),
  ]
}

function intAttributeValue(node: Node, name: string): bigint | undefined {
  for (const a of node.attributes) {
    const fields = readFields(a)
    if (fields.some((f) => f.number === 1 && text(f) === name)) return fields.find((f) => f.number === 3)?.value as bigint | undefined
  }
  return undefined
}

/** Every name the nodes of a graph (and of its subgraphs) read. */
function namesRead(nodes: readonly Node[], into = new Set<string>()): Set<string> {
  for (const node of nodes) {
    for (const name of node.inputs) into.add(name)
    for (const a of node.attributes) for (const g of subgraphs(a)) namesRead(readFields(g).filter((f) => f.number === 1).map((f) => readNode(f.value as Buffer)), into)
  }
  return into
}

function subgraphs(attribute: Buffer): Buffer[] {
  return readFields(attribute).filter((f) => f.number === 6 || f.number === 11).map((f) => f.value as Buffer)
}

interface Counts { rewritten: number }

function rewriteAttribute(attribute: Buffer, counts: Counts): Buffer {
  const fields = readFields(attribute)
  if (!fields.some((f) => f.number === 6 || f.number === 11)) return attribute
  return Buffer.concat(fields.map((f) => (f.number === 6 || f.number === 11 ? bytesField(f.number, rewriteGraph(f.value as Buffer, counts)) : f.raw)))
}

function rewriteGraph(graph: Buffer, counts: Counts): Buffer {
  const fields = readFields(graph)
  const nodes = fields.filter((f) => f.number === 1).map((f) => readNode(f.value as Buffer))
  for (const node of nodes) node.attributes = node.attributes.map((a) => rewriteAttribute(a, counts))
  const quantized = new Map<string, { q: string; centred: string; zpName: string }>()
  for (const node of nodes) {
    if (node.domain === '' && node.opType === 'DynamicQuantizeLinear') {
      const p = `${node.outputs[0]}/webgpu`
      quantized.set(node.outputs[0]!, { q: `${p}/q`, centred: `${p}/centred`, zpName: node.outputs[2] ?? '' })
    }
  }
  // A MatMulInteger is rewritten when its left side comes from a DynamicQuantizeLinear with that
  // one's zero point (or none); anything else is left to onnxruntime as it is.
  const rewritable = (node: Node): boolean => node.domain === '' && node.opType === 'MatMulInteger' && quantized.has(node.inputs[0]!) &&
    (!node.inputs[2] || node.inputs[2] === quantized.get(node.inputs[0]!)!.zpName)
  const products = new Map<string, string>()
  for (const node of nodes) if (rewritable(node)) products.set(node.outputs[0]!, `${node.outputs[0]}/webgpu`)
  const castToFloat = (node: Node): boolean => node.domain === '' && node.opType === 'Cast' && products.has(node.inputs[0]!) && intAttributeValue(node, 'to') === BigInt(DataType.FLOAT)
  // The old outputs still read by something not rewritten (or by the graph's outputs) are made
  // again from the float ones, in their own types.
  const stillRead = namesRead(nodes.filter((n) => !rewritable(n) && !castToFloat(n)))
  for (const f of fields) if (f.number === 12) for (const g of readFields(f.value as Buffer)) if (g.number === 1) stillRead.add(text(g))

  const out: Node[] = []
  for (const node of nodes) {
    const q = node.opType === 'DynamicQuantizeLinear' && node.domain === '' ? quantized.get(node.outputs[0]!) : undefined
    if (q) {
      const p = `${node.outputs[0]}/webgpu`
      out.push(...dynamicQuantize(node.inputs[0]!, node.outputs[1]!, p))
      if (stillRead.has(node.outputs[0]!)) out.push(op('Cast', [q.q], [node.outputs[0]!], [intAttribute('to', DataType.UINT8)]))
      if (node.outputs[2] && stillRead.has(node.outputs[2])) out.push(op('Cast', [`${p}/zp`], [node.outputs[2]], [intAttribute('to', DataType.UINT8)]))
      counts.rewritten++
    } else if (rewritable(node)) {
      const from = quantized.get(node.inputs[0]!)!
      const left = node.inputs[2] ? from.centred : from.q
      const p = products.get(node.outputs[0]!)!
      let right = `${p}/weight`
      out.push(op('Cast', [node.inputs[1]!], [right], [intAttribute('to', DataType.FLOAT)]))
      if (node.inputs[3]) {
        out.push(op('Cast', [node.inputs[3]], [`${p}/weightZero`], [intAttribute('to', DataType.FLOAT)]), op('Sub', [right, `${p}/weightZero`], [`${p}/weightCentred`]))
        right = `${p}/weightCentred`
      }
      out.push(op('MatMul', [left, right], [p]))
      if (stillRead.has(node.outputs[0]!)) out.push(op('Cast', [p], [node.outputs[0]!], [intAttribute('to', DataType.INT32)]))
      counts.rewritten++
    } else if (castToFloat(node)) {
      out.push(op('Identity', [products.get(node.inputs[0]!)!], node.outputs))
    } else out.push(node)
  }
  return Buffer.concat([...out.map((n) => bytesField(1, writeNode(n))), ...fields.filter((f) => f.number !== 1).map((f) => f.raw)])
}

/** How many nodes of each operator a model holds, its subgraphs' included. */
export function operatorCounts(model: Buffer): Map<string, number> {
  const counts = new Map<string, number>()
  const walk = (graph: Buffer): void => {
    for (const f of readFields(graph)) {
      if (f.number !== 1) continue
      const node = readNode(f.value as Buffer)
      counts.set(node.opType, (counts.get(node.opType) ?? 0) + 1)
      for (const a of node.attributes) for (const g of subgraphs(a)) walk(g)
    }
  }
  walk(graphOf(model).value as Buffer)
  return counts
}

function graphOf(model: Buffer): Field {
  const graph = readFields(model).find((f) => f.number === 7)
  if (!graph) throw new Error('not an ONNX model (no graph)')
  return graph
}

/** The default-domain opset a model is exported at. */
function opsetOf(model: Buffer): number {
  for (const f of readFields(model)) {
    if (f.number !== 8) continue
    const fields = readFields(f.value as Buffer)
    const domain = fields.find((x) => x.number === 1)
    if (domain && text(domain) !== '' && text(domain) !== 'ai.onnx') continue
    return Number(fields.find((x) => x.number === 2)?.value ?? 0n)
  }
  return 0
}

/** The model with its int8 operators in float ones (null when it has none this rewrites). */
export function floatGraph(model: Buffer): { model: Buffer; rewritten: number } | null {
  const ops = operatorCounts(model)
  // Clip with min/max inputs, Round's semantics and float Equal: opset 11 on.
  if (!ops.has('DynamicQuantizeLinear') || opsetOf(model) < 11) return null
  const counts: Counts = { rewritten: 0 }
  const graph = graphOf(model)
  const rewritten = rewriteGraph(graph.value as Buffer, counts)
  if (counts.rewritten === 0) return null
  const constants = [[C.zero, 0], [C.one, 1], [C.two, 2], [C.half, 0.5], [C.top, 255]] as const
  const withConstants = Buffer.concat([rewritten, ...constants.map(([name, value]) => bytesField(5, floatScalar(name, value)))])
  const fields = readFields(model)
  return { model: Buffer.concat(fields.map((f) => (f === fields.find((x) => x.number === 7) ? bytesField(7, withConstants) : f.raw))), rewritten: counts.rewritten }
}

export interface WebgpuGraph {
  /** The file the WebGPU session loads: the model's own, or its float rewrite. */
  path: string
  /** Whether `path` is a float rewrite (made now or before) rather than the model itself. */
  rewritten: boolean
  /** Operators left that the WebGPU provider has no kernel for, with their counts. */
  unsupported: Map<string, number>
}

/** The graph to serve `path` with on WebGPU, made once into `cacheDir` when it needs a rewrite. */
export function webgpuGraph(path: string, cacheDir = DEFAULT_DEVICE_GRAPHS_DIR): WebgpuGraph {
  const model = readFileSync(path)
  const unsupportedIn = (m: Buffer): Map<string, number> => new Map([...operatorCounts(m)].filter(([o]) => NO_WEBGPU_KERNEL.has(o)))
  const left = unsupportedIn(model)
  if (left.size === 0) return { path, rewritten: false, unsupported: left }
  const hash = createHash('sha256').update(`webgpu-graph ${REWRITE_VERSION}\n`).update(model).digest('hex').slice(0, 16)
  const target = join(cacheDir, `${basename(dirname(path))}-${basename(path, '.onnx')}-${hash}.onnx`)
  if (existsSync(target)) return { path: target, rewritten: true, unsupported: unsupportedIn(readFileSync(target)) }
  const made = floatGraph(model)
  if (!made) return { path, rewritten: false, unsupported: left }
  mkdirSync(cacheDir, { recursive: true })
  writeAtomic(target, made.model)
  return { path: target, rewritten: true, unsupported: unsupportedIn(made.model) }
}

