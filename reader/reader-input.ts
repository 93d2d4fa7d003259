// How the reader's inputs are written, byte for byte as train/ambigqa_train/data.py writes them
// for training (reader_input, qd_input; test/reader-input.test.ts runs both and compares):
// `question [SEP] title: text [SEP] title: text ...`, cut by the tokenizer to the model's budget.
import type { Passage } from '../core/passage.js'
import { containsTokens, dprTokenSpans, dprTokens } from '../core/has-answer.js'

export const INPUT_SEPARATOR = ' [SEP] '

/** `title: text`, or the text alone when there is no title (data.py's Passage.render). */
export function passageText(p: Pick<Passage, 'title' | 'text'>): string {
  return p.title ? `${p.title}: ${p.text}` : p.text
}

/** SpanSeqGen's input: `question [SEP] title: text [SEP] ...` (data.py's reader_input). */
export function readerInput(question: string, passages: readonly Pick<Passage, 'title' | 'text'>[]): string {
  return [question, ...passages.map(passageText)].join(INPUT_SEPARATOR)
}

// What Python's str.split() splits on (str.isspace), which is not quite JavaScript's \s.
const PYTHON_WHITESPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/

/**
 * Question disambiguation's input: `prompt [SEP] answer [SEP] other answers joined by the
 * separator [SEP] title: text ...`; the other-answers slot stays (empty) when passages follow,
 * trailing empty slots are dropped, and runs of whitespace become one space (data.py's qd_input).
 */
export function qdInput(question: string, answer: string, others: readonly string[], passages: readonly Pick<Passage, 'title' | 'text'>[], separator: string): string {
  const parts = [question, answer, others.join(` ${separator} `), ...passages.map(passageText)]
  while (parts.length > 0 && parts.at(-1)!.split(PYTHON_WHITESPACE).join('') === '') parts.pop()
  return parts.join(INPUT_SEPARATOR).split(PYTHON_WHITESPACE).filter((w) => w !== '').join(' ')
}

/**
 * The answer as the passage writes it: the model's vocabulary is lower-cased, so an answer is
 * shown with the casing and punctuation of its first occurrence in the evidence (DPR's match).
 */
export function surfaceForm(answer: string, passageText: string): string | undefined {
  const want = dprTokens(answer)
  if (want.length === 0) return undefined
  const text = passageText.normalize('NFD')
  const spans = dprTokenSpans(text)
  const tokens = spans.map((s) => s.token)
  for (let i = 0; i + want.length <= spans.length; i++) {
    if (containsTokens(tokens.slice(i, i + want.length), want)) return text.slice(spans[i]!.start, spans[i + want.length - 1]!.end).normalize('NFC')
  }
  return undefined
}
