// The official script's get_f1: golds matched greedily and one-to-one, in order, each to the
// first unused prediction that matches it. Answer F1 and EDIT-F1 differ only in `matches`.
export function greedyF1<G, P>(golds: readonly G[], preds: readonly P[], matches: (gold: G, pred: P) => boolean): number {
  if (golds.length === 0 || preds.length === 0) return 0
  const used = new Array<boolean>(preds.length).fill(false)
  let matched = 0
  for (const g of golds) {
    for (let j = 0; j < preds.length; j++) {
      if (used[j] || !matches(g, preds[j]!)) continue
      used[j] = true
      matched++
      break
    }
  }
  const recall = matched / golds.length
  const precision = matched / preds.length
  return recall + precision === 0 ? 0 : (2 * recall * precision) / (recall + precision)
}
