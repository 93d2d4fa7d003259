// The words a BERT tokenizer sees, with where each lies in the text, and their word pieces. The JS
// tokenizer gives no character offsets, and an extractive reader must cut its answer out of the
// passage; splitting as BertPreTokenizer does (whitespace, and each punctuation or CJK character
// alone) and encoding word by word gives the same pieces as encoding the whole text, each piece
// with its word. Characters the normaliser removes stay inside their word, as they do there.
import type { Seq2SeqTokenizer } from './generation/seq2seq-tokenizer.js'

export interface Word { start: number; end: number }

/** BERT's punctuation: every ASCII symbol (`$`, `+`, `^` too) and Unicode category P. */
const PUNCTUATION = /[!-/:-@[-`{-~]|\p{P}/u
const CJK = /[\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\u{20000}-\u{2FA1F}]/u
const WHITESPACE = /\s/u

export function splitWords(text: string): Word[] {
  const words: Word[] = []
  let start = -1
  let i = 0
  for (const ch of text) {
    const next = i + ch.length
    if (WHITESPACE.test(ch)) {
      if (start >= 0) words.push({ start, end: i })
      start = -1
    } else if (PUNCTUATION.test(ch) || CJK.test(ch)) {
      if (start >= 0) words.push({ start, end: i })
      words.push({ start: i, end: next })
      start = -1
    } else if (start < 0) {
      start = i
    }
    i = next
  }
  if (start >= 0) words.push({ start, end: text.length })
  return words
}

export interface PiecedText {
  text: string
  words: Word[]
  /** Word pieces in order, and the word each belongs to. */
  ids: number[]
  wordOf: number[]
}

/** Word pieces of a word, remembered: passages share most of their words. */
export class WordPieceCache {
  private readonly cache = new Map<string, number[]>()
  constructor(private readonly tokenizer: Seq2SeqTokenizer, private readonly capacity = 200_000) {}

  pieces(word: string): number[] {
    let ids = this.cache.get(word)
    if (ids === undefined) {
      ids = this.tokenizer.encodePlain(word)
      if (this.cache.size >= this.capacity) this.cache.clear()
      this.cache.set(word, ids)
    }
    return ids
  }

  encode(text: string, maxPieces = Infinity): PiecedText {
    const words = splitWords(text)
    const ids: number[] = []
    const wordOf: number[] = []
    for (const [w, word] of words.entries()) {
      for (const id of this.pieces(text.slice(word.start, word.end))) {
        if (ids.length >= maxPieces) return { text, words, ids, wordOf }
        ids.push(id)
        wordOf.push(w)
      }
    }
    return { text, words, ids, wordOf }
  }
}
