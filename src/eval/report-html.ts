// The evaluation report: one self-contained HTML file (inline CSS and SVG, no script, nothing
// fetched) with the metrics, a breakdown by number of gold answers, the distribution of
// per-question F1 and the worst examples with what the reader read. Every piece of text from the
// data or the models goes through `escapeHtml`; a Content-Security-Policy forbids scripts anyway.
import { basename } from 'node:path'
import { ambiguityPoints, answerPoints, reliabilityBins, rocCurve } from './confidence-metrics.js'
import { reliabilityChart, rocChart } from './probability-charts.js'
import type { EvalMetrics, PassageRecord, ProgressRecord } from './eval-records.js'
import { isMultiAnswer, QUESTION_METRICS, type AmbigNqRecord, type MetricValue } from './score-ambignq.js'

export interface ReportInput {
  records: readonly AmbigNqRecord[]
  done: ReadonlyMap<string, ProgressRecord>
  passages: ReadonlyMap<string, PassageRecord>
  /** id → metric → value, from scoreAmbigNq. */
  perQuestion: Record<string, Record<string, number>>
  metrics: EvalMetrics
  dataPath: string
  /** Worst examples shown (default 30). */
  worst?: number
}

export function escapeHtml(value: unknown): string {
  return String(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;')
}

const pct = (x: number | null | undefined) => (x === null || x === undefined || Number.isNaN(x) ? '–' : (x * 100).toFixed(1))
const ms = (x: number) => (Number.isNaN(x) ? '–' : x < 10 ? x.toFixed(2) : x.toFixed(0))

/** The number of gold answers of a question: the most any annotation gives (singleAnswer: 1). */
export function goldAnswerCount(rec: AmbigNqRecord): number {
  return Math.max(...rec.annotations.map((a) => (a.type === 'singleAnswer' ? 1 : a.qaPairs.length)))
}

export const BUCKETS = ['1', '2', '3', '4+'] as const

export function bucketOf(rec: AmbigNqRecord): (typeof BUCKETS)[number] {
  const n = goldAnswerCount(rec)
  return n >= 4 ? '4+' : (String(n) as '1' | '2' | '3')
}

export interface Breakdown { bucket: string; count: number; meanF1: number }

export function breakdownByGoldAnswers(records: readonly AmbigNqRecord[], perQuestion: ReportInput['perQuestion']): Breakdown[] {
  return BUCKETS.map((bucket) => {
    const f1s = records.filter((r) => bucketOf(r) === bucket).map((r) => perQuestion[r.id]?.['F1 answer'] ?? 0)
    return { bucket, count: f1s.length, meanF1: f1s.length === 0 ? NaN : f1s.reduce((s, v) => s + v, 0) / f1s.length }
  })
}

/** Counts of per-question F1 answer in ten bins [0, .1), …, [.9, 1]. */
export function f1Histogram(values: readonly number[]): number[] {
  const bins = new Array<number>(10).fill(0)
  for (const v of values) bins[Math.min(9, Math.max(0, Math.floor(v * 10 + 1e-9)))]!++
  return bins
}

// ---------------------------------------------------------------------------------------------
// Charts (inline SVG)

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"'

export function niceMax(max: number): number {
  if (max <= 0) return 1
  const pow = 10 ** Math.floor(Math.log10(max))
  for (const m of [1, 2, 2.5, 5, 10]) if (m * pow >= max) return m * pow
  return 10 * pow
}

export interface Bar { label: string; sublabel?: string; value: number; text: string }

export function barChart(title: string, bars: readonly Bar[], yMax: number, yLabel: string, color: string, tickFormat: (v: number) => string): string {
  const width = 540
  const height = 300
  const left = 56
  const right = 16
  const top = 36
  const bottom = 58
  const plotW = width - left - right
  const plotH = height - top - bottom
  const slot = plotW / Math.max(1, bars.length)
  const barW = Math.min(64, slot * 0.7)
  const y = (v: number) => top + plotH - (Math.max(0, Math.min(v, yMax)) / yMax) * plotH
  const parts: string[] = []
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(title)}" ${FONT}>`)
  parts.push(`<text x="${width / 2}" y="20" text-anchor="middle" font-size="15" font-weight="600" fill="#1f2933">${escapeHtml(title)}</text>`)
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4
    const yy = y(v).toFixed(1)
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${yy}" y2="${yy}" stroke="#d9dee3" stroke-width="1"/>`)
    parts.push(`<text x="${left - 6}" y="${yy}" dy="4" text-anchor="end" font-size="11" fill="#52606d">${escapeHtml(tickFormat(v))}</text>`)
  }
  parts.push(`<text transform="translate(14 ${top + plotH / 2}) rotate(-90)" text-anchor="middle" font-size="12" fill="#52606d">${escapeHtml(yLabel)}</text>`)
  bars.forEach((bar, i) => {
    const cx = left + slot * i + slot / 2
    const value = Number.isNaN(bar.value) ? 0 : bar.value
    const yy = y(value)
    const h = top + plotH - yy
    parts.push(`<rect x="${(cx - barW / 2).toFixed(1)}" y="${yy.toFixed(1)}" width="${barW.toFixed(1)}" height="${Math.max(h, 0).toFixed(1)}" fill="${color}" rx="2"><title>${escapeHtml(`${bar.label}: ${bar.text}`)}</title></rect>`)
    parts.push(`<text x="${cx.toFixed(1)}" y="${(yy - 5).toFixed(1)}" text-anchor="middle" font-size="11" fill="#1f2933">${escapeHtml(bar.text)}</text>`)
    parts.push(`<text x="${cx.toFixed(1)}" y="${top + plotH + 16}" text-anchor="middle" font-size="12" fill="#1f2933">${escapeHtml(bar.label)}</text>`)
    if (bar.sublabel) parts.push(`<text x="${cx.toFixed(1)}" y="${top + plotH + 31}" text-anchor="middle" font-size="11" fill="#52606d">${escapeHtml(bar.sublabel)}</text>`)
  })
  parts.push(`<line x1="${left}" x2="${width - right}" y1="${top + plotH}" y2="${top + plotH}" stroke="#52606d" stroke-width="1"/>`)
  parts.push('</svg>')
  return parts.join('\n')
}

