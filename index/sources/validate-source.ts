// Reads the start of every source before a build writes anything: a missing file, a format that
// cannot be told, a wrong header or (under --on-error fail) a bad record among the first ones is
// then an error with the store untouched. Only the start: reading a 13 GB dump twice to find a bad
// line at its end would double a build's reading, and a bad record found later stops an append
// unpublished anyway (index/append.ts).
import { ERR_SOURCE_EMPTY } from '../../core/errors.js'
import { createReader } from './formats.js'
import { buildSource, type SourceSpec } from './resume.js'

/** Records read from the start of each source (a few milliseconds of a TSV). */
export const VALIDATED_RECORDS = 1000

export async function validateSources(specs: readonly SourceSpec[], onError: 'fail' | 'skip'): Promise<void> {
  for (const spec of specs) {
    const { path, format } = buildSource(spec)
    // No worker threads: a dump's first pages convert on this thread in moments.
    const reader = await createReader(path, format, { workers: 0 })
    let records = 0
    for await (const item of reader.read({ records: 0 })) {
      if (item.kind === 'bad-record' && onError === 'fail') throw item.error
      if (++records >= VALIDATED_RECORDS) break
    }
    if (records === 0) throw ERR_SOURCE_EMPTY(path)
  }
}
