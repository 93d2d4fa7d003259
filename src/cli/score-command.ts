// `ambigqa score`: the official AmbigNQ metric on a prediction file.
import { writeFileSync } from 'node:fs'
import type { Command } from 'commander'
import { ERR_USAGE } from '../../core/errors.js'
import {
  loadPredictions,
  loadReference,
  scoreAmbigNq,
  type AmbigNqMetrics,
  type MetricValue,
} from '../eval/score-ambignq.js'

interface ScoreOptions {
  reference: string
  predictions: string
  json?: boolean
  perQuestion?: string
}

const ROWS = ['F1 answer', 'F1 bleu1', 'F1 bleu2', 'F1 bleu3', 'F1 bleu4', 'F1 edit-f1'] as const

function pct(v: number): string {
  return Number.isFinite(v) ? (v * 100).toFixed(2).padStart(7) : '      -'
}

/** The readable summary: one row per metric, all and multi-answer columns, ×100. */
export function formatMetricsTable(metrics: AmbigNqMetrics): string {
  const full = metrics['F1 bleu4'] !== null
  const lines = [
    `AmbigNQ: ${metrics.n_all} questions, ${metrics.n_multi} multi-answer; ${full ? 'question-answer pairs' : 'answers only (no question metrics)'}`,
    `${'metric'.padEnd(12)}  ${'all'.padStart(7)}  ${'multi'.padStart(7)}   (x100)`,
  ]
  for (const name of ROWS) {
    const v: MetricValue | null = metrics[name]
    if (v) lines.push(`${name.padEnd(12)}  ${pct(v.all)}  ${pct(v.multi)}`)
  }
  if (full) lines.push('Published F1 BLEU and EDIT-F1 are the multi column of F1 bleu4 and F1 edit-f1.')
  return lines.join('\n')
}

export function registerScoreCommand(program: Command): void {
  program
    .command('score')
    .description('score AmbigNQ predictions with the official metric (F1 answer, F1 BLEU-1..4, F1 EDIT-F1)')
    .requiredOption('--reference <file>', 'AmbigNQ reference JSON (a list of {id, question, annotations}, e.g. dev_light.json)')
    .requiredOption('--predictions <file>', 'predictions JSON: id -> list of answers, or id -> list of {question, answer}')
    .option('--json', 'print the metrics as one JSON object')
    .option('--per-question <file>', 'also write the per-question metrics (id -> metric -> value) as JSON')
    .action((opts: ScoreOptions) => {
      const reference = loadReference(opts.reference)
      const predictions = loadPredictions(opts.predictions, reference)
      const { metrics, perQuestion } = scoreAmbigNq(reference, predictions)
      if (opts.perQuestion) {
        try {
          writeFileSync(opts.perQuestion, `${JSON.stringify(perQuestion)}\n`)
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code ?? String(err)
          throw ERR_USAGE(`cannot write --per-question file ${opts.perQuestion} (${code})`, 'Check that its folder exists and is writable')
        }
      }
      process.stdout.write(`${opts.json ? JSON.stringify(metrics) : formatMetricsTable(metrics)}\n`)
    })
}
