// Record numbering shared by the wikitext readers. A record is one passage yielded or one bad
// source unit (page, file); ResumePoint.records counts them, and resuming re-reads the source
// from its start and skips that many, which is simple and, with ordered output, deterministic.
import type { Passage } from '../../core/passage.js'
import type { ReadItem, ResumePoint } from './passage.js'

/** What one source unit (a page, a file) turned into. */
export type Outcome = { ok: true; passages: Passage[] } | { ok: false; error: Error }

/** `open` runs on the first next(), so opening errors reject the caller's `for await`. */
export async function* numberRecords(from: ResumePoint, open: () => AsyncIterable<Outcome>): AsyncGenerator<ReadItem> {
  let records = 0
  for await (const outcome of open()) {
    if (!outcome.ok) {
      records++
      if (records > from.records) yield { kind: 'bad-record', error: outcome.error, next: { records } }
      continue
    }
    for (const passage of outcome.passages) {
      records++
      if (records > from.records) yield { kind: 'passage', passage, next: { records } }
    }
  }
}
