// Postings are (doc delta, term frequency) pairs as LEB128 varints: small, and fast to decode.

export class VarintWriter {
  private buffer = Buffer.allocUnsafe(1024)
  private size = 0

  write(value: number): void {
    if (this.size + 5 > this.buffer.length) {
      const bigger = Buffer.allocUnsafe(this.buffer.length * 2)
      this.buffer.copy(bigger, 0, 0, this.size)
      this.buffer = bigger
    }
    while (value >= 0x80) {
      this.buffer[this.size++] = (value & 0x7f) | 0x80
      value >>>= 7
    }
    this.buffer[this.size++] = value
  }

  get length(): number {
    return this.size
  }

  take(): Buffer {
    const out = Buffer.from(this.buffer.subarray(0, this.size))
    this.size = 0
    return out
  }
}

/** Calls visit(doc, tf) for each posting of a block whose doc ids start after `base`. */
export function decodePostings(data: Uint8Array, base: number, visit: (doc: number, tf: number) => void): void {
  let doc = base
  let i = 0
  const n = data.length
  while (i < n) {
    let delta = 0
    let shift = 0
    let byte: number
    do {
      byte = data[i++]!
      delta |= (byte & 0x7f) << shift
      shift += 7
    } while (byte & 0x80)
    let tf = 0
    shift = 0
    do {
      byte = data[i++]!
      tf |= (byte & 0x7f) << shift
      shift += 7
    } while (byte & 0x80)
    doc += delta
    visit(doc, tf)
  }
}