export function breakdownChart(breakdown: readonly Breakdown[]): string {
  return barChart(
    'Mean F1 answer by number of gold answers',
    breakdown.map((b) => ({ label: `${b.bucket} answer${b.bucket === '1' ? '' : 's'}`, sublabel: `n = ${b.count}`, value: b.meanF1 * 100, text: b.count === 0 ? 'no questions' : pct(b.meanF1) })),
    100,
    'F1 answer (×100)',
    '#3b82c4',
    (v) => v.toFixed(0),
  )
}

export function histogramChart(bins: readonly number[]): string {
  const max = niceMax(Math.max(...bins))
  return barChart(
    'Questions by F1 answer',
    bins.map((count, i) => ({ label: i === 9 ? '.9–1' : `.${i}–.${i + 1}`, value: count, text: String(count) })),
    max,
    'questions',
    '#e08a2e',
    (v) => (Number.isInteger(v) ? String(v) : v.toFixed(1)),
  )
}

// ---------------------------------------------------------------------------------------------
// Tables and examples

function metricsTable(m: EvalMetrics): string {
  const row = (name: string, value: MetricValue | null, note = '') =>
    `<tr><th>${escapeHtml(name)}</th><td>${pct(value?.all)}</td><td>${pct(value?.multi)}</td><td class="note">${escapeHtml(note)}</td></tr>`
  const rows = [
    row('F1 answer', m['F1 answer'], 'answer-set F1, the headline number'),
    ...QUESTION_METRICS.map((name) => row(name, m[name], name === 'F1 bleu4' ? 'the paper\'s F1 BLEU (multi)' : name === 'F1 edit-f1' ? 'the paper\'s F1 EDIT-F1 (multi)' : '')),
  ]
  return `<table class="metrics"><thead><tr><th>metric (×100)</th><th>all (n = ${m.n_all})</th><th>multi (n = ${m.n_multi})</th><th></th></tr></thead><tbody>${rows.join('')}</tbody></table>`
}

function timingTable(m: EvalMetrics): string {
  const stages = [['total', 'total'], ['retrieval', 'retrieval'], ['rerank', 'rerank'], ['read', 'reading'], ['disambiguate', 'question disambiguation']] as const
  const rows = stages
    .filter(([key]) => m.timings[key].n > 0)
    .map(([key, name]) => `<tr><th>${escapeHtml(name)}</th><td>${ms(m.timings[key].p50Ms)}</td><td>${ms(m.timings[key].p99Ms)}</td><td>${ms(m.timings[key].meanMs)}</td></tr>`)
  return `<table class="timings"><thead><tr><th>stage (ms per question)</th><th>p50</th><th>p99</th><th>mean</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
}

function breakdownTable(breakdown: readonly Breakdown[]): string {
  const rows = breakdown.map((b) => `<tr><th>${escapeHtml(b.bucket)}</th><td>${b.count}</td><td>${b.count === 0 ? '–' : pct(b.meanF1)}</td></tr>`)
  return `<table class="breakdown"><thead><tr><th>gold answers</th><th>questions</th><th>mean F1 answer</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
}

