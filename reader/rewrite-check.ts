// What makes a disambiguated question one the server will not return: a rewrite that cannot be
// right is worse than the prompt question marked as not rewritten. Words are compared lower-cased,
// without accents or punctuation, so "Perfect" and "perfect," are one word.

export type RewriteFault =
  /** The same words as the prompt: no disambiguation at all. */
  | 'identical'
  /** A word trigram that occurs twice, or a word twice in a row that the prompt does not repeat: the
   * small-model loop ("in the child trap in the child trap", "the human body body"). */
  | 'repeated-trigram'
  /** A word found in neither the prompt, the answers nor the evidence: invented. */
  | 'unsupported-word'
  /** The same words as another answer's rewrite in the set: it cannot single out both answers. */
  | 'duplicate'
  /** Half or more of the prompt's content words gone: not a minimal rewrite but another question. */
  | 'not-minimal'

export function rewriteWords(text: string): string[] {
  return text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
}

// Function words carry no claim, so a rewrite may always use them: "which season", "in the US" are
// how AmbigNQ's annotators disambiguate even when the passage happens not to say "which".
export const FUNCTION_WORDS: readonly string[] = ['a', 'an', 'the', 'of', 'in', 'on', 'at', 'to', 'for', 'from', 'by', 'with', 'as', 'and', 'or', 'that', 'this',
  'these', 'those', 'who', 'whom', 'whose', 'what', 'which', 'when', 'where', 'why', 'how', 'is', 'are', 'was', 'were', 'be', 'been',
  'do', 'does', 'did', 'has', 'have', 'had', 'will', 'would', 'can', 'could', 'its', 'it', 'their', 'his', 'her', 'during', 'after',
  'before', 'since', 'until', 'into', 'about', 'than', 'most', 'first', 'last', 'not', 's']

const FUNCTION_SET = new Set(FUNCTION_WORDS)

/** Crude stem, so an inflection of a supported word is supported too ("premiere" of "premiered"). */
function stem(word: string): string {
  return word.length > 4 ? word.replace(/(ing|ed|es|e|s|d)$/, '') : word
}

/** The words a rewrite may use: those of the prompt, the answers and the evidence texts (stems). */
export function supportedWords(texts: Iterable<string>): Set<string> {
  const words = new Set<string>(FUNCTION_WORDS)
  for (const text of texts) for (const w of rewriteWords(text)) words.add(stem(w))
  return words
}

/** Every fault of one rewrite (empty when it may be returned); `siblings` are the rewrites already
 * chosen for the other answers of the same set. */
export function rewriteFaults(prompt: string, rewrite: string, supported: ReadonlySet<string>, siblings: readonly string[] = []): RewriteFault[] {
  const words = rewriteWords(rewrite)
  const key = words.join(' ')
  const promptWords = rewriteWords(prompt)
  const faults: RewriteFault[] = []
  if (key === promptWords.join(' ')) faults.push('identical')
  const stutter = (ws: string[]) => ws.some((w, i) => i > 0 && ws[i - 1] === w)
  if (stutter(words) && !stutter(promptWords)) faults.push('repeated-trigram')
  const trigrams = new Set<string>()
  for (let i = 0; i + 3 <= words.length; i++) {
    const t = words.slice(i, i + 3).join(' ')
    if (trigrams.has(t)) {
      if (!faults.includes('repeated-trigram')) faults.push('repeated-trigram')
      break
    }
    trigrams.add(t)
  }
  if (words.some((w) => !supported.has(stem(w)))) faults.push('unsupported-word')
  if (siblings.some((s) => rewriteWords(s).join(' ') === key)) faults.push('duplicate')
  const content = promptWords.filter((w) => !FUNCTION_SET.has(w))
  const kept = new Set(words.map(stem))
  if (content.length > 0 && content.filter((w) => kept.has(stem(w))).length * 2 <= content.length) faults.push('not-minimal')
  return faults
}
