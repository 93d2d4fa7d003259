// What makes a disambiguated question one the server will not return: a rewrite that cannot be
// right is worse than the prompt question marked as not rewritten. Words are compared lower-cased,
// without accents or punctuation, so "Perfect" and "perfect," are one word.

export type RewriteFault =
  /** The same words as the prompt: no disambiguation at all. */
  | 'identical'
  /** A word twice in a row or a word pair twice (so any repeated trigram), where the prompt repeats
   * none: the small-model loop ("the human body body", "who played in ..., who played as ...").
   * 2.8% of AmbigNQ's and ASQA's own rewrites repeat a pair; the rest of them none. */
  | 'repetition'
  /** A word found in neither the prompt, the answers nor the evidence: invented. */
  | 'unsupported-word'
  /** The same words as another answer's rewrite in the set: it cannot single out both answers. */
  | 'duplicate'
  /** Half or more of the prompt's content words gone (4.3% of AmbigNQ's and ASQA's rewrites), a
   * number of the prompt gone ("who played in the world series?" for "... in 1989?": 0.9% of
   * AmbigNQ train's rewrites), or more than 8 words added (5% of them): not a minimal rewrite but
   * another question. */
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
const MAX_ADDED_WORDS = 8

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

/** A word twice in a row, or a word pair that occurs twice. */
function repeats(words: readonly string[]): boolean {
  const pairs = new Set<string>()
  for (let i = 1; i < words.length; i++) {
    const pair = `${words[i - 1]} ${words[i]}`
    if (words[i - 1] === words[i] || pairs.has(pair)) return true
    pairs.add(pair)
  }
  return false
}

/** Every fault of one rewrite (empty when it may be returned); `siblings` are the rewrites already
 * chosen for the other answers of the same set. */
export function rewriteFaults(prompt: string, rewrite: string, supported: ReadonlySet<string>, siblings: readonly string[] = []): RewriteFault[] {
  const words = rewriteWords(rewrite)
  const key = words.join(' ')
  const promptWords = rewriteWords(prompt)
  const faults: RewriteFault[] = []
  if (key === promptWords.join(' ')) faults.push('identical')
  if (repeats(words) && !repeats(promptWords)) faults.push('repetition')
  if (words.some((w) => !supported.has(stem(w)))) faults.push('unsupported-word')
  if (siblings.some((s) => rewriteWords(s).join(' ') === key)) faults.push('duplicate')
  const content = promptWords.filter((w) => !FUNCTION_SET.has(w))
  const kept = new Set(words.map(stem))
  const dropped = content.length > 0 && content.filter((w) => kept.has(stem(w))).length * 2 <= content.length
  const numberGone = promptWords.some((w) => /^\p{N}+$/u.test(w) && !words.includes(w))
  if (dropped || numberGone || words.length > promptWords.length + MAX_ADDED_WORDS) faults.push('not-minimal')
  return faults
}
