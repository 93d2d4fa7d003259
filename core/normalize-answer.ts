// SQuAD-style answer normalization, exactly as the official AmbigQA evaluation does it in Python 3
// (see docs/evaluation.md, "normalize_answer"): lower-case, drop ASCII punctuation, replace the
// words a/an/the by a space (word boundaries as Python's Unicode-aware `\b`), collapse whitespace.

/** `string.punctuation` of Python: ASCII punctuation only (Unicode quotes and dashes stay). */
const ASCII_PUNCTUATION = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g

/** `\b(a|an|the)\b` with Python's Unicode word characters (letters, numbers, underscore). */
const ARTICLES = /(?<![\p{L}\p{N}_])(?:a|an|the)(?![\p{L}\p{N}_])/gu

/** The characters Python's `str.split()` splits on (`str.isspace()`), NBSP included, BOM not. */
export const PY_WHITESPACE = '\\t\\n\\u000B\\u000C\\r\\u001C-\\u001F \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000'
const WHITESPACE_RUN = new RegExp(`[${PY_WHITESPACE}]+`, 'g')
const EDGE_WHITESPACE = new RegExp(`^[${PY_WHITESPACE}]+|[${PY_WHITESPACE}]+$`, 'g')

/** Python's `s.strip()`. */
export function pyStrip(s: string): string {
  return s.replace(EDGE_WHITESPACE, '')
}

/** Python's `s.split()` (no argument): split on whitespace runs, no empty strings. */
export function pySplit(s: string): string[] {
  const trimmed = pyStrip(s)
  return trimmed === '' ? [] : trimmed.split(WHITESPACE_RUN)
}

/** normalize_answer of the official evaluation. */
export function normalizeAnswer(s: string): string {
  const lowered = s.toLowerCase()
  const noPunct = lowered.replace(ASCII_PUNCTUATION, '')
  const noArticles = noPunct.replace(ARTICLES, ' ')
  return pySplit(noArticles).join(' ')
}

/** True when the two strings are equal after normalization. */
export function exactMatch(gold: string, prediction: string): boolean {
  return normalizeAnswer(gold) === normalizeAnswer(prediction)
}

/** get_exact_match(aliases, prediction): any alias equals the prediction after normalization. */
export function matchesAnyAlias(aliases: readonly string[], prediction: string): boolean {
  const p = normalizeAnswer(prediction)
  return aliases.some((a) => normalizeAnswer(a) === p)
}
