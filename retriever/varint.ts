// Postings are (doc delta, term frequency) pairs as LEB128 varints: small, and fast to decode
// (the decoder is inlined in the BM25 retriever's scoring loop).

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
