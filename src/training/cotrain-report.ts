// report.html of a co-training run: per iteration, how many single-answer examples the committee
// made multi-answer, single-answer or left waiting, and how strongly it agreed (the top vote
// for an extra answer of each example); eval-300 F1 answer of one member and of each committee.
// One self-contained page (inline SVG, no script), drawn with the evaluation report's charts.
import { barChart, escapeHtml, htmlPage, niceMax, type Bar } from '../eval/report-html.js'

export interface SilverSummary {
  iteration: number
  multi: number
  single: number
  wait: number
  /** Examples by the most votes any extra answer got (0: nobody predicted one). */
  topVote: Record<string, number>
  /** Member votes given up because the member's answer set missed the known answer. */
  abstentions: number
}

export interface EvalResult { name: string; reader: string; f1All: number; f1Multi: number | null; n: number; seconds: number }

export interface CoTrainingResults {
  config: string
  committee: number
  iterations: number
  steps: number
  partial: number
  silver: SilverSummary[]
  evals: EvalResult[]
  secondsThisStart: number
}

// Quarter ticks of a nice maximum: 2.5 is not 3.
const tick = (v: number) => String(Number(v.toFixed(1)))
const pct = (x: number | null) => (x === null || Number.isNaN(x) ? '–' : (x * 100).toFixed(1))

function silverChart(silver: readonly SilverSummary[]): string {
  const bars: Bar[] = silver.flatMap((s) => (['multi', 'single', 'wait'] as const).map((d) => ({ label: d, sublabel: `iteration ${s.iteration}`, value: s[d], text: String(s[d]) })))
  return barChart('Silver set per iteration', bars, niceMax(Math.max(1, ...bars.map((b) => b.value))), 'examples', '#3e7cb1', tick)
}

function voteChart(s: SilverSummary, committee: number): string {
  const bars: Bar[] = Array.from({ length: committee + 1 }, (_, v) => ({ label: `${v} of ${committee}`, value: s.topVote[String(v)] ?? 0, text: String(s.topVote[String(v)] ?? 0) }))
  return barChart(`Iteration ${s.iteration}: most votes for an extra answer`, bars, niceMax(Math.max(1, ...bars.map((b) => b.value))), 'examples', '#8e6bbf', tick)
}

function evalChart(evals: readonly EvalResult[]): string {
  const bars: Bar[] = evals.map((e) => ({ label: e.name, sublabel: e.f1Multi === null ? '' : `multi ${pct(e.f1Multi)}`, value: e.f1All * 100, text: pct(e.f1All) }))
  return barChart('eval F1 answer (all questions)', bars, niceMax(Math.max(1, ...bars.map((b) => b.value))), 'F1 answer ×100', '#2f9e77', tick)
}

export function renderCoTrainingReport(r: CoTrainingResults): string {
  const rows = r.evals.map((e) => `<tr><td>${escapeHtml(e.name)}</td><td>${pct(e.f1All)}</td><td>${pct(e.f1Multi)}</td><td>${e.n}</td><td>${e.seconds.toFixed(0)}</td></tr>`).join('\n')
  const silverRows = r.silver.map((s) => `<tr><td>${s.iteration}</td><td>${s.multi}</td><td>${s.single}</td><td>${s.wait}</td><td>${s.abstentions}</td></tr>`).join('\n')
  return htmlPage('Co-training report', `<h1>Democratic co-training</h1>
<p>${escapeHtml(r.config)}: a committee of ${r.committee} extractive readers (${r.steps} steps each), ${r.iterations} iteration${r.iterations === 1 ? '' : 's'}, ${r.partial} single-answer examples; committee 1 is the plain ensemble (the multi-answer set only), committee ${r.iterations + 1} the co-trained one. The committee votes with its spans: an extra answer is one a member's answer set holds beside the known answer; ${Math.floor(r.committee / 2) + 1} of ${r.committee} votes (more than half) make the example multi-answer.</p>
<h2>Silver set</h2>
${silverChart(r.silver)}
<table><tr><th>iteration</th><th>multi-answer</th><th>single-answer</th><th>waiting</th><th>abstentions (member missed the known answer)</th></tr>
${silverRows}</table>
<h2>Vote distribution</h2>
${r.silver.map((s) => voteChart(s, r.committee)).join('\n')}
<h2>Evaluation</h2>
${r.evals.length > 0 ? evalChart(r.evals) : '<p>No evaluation configured.</p>'}
<table><tr><th>reader</th><th>F1 answer all</th><th>F1 answer multi</th><th>questions</th><th>seconds</th></tr>
${rows}</table>`)
}
