// Runs a retriever over evaluation questions and scores it, timing every query.
import type { Retriever } from '../../core/retriever.js'
import type { Logger } from '../../core/log.js'
import { Progress } from '../../core/progress.js'
import type { EvalQuestion } from './questions.js'
import { retrievalMetrics, type RetrievalMetrics } from './retrieval-metrics.js'

export interface RetrieverEvaluation {
  metrics: RetrievalMetrics
  latenciesMs: number[]
  hits: string[][]
}

export async function evaluateRetriever(retriever: Retriever, questions: readonly EvalQuestion[], ks: readonly number[], log: Logger): Promise<RetrieverEvaluation> {
  const depth = Math.max(...ks)
  const progress = new Progress({ label: `retrieving with ${retriever.name}`, unit: 'questions', log, fraction: () => done / questions.length })
  const hits: string[][] = []
  const ids: string[][] = []
  const latenciesMs: number[] = []
  let done = 0
  for (const q of questions) {
    const started = performance.now()
    const found = await retriever.search(q.question, depth)
    latenciesMs.push(performance.now() - started)
    hits.push(found.map((p) => p.text))
    ids.push(found.map((p) => p.id))
    progress.update(++done)
  }
  progress.done(done)
  return { metrics: retrievalMetrics(questions, hits, ks), latenciesMs, hits: ids }
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}
