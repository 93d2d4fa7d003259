// Just enough of protobuf to rewrite an ONNX graph's nodes: a message is read as its list of
// fields, each kept as the bytes it was read from, so that whatever is not rewritten (weights,
// metadata, fields this reader does not know) is written back byte for byte. ONNX's schema:
// onnx/onnx.proto (ModelProto.graph = 7; GraphProto.node = 1, initializer = 5, output = 12,
// value_info = 13; NodeProto input = 1, output = 2, name = 3, op_type = 4, attribute = 5,
// domain = 7; AttributeProto name = 1, i = 3, g = 6, graphs = 11, type = 20; TensorProto
// dims = 1, data_type = 2, name = 8, raw_data = 9; ValueInfoProto name = 1).

export interface Field {
  number: number
  /** 0 varint, 1 fixed 64-bit, 2 length-delimited, 5 fixed 32-bit. */
  wire: number
  /** The field's payload: a varint's value, or a length-delimited field's bytes (a view). */
  value: bigint | Buffer
  /** The whole field as read (tag included), written back as it is unless replaced. */
  raw: Buffer
}

function readVarint(buf: Buffer, at: number): [bigint, number] {
  let result = 0n
  let shift = 0n
  for (;;) {
    if (at >= buf.length) throw new RangeError('a protobuf varint runs past the end of the message')
    const byte = buf[at++]!
    result |= BigInt(byte & 0x7f) << shift
    if ((byte & 0x80) === 0) return [result, at]
    shift += 7n
    if (shift > 70n) throw new RangeError('a protobuf varint is longer than 10 bytes')
  }
}

export function readFields(buf: Buffer): Field[] {
  const fields: Field[] = []
  let at = 0
  while (at < buf.length) {
    const start = at
    const [tag, afterTag] = readVarint(buf, at)
    at = afterTag
    const number = Number(tag >> 3n)
    const wire = Number(tag & 7n)
    let value: bigint | Buffer
    if (wire === 0) [value, at] = readVarint(buf, at)
    else if (wire === 1) { value = buf.subarray(at, at + 8); at += 8 }
    else if (wire === 5) { value = buf.subarray(at, at + 4); at += 4 }
    else if (wire === 2) {
      const [length, afterLength] = readVarint(buf, at)
      at = afterLength + Number(length)
      if (at > buf.length) throw new RangeError(`protobuf field ${number} runs past the end of the message`)
      value = buf.subarray(afterLength, at)
    } else throw new RangeError(`protobuf wire type ${wire} (field ${number}) is not one ONNX uses`)
    fields.push({ number, wire, value, raw: buf.subarray(start, at) })
  }
  return fields
}

function varint(value: bigint | number): Buffer {
  let v = BigInt(value)
  if (v < 0n) v += 1n << 64n
  const bytes: number[] = []
  do {
    let byte = Number(v & 0x7fn)
    v >>= 7n
    if (v > 0n) byte |= 0x80
    bytes.push(byte)
  } while (v > 0n)
  return Buffer.from(bytes)
}

export function bytesField(number: number, payload: Buffer | string): Buffer {
  const data = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload
  return Buffer.concat([varint((number << 3) | 2), varint(data.length), data])
}

export function varintField(number: number, value: bigint | number): Buffer {
  return Buffer.concat([varint(number << 3), varint(value)])
}

export const text = (field: Field): string => (field.value as Buffer).toString('utf8')

/** ONNX TensorProto.DataType values used here. */
export const DataType = { FLOAT: 1, UINT8: 2, INT8: 3, INT32: 6, INT64: 7, BOOL: 9 } as const

export interface Node {
  inputs: string[]
  outputs: string[]
  name: string
  opType: string
  domain: string
  /** The attributes as read (or made), each a whole AttributeProto. */
  attributes: Buffer[]
}

export function readNode(buf: Buffer): Node {
  const node: Node = { inputs: [], outputs: [], name: '', opType: '', domain: '', attributes: [] }
  for (const f of readFields(buf)) {
    if (f.number === 1) node.inputs.push(text(f))
    else if (f.number === 2) node.outputs.push(text(f))
    else if (f.number === 3) node.name = text(f)
    else if (f.number === 4) node.opType = text(f)
    else if (f.number === 5) node.attributes.push(f.value as Buffer)
    else if (f.number === 7) node.domain = text(f)
  }
  return node
}

export function writeNode(node: Node): Buffer {
  return Buffer.concat([
    ...node.inputs.map((n) => bytesField(1, n)),
    ...node.outputs.map((n) => bytesField(2, n)),
    ...(node.name ? [bytesField(3, node.name)] : []),
    bytesField(4, node.opType),
    ...node.attributes.map((a) => bytesField(5, a)),
    ...(node.domain ? [bytesField(7, node.domain)] : []),
  ])
}

/** An integer attribute (AttributeProto type INT = 2). */
export const intAttribute = (name: string, value: number): Buffer => Buffer.concat([bytesField(1, name), varintField(3, value), varintField(20, 2)])

/** A float scalar initializer (TensorProto with no dims, raw little-endian data). */
export function floatScalar(name: string, value: number): Buffer {
  const raw = Buffer.alloc(4)
  raw.writeFloatLE(value)
  return Buffer.concat([varintField(2, DataType.FLOAT), bytesField(8, name), bytesField(9, raw)])
}
