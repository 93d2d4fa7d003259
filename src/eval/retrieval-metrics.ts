// Retrieval quality: answer recall@k as DPR reports it (some top-k passage contains a gold
// answer) and coverage@k, what multi-answer QA needs (the share of the gold answers of the best
// annotation that the top k contain, averaged over questions). Both in percent.
import { containsTokens, dprTokens } from '../../core/has-answer.js'
import type { EvalQuestion } from './questions.js'

export interface RetrievalMetrics {
  recall: Record<string, number>
  coverage: Record<string, number>
  n: number
}

/** `hits[i]` are the passage texts retrieved for `questions[i]`, best first. */
export function retrievalMetrics(questions: readonly EvalQuestion[], hits: readonly (readonly string[])[], ks: readonly number[]): RetrievalMetrics {
  return aggregate(questions, ks, (i) => {
    const passages = (hits[i] ?? []).map(dprTokens)
    return (aliases) => {
      const tokenized = aliases.map(dprTokens)
      const rank = passages.findIndex((p) => tokenized.some((a) => containsTokens(p, a)))
      return rank === -1 ? Infinity : rank
    }
  })
}

/** What any retriever could reach on this corpus: recall and coverage as above with every passage
 * retrieved. Each passage is tokenised once into one string, so the answers are substring tests. */
export function corpusCeiling(questions: readonly EvalQuestion[], passageTexts: Iterable<string>): { recall: number; coverage: number } {
  // \u0001 separates tokens, \u0002 passages, so no match spans two passages.
  const parts: string[] = []
  for (const text of passageTexts) parts.push(`\u0002\u0001${dprTokens(text).join('\u0001')}\u0001`)
  const corpus = parts.join('')
  const found = (aliases: readonly string[]) => aliases.some((a) => {
    const tokens = dprTokens(a)
    return tokens.length > 0 && corpus.includes(`\u0001${tokens.join('\u0001')}\u0001`)
  })
  // Found anywhere counts as rank 0, so everything is "in the top 1".
  const m = aggregate(questions, [1], () => (aliases) => (found(aliases) ? 0 : Infinity))
  return { recall: m.recall[1]!, coverage: m.coverage[1]! }
}

/** Recall and coverage at each k from `firstRank(i)(aliases)`: the rank of the first passage
 * retrieved for question i that holds one of a cluster's aliases (Infinity when none does). */
function aggregate(questions: readonly EvalQuestion[], ks: readonly number[], firstRank: (i: number) => (aliases: readonly string[]) => number): RetrievalMetrics {
  const recall: Record<string, number> = {}
  const coverage: Record<string, number> = {}
  for (const k of ks) {
    recall[k] = 0
    coverage[k] = 0
  }
  questions.forEach((q, i) => {
    const rankOf = firstRank(i)
    // For each cluster of each annotation: the rank of the first passage that holds it.
    const ranks = q.annotations.map((clusters) => clusters.map(rankOf))
    const anyRank = Math.min(...ranks.flat())
    for (const k of ks) {
      if (anyRank < k) recall[k]! += 1
      const best = Math.max(0, ...ranks.map((r) => (r.length === 0 ? 0 : r.filter((rank) => rank < k).length / r.length)))
      coverage[k]! += best
    }
  })
  const n = questions.length
  for (const k of ks) {
    recall[k] = (100 * recall[k]!) / n
    coverage[k] = (100 * coverage[k]!) / n
  }
  return { recall, coverage, n }
}
