// log_softmax over the vocabulary of every beam row, computed by onnxruntime instead of a JS loop:
// one Math.exp per token of a 30,523-token vocabulary, per row, per step was half of question
// disambiguation's main-thread time (a 22-row step: 21 ms in JS, 1.8 ms here). The graph is one
// LogSoftmax node (opset 13, axis -1, float32 as transformers computes it), written here as the
// ONNX protobuf it is, so no file ships for it.
import ort from '../../core/onnx-runtime.js'

/** Protobuf: a varint. */
function varint(value: bigint): number[] {
  let v = BigInt.asUintN(64, value)
  const out: number[] = []
  do {
    const byte = Number(v & 0x7fn)
    v >>= 7n
    out.push(v > 0n ? byte | 0x80 : byte)
  } while (v > 0n)
  return out
}

const text = (s: string) => [...new TextEncoder().encode(s)]
/** Protobuf: field `n` as a varint, or as length-delimited bytes. */
const int = (n: number, value: number) => [...varint(BigInt(n << 3)), ...varint(BigInt(value))]
const bytes = (n: number, body: number[]) => [...varint(BigInt((n << 3) | 2)), ...varint(BigInt(body.length)), ...body]

/** ValueInfoProto: a float tensor of shape [rows, vocab]. */
const floatMatrix = (name: string) => [...bytes(1, text(name)), ...bytes(2, bytes(1, [
  ...int(1, 1), // elem_type FLOAT
  ...bytes(2, [...bytes(1, bytes(2, text('rows'))), ...bytes(1, bytes(2, text('vocab')))]),
]))]

/** ModelProto { ir_version 8, opset 13, graph { LogSoftmax(scores, axis=-1) -> log_probs } }. */
export function logSoftmaxModel(): Uint8Array {
  const axis = [...bytes(1, text('axis')), ...int(3, -1), ...int(20, 2)] // AttributeProto: i, type INT
  const node = [...bytes(1, text('scores')), ...bytes(2, text('log_probs')), ...bytes(4, text('LogSoftmax')), ...bytes(5, axis)]
  const graph = [...bytes(1, node), ...bytes(2, text('log_softmax')), ...bytes(11, floatMatrix('scores')), ...bytes(12, floatMatrix('log_probs'))]
  return Uint8Array.from([...int(1, 8), ...bytes(7, graph), ...bytes(8, [...bytes(1, []), ...int(2, 13)])])
}

export class LogSoftmaxSession {
  private constructor(private readonly session: ort.InferenceSession) {}

  static async create(threads: number): Promise<LogSoftmaxSession> {
    return new LogSoftmaxSession(await ort.InferenceSession.create(logSoftmaxModel(), { intraOpNumThreads: threads, interOpNumThreads: 1, executionProviders: ['cpu'] }))
  }

  /** log_softmax of each of the `rows` rows of `scores` (rows × vocab). */
  async run(scores: Float32Array, rows: number): Promise<Float32Array> {
    const out = await this.session.run({ scores: new ort.Tensor('float32', scores, [rows, scores.length / rows]) })
    return out.log_probs!.data as Float32Array
  }

  async release(): Promise<void> {
    await this.session.release()
  }
}
