// EDIT-F1 of the AmbigQA evaluation (docs/evaluation.md): how well the edits that turn the prompt
// question into a predicted question match the edits that turn it into a gold question.
import { greedyF1 } from './greedy-f1.js'

/** Greedy one-to-one matching F1 with plain equality (get_f1 with `is_equal = x == y`). */
export function multisetF1(golds: readonly string[], preds: readonly string[]): number {
  return greedyF1(golds, preds, (g, p) => g === p)
}

/**
 * The edits from `from` to `to`: the multiset intersection is removed (first occurrences), what is
 * left of `from` is `[DELETED]t`, what is left of `to` is `[ADDED]t`.
 */
export function tokenEdits(from: readonly string[], to: readonly string[]): string[] {
  const rest = new Map<string, number>()
  for (const t of to) rest.set(t, (rest.get(t) ?? 0) + 1)
  const deleted: string[] = []
  for (const t of from) {
    const c = rest.get(t) ?? 0
    if (c > 0) rest.set(t, c - 1)
    else deleted.push(t)
  }
  const common = new Map<string, number>()
  for (const t of from) common.set(t, (common.get(t) ?? 0) + 1)
  const added: string[] = []
  for (const t of to) {
    const c = common.get(t) ?? 0
    if (c > 0) common.set(t, c - 1)
    else added.push(t)
  }
  return [...deleted.map((t) => `[DELETED]${t}`), ...added.map((t) => `[ADDED]${t}`)]
}

/**
 * EDIT-F1 of a predicted question against the gold question alternatives, relative to the prompt.
 * Inputs are normalized question strings; tokens come from `split(" ")` (so "" is one empty token).
 * Per alternative: both edit lists empty → 1, exactly one empty → 0, otherwise multiset F1.
 * The result is the maximum over the alternatives (0 when there are none).
 */
export function editF1(prompt: string, predicted: string, goldAlternatives: readonly string[]): number {
  const p = prompt.split(' ')
  const pred = tokenEdits(p, predicted.split(' '))
  let best = 0
  for (const alt of goldAlternatives) {
    const ref = tokenEdits(p, alt.split(' '))
    let score: number
    if (ref.length === 0 && pred.length === 0) score = 1
    else if (ref.length === 0 || pred.length === 0) score = 0
    else score = multisetF1(pred, ref)
    if (score > best) best = score
  }
  return best
}
