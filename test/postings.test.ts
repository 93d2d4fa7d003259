// The posting format of retriever/postings.ts: what the segment builder writes, the BM25
// retriever reads back, whole or a skip block at a time.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { LENGTH_TABLE, lengthToNorm } from '../retriever/lucene-norms.js'
import { PostingCursor, readBlockMaxima, readSkipTable, SKIP_BLOCK, VarintWriter, writePostingList } from '../retriever/postings.js'

/** Interleaved (doc, tf) pairs above `base`, with gaps and frequencies of one to three varint bytes. */
function postings(n: number, base: number): number[] {
  const out: number[] = []
  let doc = base
  let seed = 7
  const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff
  for (let i = 0; i < n; i++) {
    doc += 1 + Math.floor(random() ** 4 * 40_000)
    out.push(doc, i % 97 === 0 ? 20_000 + i : 1 + Math.floor(random() * 200))
  }
  return out
}

function encode(list: number[], base: number): { data: Buffer; skips: Buffer | null } {
  const data = new VarintWriter()
  const skips = new VarintWriter()
  writePostingList(list, base, data, skips)
  const table = skips.take()
  // The store keeps no skip table (null) for a list of one block.
  return { data: data.take(), skips: table.length === 0 ? null : table }
}

function decode(data: Uint8Array, start: number, end: number, doc: number): number[] {
  const out: number[] = []
  const cursor = new PostingCursor().reset(data, start, end, doc)
  while (cursor.next()) out.push(cursor.doc, cursor.tf)
  return out
}

test('a posting list is (doc delta, tf) varint pairs from the segment base', () => {
  const { data, skips } = encode([5, 1, 300, 2], 0)
  // 300 - 5 = 295 = 0b10_0100111: low seven bits with the high bit set, then 2.
  assert.deepEqual([...data], [5, 1, 0xa7, 0x02, 2])
  assert.equal(skips, null)
  assert.deepEqual(decode(data, 0, data.length, 0), [5, 1, 300, 2])
})

test('round trip: a list of one block and a list of many decode to the postings written', () => {
  for (const [n, base] of [[1, 0], [SKIP_BLOCK, 999], [SKIP_BLOCK + 1, 0], [5 * SKIP_BLOCK + 17, 123_456]] as const) {
    const list = postings(n, base)
    const { data, skips } = encode(list, base)
    assert.deepEqual(decode(data, 0, data.length, base), list, `${n} postings, whole`)
    assert.equal(skips === null, n <= SKIP_BLOCK, `${n} postings: a skip table only past one block`)
    const last = list[list.length - 2]!
    const { lasts, ends } = readSkipTable(skips, base, last, data.length)
    assert.equal(lasts.length, Math.max(1, Math.ceil(n / SKIP_BLOCK)))
    assert.equal(ends.at(-1), data.length)
    assert.equal(lasts.at(-1), last)
    // Each block decodes on its own, from the previous block's last doc and end byte.
    const blocks = lasts.map((_, b) => decode(data, b === 0 ? 0 : ends[b - 1]!, ends[b]!, b === 0 ? base : lasts[b - 1]!))
    assert.deepEqual(blocks.flat(), list, `${n} postings, block by block`)
    blocks.forEach((block, b) => {
      assert.equal(block.length / 2, skips === null ? n : Math.min(SKIP_BLOCK, n - b * SKIP_BLOCK))
      assert.equal(block.at(-2), lasts[b])
    })
  }
})

test('one writer holds many lists back to back; each decodes from its own offsets', () => {
  const data = new VarintWriter()
  const skips = new VarintWriter()
  const lists = [postings(3, 10), postings(2 * SKIP_BLOCK, 10), postings(1, 10)]
  const offsets = [0]
  for (const list of lists) {
    writePostingList(list, 10, data, skips)
    offsets.push(data.length)
  }
  const bytes = data.take()
  lists.forEach((list, i) => assert.deepEqual(decode(bytes, offsets[i]!, offsets[i + 1]!, 10), list))
})

test('block impacts: per skip block, the best score over its postings for any k1 and b', () => {
  const base = 100
  const list = postings(5 * SKIP_BLOCK + 17, base)
  const last = list.at(-2)!
  // Lengths from 1 to a few thousand, one per doc: norms[doc - base - 1].
  const norms = Uint8Array.from({ length: last - base }, (_, i) => lengthToNorm(1 + ((i * 7919) % 3000)))
  const data = new VarintWriter()
  const skips = new VarintWriter()
  const impacts = new VarintWriter()
  writePostingList(list, base, data, skips, { norms, out: impacts })
  const bytes = data.take()
  const table = readSkipTable(skips.take(), base, last, bytes.length)
  const impactBytes = impacts.take()
  assert.equal(table.lasts.length, 6)
  for (const [k1, b] of [[0.9, 0.4], [1.2, 0.75], [0, 0], [3, 1]] as const) {
    const normCache = LENGTH_TABLE.map((length) => k1 * (1 - b + (b * length) / 1000))
    const weight = 2.5
    const maxima = new Float64Array(table.lasts.length)
    readBlockMaxima(impactBytes, weight, normCache, maxima, 0, table.lasts.length)
    table.lasts.forEach((_, blk) => {
      const block = decode(bytes, blk === 0 ? 0 : table.ends[blk - 1]!, table.ends[blk]!, blk === 0 ? base : table.lasts[blk - 1]!)
      let best = 0
      for (let i = 0; i < block.length; i += 2) best = Math.max(best, (weight * block[i + 1]!) / (block[i + 1]! + normCache[norms[block[i]! - base - 1]!]!))
      assert.ok(block.length > 0)
      assert.equal(maxima[blk], best, `block ${blk}, k1 ${k1}, b ${b}`)
    })
  }
})