function goldHtml(rec: AmbigNqRecord): string {
  const items = rec.annotations.map((ann, i) => {
    const head = `<span class="ann">annotation ${i + 1}</span>`
    if (ann.type === 'singleAnswer') return `<li>${head} one answer: ${aliases(ann.answer)}</li>`
    const pairs = ann.qaPairs.map((p) => `<li>${aliases(p.answer)} <span class="q">— ${escapeHtml(p.question)}</span></li>`)
    return `<li>${head} ${ann.qaPairs.length} answers<ul>${pairs.join('')}</ul></li>`
  })
  return `<ul class="gold">${items.join('')}</ul>`
}

function aliases(list: readonly string[]): string {
  return list.map((a) => `<b>${escapeHtml(a)}</b>`).join(' <span class="or">or</span> ')
}

function oursHtml(done: ProgressRecord | undefined): string {
  if (!done || done.answers.length === 0) return '<p class="none">no answer</p>'
  const rows = done.answers.map((a) =>
    `<tr><td><b>${escapeHtml(a.answer)}</b></td><td>${escapeHtml(a.question)}</td><td class="num">${escapeHtml(a.confidence.toFixed(2))}</td><td class="ids">${escapeHtml(a.evidence.join(', ') || '–')}</td></tr>`)
  return `<table class="ours"><thead><tr><th>answer</th><th>disambiguated question</th><th>confidence</th><th>evidence</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
}

function passagesHtml(done: ProgressRecord | undefined, passages: ReadonlyMap<string, PassageRecord>): string {
  if (!done || done.read.length === 0) return ''
  const evidence = new Set(done.answers.flatMap((a) => a.evidence))
  const items = done.read.map((id, i) => {
    const p = passages.get(id)
    const cls = evidence.has(id) ? ' class="evidence"' : ''
    if (!p) return `<li${cls}><span class="pid">[${escapeHtml(id)}]</span> <i>passage text not recorded</i></li>`
    return `<li${cls}><span class="pid">${i + 1}. [${escapeHtml(id)}]</span> <b>${escapeHtml(p.title)}</b>: ${escapeHtml(p.text)}</li>`
  })
  return `<details><summary>${done.read.length} passages read${evidence.size > 0 ? ' (evidence highlighted)' : ''}</summary><ol class="passages">${items.join('')}</ol></details>`
}

function exampleHtml(rank: number, rec: AmbigNqRecord, f1: number, done: ProgressRecord | undefined, passages: ReadonlyMap<string, PassageRecord>): string {
  return `<section class="example">
<h3><span class="rank">#${rank}</span> ${escapeHtml(rec.question)}</h3>
<p class="meta">id ${escapeHtml(rec.id)} · F1 answer ${pct(f1)} · ${goldAnswerCount(rec)} gold answer${goldAnswerCount(rec) === 1 ? '' : 's'}${isMultiAnswer(rec) ? ' · multi' : ''}${done ? ` · ${ms(done.timings.totalMs)} ms` : ''}</p>
<div class="cols"><div><h4>gold</h4>${goldHtml(rec)}</div><div><h4>ours</h4>${oursHtml(done)}</div></div>
${passagesHtml(done, passages)}
</section>`
}

export const CSS = `
*{box-sizing:border-box}
body{margin:0;padding:24px 32px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2933;background:#f5f7fa}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 10px;border-bottom:2px solid #d9dee3;padding-bottom:4px}
h3{font-size:15px;margin:0 0 4px}
h4{font-size:12px;text-transform:uppercase;letter-spacing:.05em;color:#52606d;margin:6px 0}
.sub{color:#52606d;margin:0 0 12px}
table{border-collapse:collapse;background:#fff;margin:6px 0}
th,td{border:1px solid #d9dee3;padding:4px 10px;text-align:left;vertical-align:top}
thead th{background:#e4e7eb}
table.metrics td,table.timings td,table.breakdown td{text-align:right;font-variant-numeric:tabular-nums}
td.note{text-align:left!important;color:#52606d}
.row{display:flex;flex-wrap:wrap;gap:20px;align-items:flex-start;margin-top:10px}
.card{background:#fff;border:1px solid #d9dee3;border-radius:6px;padding:10px 12px}
.example{background:#fff;border:1px solid #d9dee3;border-radius:6px;padding:12px 14px;margin:0 0 12px}
.meta{color:#52606d;margin:0 0 6px;font-size:12px}
.rank{color:#9aa5b1}
.cols{display:grid;grid-template-columns:minmax(0,2fr) minmax(0,3fr);gap:18px}
ul.gold{margin:0;padding-left:18px}
.ann{color:#52606d;font-size:12px}
.q{color:#52606d}
.or{color:#9aa5b1;font-size:12px}
table.ours{width:100%;font-size:13px}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.ids{font-size:11px;color:#52606d;word-break:break-all}
.none{color:#b44;font-style:italic;margin:4px 0}
details{margin-top:8px}
summary{cursor:pointer;color:#3b6fa0}
ol.passages{font-size:12px;color:#323f4b;padding-left:20px}
ol.passages li{margin:4px 0}
ol.passages li.evidence{background:#fff6d6}
.pid{color:#9aa5b1;font-size:11px}
pre{background:#fff;border:1px solid #d9dee3;padding:10px;overflow:auto;font-size:12px}
`

/** The reliability diagram of the returned answers' confidence and the ambiguity ROC curve. */
function probabilitySection(records: ReportInput['records'], done: ReportInput['done'], m: EvalMetrics): string {
  const c = m.confidence
  const a = m.ambiguity
  const text = `<p class="sub">${c.answers} answers returned, ${pct(c.correctShare)}% of them correct (matching a gold answer after the metric's normalisation); mean confidence ${c.meanConfidence.toFixed(3)}, expected calibration error (10 bins) ${c.ece.toFixed(3)}, Brier ${c.brier.toFixed(3)}${
    m.readerConfidence ? ` (the reader's own probabilities before calibration: ECE ${m.readerConfidence.ece.toFixed(3)}, Brier ${m.readerConfidence.brier.toFixed(3)})` : ''}. ${
    a ? `Ambiguity: ${a.questions} questions, ${pct(a.multiShare)}% multi; AUROC ${a.auroc.toFixed(3)}, accuracy of P &gt; 0.5 ${pct(a.accuracy)}%.` : 'No ambiguity detector in this run (reader.calibration empty).'}</p>`
  const charts = [`<div class="card">${reliabilityChart(reliabilityBins(answerPoints(records, done)), c.ece)}</div>`]
  if (a) charts.push(`<div class="card">${rocChart(rocCurve(ambiguityPoints(records, done)), a.auroc)}</div>`)
  return `${text}\n<div class="row">${charts.join('')}</div>`
}

export function renderReport(input: ReportInput): string {
  const { records, done, passages, perQuestion, metrics } = input
  const f1 = (id: string) => perQuestion[id]?.['F1 answer'] ?? 0
  const breakdown = breakdownByGoldAnswers(records, perQuestion)
  const bins = f1Histogram(records.map((r) => f1(r.id)))
  const worstCount = Math.min(input.worst ?? 30, records.length)
  const worst = records
    .map((rec, order) => ({ rec, order, f1: f1(rec.id) }))
    .sort((a, b) => a.f1 - b.f1 || a.order - b.order)
    .slice(0, worstCount)
  const run = metrics.run
  const cfg = metrics.config
  return htmlPage(`AmbigNQ evaluation: ${escapeHtml(basename(input.dataPath))}, ${records.length} questions`, `<h1>AmbigNQ evaluation</h1>
<p class="sub">${escapeHtml(basename(input.dataPath))} · ${records.length} questions (${metrics.n_multi} multi) · retriever ${escapeHtml(cfg.retriever)}, reranker ${escapeHtml(typeof cfg.reranker === 'object' && cfg.reranker !== null ? basename(String((cfg.reranker as { model: unknown }).model)) : 'none')}, retrieve ${escapeHtml(cfg.retrieve)}, read ${escapeHtml(cfg.read)} · ${run.answeredNow} answered in this run${run.resumed > 0 ? `, ${run.resumed} resumed` : ''} · ${escapeHtml(new Date().toISOString().slice(0, 19).replace('T', ' '))} UTC</p>

<h2>Metrics</h2>
<div class="row">
<div>${metricsTable(metrics)}</div>
<div>${timingTable(metrics)}</div>
</div>

<h2>Confidence and ambiguity</h2>
${probabilitySection(records, done, metrics)}

<h2>By number of gold answers</h2>
<p class="sub">A question's number of gold answers is the most any of its annotations gives (a single-answer annotation counts 1).</p>
${breakdownTable(breakdown)}
<div class="row">
<div class="card">${breakdownChart(breakdown)}</div>
<div class="card">${histogramChart(bins)}</div>
</div>

<h2>Worst ${worstCount} examples (lowest F1 answer)</h2>
${worst.map((w, i) => exampleHtml(i + 1, w.rec, w.f1, done.get(w.rec.id), passages)).join('\n')}

<h2>Configuration</h2>
<pre>${escapeHtml(JSON.stringify(cfg, null, 2))}</pre>`)
}

/** One self-contained page (the project's reports): the stylesheet inline, and a Content-Security-Policy that forbids scripts. `title` is HTML, escaped by the caller. */
export function htmlPage(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>${CSS}</style>
</head>
<body>
${body}
</body>
</html>
`
}
