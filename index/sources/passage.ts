// What an ingestion source yields: passages (core/passage.ts) with the point to resume from.
import type { Passage } from '../../core/passage.js'

/** Where a reader can pick up again: how many records it has consumed, and for line-based
 * sources the byte offset and line number of the next record, so a resume need not re-read. */
export interface ResumePoint {
  records: number
  byteOffset?: number
  line?: number
}

export type ReadItem =
  | { kind: 'passage'; passage: Passage; next: ResumePoint }
  /** A bad record the builder may skip (`--on-error skip`) or stop at. */
  | { kind: 'bad-record'; error: Error; next: ResumePoint }

export interface PassageReader {
  /** The source's size in bytes when known, for progress and ETA. */
  readonly totalBytes?: number
  /** Bytes consumed so far (for progress); readers update it as they go. */
  readonly bytesRead: () => number
  read(from: ResumePoint): AsyncIterable<ReadItem>
}
