// Fusion of two or more retrievers: reciprocal-rank fusion (Cormack et al. 2009, k = 60), which
// needs no score calibration, or a weighted sum of min-max normalised scores (alpha weights),
// which can use how confident each retriever is. Each source is asked for `depth` passages.
import { ERR_USAGE } from '../core/errors.js'
import { retrieveWith, type Retrieval, type RetrievedPassage, type Retriever } from '../core/retriever.js'

export type FusionMethod = { kind: 'rrf'; k: number } | { kind: 'weighted'; weights: readonly number[] }

export interface HybridOptions {
  fusion: FusionMethod
  /** Passages asked of each source retriever (at least the k asked of the fusion). */
  depth: number
}

export class HybridRetriever implements Retriever {
  readonly name: string

  constructor(private readonly sources: readonly Retriever[], private readonly options: HybridOptions) {
    if (sources.length < 2) throw ERR_USAGE(`hybrid retrieval needs at least two retrievers, got ${sources.length}`, 'Configure two or more')
    if (options.fusion.kind === 'weighted' && options.fusion.weights.length !== sources.length) {
      throw ERR_USAGE(`${options.fusion.weights.length} fusion weights for ${sources.length} retrievers`, 'Give one weight per retriever')
    }
    this.name = `hybrid(${sources.map((s) => s.name).join('+')})`
  }

  describe(): string {
    return this.sources.map((s) => (s.describe ? `${s.name}: ${s.describe()}` : s.name)).join('; ')
  }

  async search(question: string, k: number): Promise<RetrievedPassage[]> {
    return (await this.retrieve(question, k)).passages
  }

  /** The fused ranking, and the first source's question vector (a dense source's). */
  async retrieve(question: string, k: number): Promise<Retrieval> {
    const depth = Math.max(k, this.options.depth)
    const found = await Promise.all(this.sources.map((source) => retrieveWith(source, question, depth)))
    const query = found.find((f) => f.query)?.query
    return { passages: fuse(found.map((f) => f.passages), this.options.fusion).slice(0, k), ...(query ? { query } : {}) }
  }

  async close(): Promise<void> {
    await Promise.all(this.sources.map((source) => source.close()))
  }
}

/** Fuses rankings (best first) into one, best first; ties keep first-seen order. */
export function fuse(rankings: readonly (readonly RetrievedPassage[])[], method: FusionMethod): RetrievedPassage[] {
  const fused = new Map<string, RetrievedPassage>()
  rankings.forEach((ranking, r) => {
    const contribution = contributions(ranking, method, r)
    ranking.forEach((passage, rank) => {
      const entry = fused.get(passage.id)
      if (entry) entry.score += contribution(passage, rank)
      else fused.set(passage.id, { ...passage, score: contribution(passage, rank) })
    })
  })
  return [...fused.values()].sort((a, b) => b.score - a.score)
}

function contributions(ranking: readonly RetrievedPassage[], method: FusionMethod, r: number): (p: RetrievedPassage, rank: number) => number {
  if (method.kind === 'rrf') return (_p, rank) => 1 / (method.k + rank + 1)
  const weight = method.weights[r]!
  const scores = ranking.map((p) => p.score)
  const min = Math.min(...scores)
  const span = Math.max(...scores) - min
  // A ranking whose scores are all equal carries no preference: each passage gets the full weight.
  return (p) => weight * (span === 0 ? 1 : (p.score - min) / span)
}
