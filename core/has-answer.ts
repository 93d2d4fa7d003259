// DPR's answer match (dpr/utils/tokenizers.py SimpleTokenizer + has_answer, match_type
// "string"): NFD-normalise, split into alphanumeric runs and single other characters,
// lower-case, and look for the answer's tokens as a contiguous run of the passage's tokens.

const TOKEN = /[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]/gu

export function dprTokens(text: string): string[] {
  return dprTokenSpans(text.normalize('NFD')).map((t) => t.token)
}

/** The tokens of already NFD-normalised text with where each starts and ends in it. */
export function dprTokenSpans(nfd: string): { token: string; start: number; end: number }[] {
  return [...nfd.matchAll(TOKEN)].map((m) => ({ token: m[0].toLowerCase(), start: m.index, end: m.index + m[0].length }))
}

/** True when the token sequence `answer` occurs contiguously in `passage`. */
export function containsTokens(passage: readonly string[], answer: readonly string[]): boolean {
  if (answer.length === 0) return false
  const first = answer[0]
  outer: for (let i = 0; i + answer.length <= passage.length; i++) {
    if (passage[i] !== first) continue
    for (let j = 1; j < answer.length; j++) if (passage[i + j] !== answer[j]) continue outer
    return true
  }
  return false
}

export function hasAnswer(passageText: string, answers: readonly string[]): boolean {
  const tokens = dprTokens(passageText)
  return answers.some((answer) => containsTokens(tokens, dprTokens(answer)))
}
