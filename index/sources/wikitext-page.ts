// One unit of work for the wikitext workers: an article's wikitext in, its passages out. Kept
// free of worker plumbing so the inline (workers: 0) path and the worker run the same code.
import type { Passage } from '../../core/passage.js'
import { splitIntoPassages } from './split-passages.js'
import { wikitextToText } from './wikitext-to-text.js'

export interface PageJob {
  title: string
  wikitext: string
  idPrefix: string
}

/** Plain data, because it crosses the worker boundary by structured clone. */
export type PageResult = { ok: true; passages: Passage[] } | { ok: false; message: string }

export function convertPage(job: PageJob): PageResult {
  try {
    return { ok: true, passages: splitIntoPassages(job.title, wikitextToText(job.wikitext), job.idPrefix) }
  } catch (err) {
    return { ok: false, message: err instanceof Error ? err.message : String(err) }
  }
}
