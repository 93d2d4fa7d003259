// Text analysis comparable to Lucene's EnglishAnalyzer, so our BM25 and the Lucene and
// Elasticsearch peers see the same terms: Unicode word tokens (an approximation of UAX#29,
// which Lucene's StandardTokenizer implements), English possessive removal, lower-casing,
// Lucene's English stop set, Porter stemming.
import { stemmer } from 'stemmer'

/** Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET. */
export const ENGLISH_STOP_WORDS: ReadonlySet<string> = new Set([
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'but', 'by', 'for', 'if', 'in', 'into', 'is', 'it',
  'no', 'not', 'of', 'on', 'or', 'such', 'that', 'the', 'their', 'then', 'there', 'these',
  'they', 'this', 'to', 'was', 'will', 'with',
])

// A word is a run of letters, marks, digits and underscores; UAX#29 also keeps a word whole
// across an apostrophe or period between letters ("don't", "u.s.a") and across , . between
// digits ("1,000.5").
const WORD =
  /[\p{L}\p{M}\p{N}_]+(?:(?:(?<=[\p{L}\p{M}])['’.:](?=\p{L})|(?<=\p{N})[.,;'’](?=\p{N}))[\p{L}\p{M}\p{N}_]+)*/gu

// Lucene's StandardTokenizer drops tokens longer than this.
const MAX_TOKEN_LENGTH = 255

// Stemming dominates analysis time; the vocabulary of a corpus is small next to its tokens.
const stemCache = new Map<string, string>()
const STEM_CACHE_LIMIT = 2_000_000

function stem(word: string): string {
  let stemmed = stemCache.get(word)
  if (stemmed === undefined) {
    stemmed = stemmer(word)
    if (stemCache.size >= STEM_CACHE_LIMIT) stemCache.clear()
    stemCache.set(word, stemmed)
  }
  return stemmed
}

export function analyze(text: string): string[] {
  const terms: string[] = []
  for (const match of text.matchAll(WORD)) {
    let token = match[0]
    if (token.length > MAX_TOKEN_LENGTH) continue
    token = token.toLowerCase()
    // EnglishPossessiveFilter: trailing 's (any apostrophe form) goes before stop words and stemming.
    if (token.length > 2 && token.endsWith('s')) {
      const apostrophe = token[token.length - 2]
      if (apostrophe === "'" || apostrophe === '’' || apostrophe === '＇') token = token.slice(0, -2)
    }
    if (ENGLISH_STOP_WORDS.has(token)) continue
    terms.push(stem(token))
  }
  return terms
}

/** Term frequencies of an analyzed text, plus its length in terms (the BM25 field length). */
export function termFrequencies(text: string): { tf: Map<string, number>; length: number } {
  const terms = analyze(text)
  const tf = new Map<string, number>()
  for (const term of terms) tf.set(term, (tf.get(term) ?? 0) + 1)
  return { tf, length: terms.length }
}
