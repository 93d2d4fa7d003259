// DPR's passage unit: an article's paragraphs merged into one word stream, cut into consecutive,
// non-overlapping chunks of 100 whitespace-separated words (Karpukhin et al. 2020, §4.1).
import type { Passage } from '../../core/passage.js'

export function splitIntoPassages(title: string, text: string, idPrefix: string, wordsPerPassage = 100): Passage[] {
  if (!Number.isInteger(wordsPerPassage) || wordsPerPassage < 1) {
    throw new RangeError(`wordsPerPassage must be a positive integer, got ${wordsPerPassage}`)
  }
  const words = text.split(/\s+/).filter((word) => word !== '')
  const passages: Passage[] = []
  for (let start = 0; start < words.length; start += wordsPerPassage) {
    passages.push({
      id: `${idPrefix}-${passages.length}`,
      title,
      text: words.slice(start, start + wordsPerPassage).join(' '),
    })
  }
  return passages
}
