// How the reader's inputs are written, exactly as train/ambigqa_train/data.py writes them:
// `question [SEP] title: text [SEP] title: text ...`, cut by the tokenizer to the model's budget.
import type { RetrievedPassage } from '../src/core/retriever.js'
import { containsTokens, dprTokenSpans, dprTokens } from '../src/core/has-answer.js'

export const INPUT_SEPARATOR = ' [SEP] '

export function passagesText(passages: readonly RetrievedPassage[]): string {
  return passages.map((p) => `${p.title}: ${p.text}`).join(INPUT_SEPARATOR)
}

export function joinInput(...parts: string[]): string {
  return parts.filter((p) => p.length > 0).join(INPUT_SEPARATOR)
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
