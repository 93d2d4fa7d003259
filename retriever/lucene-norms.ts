// Lucene 8 stores a field's length in one byte (SmallFloat.intToByte4) and BM25 reads it back
// through byte4ToInt. Doing the same makes our scores equal Lucene's, not merely close.

function longToInt4(i: number): number {
  const numBits = i === 0 ? 0 : Math.floor(Math.log2(i)) + 1
  if (numBits < 4) return i
  const shift = numBits - 4
  let encoded = Math.floor(i / 2 ** shift) & 0x07
  encoded |= (shift + 1) << 3
  return encoded
}

function int4ToLong(i: number): number {
  const bits = i & 0x07
  const shift = (i >>> 3) - 1
  return shift === -1 ? bits : (bits | 0x08) * 2 ** shift
}

const NUM_FREE_VALUES = 255 - longToInt4(2 ** 31 - 1)

export function lengthToNorm(length: number): number {
  if (length < NUM_FREE_VALUES) return length
  return NUM_FREE_VALUES + longToInt4(length - NUM_FREE_VALUES)
}

export function normToLength(norm: number): number {
  if (norm < NUM_FREE_VALUES) return norm
  return Math.min(NUM_FREE_VALUES + int4ToLong(norm - NUM_FREE_VALUES), 2 ** 31 - 1)
}

/** normToLength for every byte value, as Lucene's BM25Similarity.LENGTH_TABLE. */
export const LENGTH_TABLE: Float64Array = Float64Array.from({ length: 256 }, (_, norm) => normToLength(norm))
