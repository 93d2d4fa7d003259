// Writing dense vectors into a store (table dense_vectors): chunks of consecutive passages, each
// committed with its vectors in one transaction, so a large store resumes at the first chunk it
// has not written. Where the vectors come from is the caller's: the encoder (`index encode`), or
// vectors made elsewhere and copied in (bench/ann-scale's synthetic ones). The PyTorch encoder
// (`--device cuda`, train/ambigqa_train/encode_passages.py) writes the same table the same way.
import type { Logger } from '../../core/log.js'
import { Progress } from '../../core/progress.js'
import { DenseEncoder, passageText } from '../../retriever/dense-encoder.js'
import { PassageStore } from '../../retriever/passage-store.js'

export interface StoredPassage { rowid: number; id: string; title: string; text: string }
/** Vectors for passages, one per passage in the order given; `done` reports passages finished within the chunk. */
export type VectorSource = (passages: readonly StoredPassage[], done: (n: number) => void) => Promise<Float32Array[]>

export interface WriteVectorsOptions {
  store: string
  model: string
  source: VectorSource
  /** Passages per committed chunk. */
  chunkSize?: number
  log: Logger
  label?: string
}

export async function writeStoreVectors(options: WriteVectorsOptions): Promise<{ written: number; seconds: number }> {
  const started = Date.now()
  const store = PassageStore.openForUpdate(options.store)
  try {
    const db = store.db
    const done = (db.prepare('SELECT max(last_rowid) AS n FROM dense_vectors WHERE model = ?').get(options.model) as { n: number | null }).n ?? 0
    const maxRowid = (db.prepare('SELECT max(rowid) AS n FROM passages').get() as { n: number | null }).n ?? 0
    const select = db.prepare('SELECT rowid, id, title, text FROM passages WHERE rowid BETWEEN ? AND ? ORDER BY rowid')
    const insert = db.prepare('INSERT INTO dense_vectors (model, first_rowid, last_rowid, dim, data) VALUES (?, ?, ?, ?, ?)')
    const chunkSize = options.chunkSize ?? 1024
    const total = maxRowid - done
    if (done > 0 && total > 0) options.log.info({ model: options.model, done }, 'resuming passage vectors')
    let written = 0
    let current = 0
    const progress = new Progress({ label: options.label ?? `vectors of ${options.model}`, unit: 'passages', log: options.log, fraction: () => (total > 0 ? current / total : 1) })
    for (let first = done + 1; first <= maxRowid; first += chunkSize) {
      const last = Math.min(first + chunkSize - 1, maxRowid)
      const rows = select.all(first, last) as StoredPassage[]
      const vectors = await options.source(rows, (n) => progress.update((current = written + n)))
      const dim = vectors[0]?.length ?? 0
      const data = new Float32Array(rows.length * dim)
      vectors.forEach((v, i) => data.set(v, i * dim))
      insert.run(options.model, first, last, dim, Buffer.from(data.buffer, data.byteOffset, data.byteLength))
      written += rows.length
      progress.update((current = written))
    }
    progress.done(written)
    return { written, seconds: (Date.now() - started) / 1000 }
  } finally {
    store.close()
  }
}

export interface EncodeOptions {
  store: string
  model: string
  modelsDir: string
  batchSize: number
  /** Passages per committed chunk. */
  chunkSize?: number
  threads?: number
  log: Logger
}

/** `ambigqa index encode` on the CPU: every passage not yet encoded, through onnxruntime-node. */
export async function encodeStore(options: EncodeOptions): Promise<{ encoded: number; seconds: number }> {
  const encoder = await DenseEncoder.load(options.model, options.modelsDir, options.threads)
  try {
    const source: VectorSource = (rows, done) => encodePassages(encoder, rows, options.batchSize, done)
    const { written, seconds } = await writeStoreVectors({ store: options.store, model: options.model, source, chunkSize: options.chunkSize, log: options.log, label: `encoding with ${options.model}` })
    return { encoded: written, seconds }
  } finally {
    await encoder.close()
  }
}

/** Passages encoded in batches of similar length, which pad less (about a third less work on
 * eval-300's mixed lengths); vectors in the order given. What every CPU encoding path runs. */
export async function encodePassages(encoder: DenseEncoder, passages: readonly { title: string; text: string }[], batchSize: number, done: (n: number) => void = () => {}): Promise<Float32Array[]> {
  const texts = passages.map((p) => passageText(p.title, p.text))
  const order = texts.map((_, i) => i).sort((a, b) => texts[a]!.length - texts[b]!.length)
  const vectors: Float32Array[] = new Array(passages.length)
  for (let i = 0; i < order.length; i += batchSize) {
    const batch = order.slice(i, i + batchSize)
    const encoded = await encoder.encode(batch.map((j) => texts[j]!), 'passage')
    batch.forEach((j, n) => (vectors[j] = encoded[n]!))
    done(Math.min(i + batchSize, order.length))
  }
  return vectors
}
