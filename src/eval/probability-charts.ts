// The report's two probability charts, inline SVG on a unit square: the reliability diagram
// (accuracy of the answers in each confidence bin against the bin's mean confidence; a calibrated
// model lies on the diagonal) and the ambiguity ROC curve. Their text is their own (fixed words and
// numbers), nothing from the data, so nothing needs escaping.
import type { ReliabilityBin } from './confidence-metrics.js'

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"'
const SIZE = 300
const LEFT = 52
const TOP = 34
const PLOT = 220

const sx = (v: number) => (LEFT + v * PLOT).toFixed(1)
const sy = (v: number) => (TOP + PLOT - v * PLOT).toFixed(1)

/** Axes, grid and the diagonal of a unit square plot, around `body`. */
function unitSquare(title: string, xLabel: string, yLabel: string, body: string[]): string {
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${SIZE + 20}" height="${SIZE}" viewBox="0 0 ${SIZE + 20} ${SIZE}" role="img" aria-label="${title}" ${FONT}>`]
  parts.push(`<text x="${LEFT + PLOT / 2}" y="20" text-anchor="middle" font-size="14" font-weight="600" fill="#1f2933">${title}</text>`)
  for (let i = 0; i <= 5; i++) {
    const v = i / 5
    parts.push(`<line x1="${sx(0)}" x2="${sx(1)}" y1="${sy(v)}" y2="${sy(v)}" stroke="#d9dee3"/><line x1="${sx(v)}" x2="${sx(v)}" y1="${sy(0)}" y2="${sy(1)}" stroke="#eef1f4"/>`)
    parts.push(`<text x="${LEFT - 6}" y="${sy(v)}" dy="4" text-anchor="end" font-size="11" fill="#52606d">${v.toFixed(1)}</text>`)
    parts.push(`<text x="${sx(v)}" y="${TOP + PLOT + 15}" text-anchor="middle" font-size="11" fill="#52606d">${v.toFixed(1)}</text>`)
  }
  parts.push(`<line x1="${sx(0)}" y1="${sy(0)}" x2="${sx(1)}" y2="${sy(1)}" stroke="#9aa5b1" stroke-dasharray="4 3"/>`)
  parts.push(`<text x="${LEFT + PLOT / 2}" y="${TOP + PLOT + 34}" text-anchor="middle" font-size="12" fill="#52606d">${xLabel}</text>`)
  parts.push(`<text transform="translate(14 ${TOP + PLOT / 2}) rotate(-90)" text-anchor="middle" font-size="12" fill="#52606d">${yLabel}</text>`)
  parts.push(...body, '</svg>')
  return parts.join('\n')
}

/** Bars of accuracy per confidence bin, a dot at each bin's mean confidence; empty bins left out. */
export function reliabilityChart(bins: readonly ReliabilityBin[], ece: number): string {
  const body = bins.filter((b) => b.count > 0).flatMap((b) => [
    `<rect x="${sx(b.lo)}" y="${sy(b.accuracy)}" width="${((b.hi - b.lo) * PLOT - 2).toFixed(1)}" height="${(b.accuracy * PLOT).toFixed(1)}" fill="#3b82c4" opacity="0.75"><title>confidence ${b.lo.toFixed(1)}–${b.hi.toFixed(1)}: ${b.count} answers, ${(100 * b.accuracy).toFixed(1)}% correct, mean confidence ${b.meanConfidence.toFixed(3)}</title></rect>`,
    `<circle cx="${sx(b.meanConfidence)}" cy="${sy(b.accuracy)}" r="3" fill="#e08a2e"/>`,
    `<text x="${sx((b.lo + b.hi) / 2)}" y="${TOP + PLOT - 4}" text-anchor="middle" font-size="9" fill="#fff">${b.count}</text>`,
  ])
  return unitSquare(`Reliability (ECE ${Number.isNaN(ece) ? '–' : ece.toFixed(3)})`, 'confidence', 'share correct', body)
}

export function rocChart(curve: readonly { fpr: number; tpr: number }[], area: number): string {
  const path = curve.map((p, i) => `${i === 0 ? 'M' : 'L'}${sx(p.fpr)} ${sy(p.tpr)}`).join(' ')
  return unitSquare(`Ambiguity ROC (AUROC ${Number.isNaN(area) ? '–' : area.toFixed(3)})`, 'false positive rate (single called multi)', 'true positive rate (multi found)', [
    `<path d="${path}" fill="none" stroke="#3b82c4" stroke-width="2"/>`,
  ])
}
