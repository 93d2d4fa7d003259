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

// A word is a run of letters, marks, decimal digits and underscores (superscripts and
// fractions such as ² and ½ are not word characters in UAX#29); a word stays whole across an
// apostrophe, period or middle dot between letters ("don't", "u.s.a", "n·m") and across , .
// between digits ("1,000.5"): UAX#29's MidLetter, MidNumLet and MidNum characters.
const WORD =
  /[\p{L}\p{M}\p{Nd}\p{Nl}_]+(?:(?:(?<=[\p{L}\p{M}])[:·\u0387\u05F4\u2027\uFE13\uFE55\uFF1A'’‘.\u2024\uFE52\uFF07\uFF0E](?=\p{L})|(?<=\p{Nd})[,;\u037E\u0589\u060C\u060D\u066C\u07F8\u2044\uFE50\uFE54\uFF0C\uFF1B'’‘.\u2024\uFE52\uFF07\uFF0E](?=\p{Nd}))[\p{L}\p{M}\p{Nd}\p{Nl}_]+)*/gu
// StandardTokenizer makes each Han ideograph and each Hiragana character a token of its own.
const IDEOGRAPHIC = /[\p{sc=Han}\p{sc=Hiragana}]/u
const IDEOGRAPHIC_SPLIT = /[\p{sc=Han}\p{sc=Hiragana}]|[^\p{sc=Han}\p{sc=Hiragana}]+/gu

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
    if (IDEOGRAPHIC.test(match[0])) {
      for (const part of match[0].match(IDEOGRAPHIC_SPLIT)!) addTerm(terms, part)
    } else addTerm(terms, match[0])
  }
  return terms
}

function addTerm(terms: string[], word: string): void {
  let token = word
  if (token.length > MAX_TOKEN_LENGTH) return
  // Lucene lower-cases code point by code point: İ becomes i, not JavaScript's i + U+0307.
  token = (token.includes('\u0130') ? token.replace(/\u0130/g, 'i') : token).toLowerCase()
  // EnglishPossessiveFilter: trailing 's (any apostrophe form) goes before stop words and stemming.
  if (token.length > 2 && token.endsWith('s')) {
    const apostrophe = token[token.length - 2]
    if (apostrophe === "'" || apostrophe === '’' || apostrophe === '＇') token = token.slice(0, -2)
  }
  if (ENGLISH_STOP_WORDS.has(token)) return
  terms.push(stem(token))
}

/** Term frequencies of an analyzed text, plus its length in terms (the BM25 field length). */
export function termFrequencies(text: string): { tf: Map<string, number>; length: number } {
  const terms = analyze(text)
  const tf = new Map<string, number>()
  for (const term of terms) tf.set(term, (tf.get(term) ?? 0) + 1)
  return { tf, length: terms.length }
}
