import assert from 'node:assert/strict'
import test from 'node:test'
import { ambiguityPoints, answerPoints, auroc, brierScore, expectedCalibrationError, reliabilityBins, rocCurve } from '../src/eval/confidence-metrics.js'
import type { ProgressRecord } from '../src/eval/eval-records.js'
import type { AmbigNqRecord } from '../src/eval/score-ambignq.js'

const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} ≠ ${b}`)

test('ECE weighs each bin\'s |accuracy − mean confidence| by its count; Brier is the mean squared error', () => {
  // Bin 0.9: two answers at 0.9, one right (gap 0.4); bin 0.2: two at 0.2, both wrong (gap 0.2).
  const points = [{ p: 0.9, positive: true }, { p: 0.9, positive: false }, { p: 0.2, positive: false }, { p: 0.2, positive: false }]
  close(expectedCalibrationError(points), (2 * 0.4 + 2 * 0.2) / 4)
  close(brierScore(points), (0.01 + 0.81 + 0.04 + 0.04) / 4)
  const bins = reliabilityBins(points)
  assert.equal(bins.length, 10)
  assert.equal(bins[9]!.count, 2)
  assert.equal(bins[2]!.count, 2)
  // A confidence of exactly 1 belongs to the last bin, not an eleventh.
  assert.equal(reliabilityBins([{ p: 1, positive: true }])[9]!.count, 1)
  close(expectedCalibrationError([{ p: 1, positive: true }, { p: 0, positive: false }]), 0)
})

test('AUROC: 1 when every positive outranks every negative, 0.5 for ties, NaN with one class', () => {
  close(auroc([{ p: 0.9, positive: true }, { p: 0.8, positive: true }, { p: 0.1, positive: false }]), 1)
  close(auroc([{ p: 0.5, positive: true }, { p: 0.5, positive: false }]), 0.5)
  // One of the two (positive, negative) pairs is ordered right.
  close(auroc([{ p: 0.9, positive: true }, { p: 0.7, positive: false }, { p: 0.3, positive: true }, { p: 0.1, positive: false }]), 0.75)
  assert.ok(Number.isNaN(auroc([{ p: 0.5, positive: true }])))
  const curve = rocCurve([{ p: 0.9, positive: true }, { p: 0.1, positive: false }])
  assert.deepEqual(curve, [{ fpr: 0, tpr: 0 }, { fpr: 0, tpr: 1 }, { fpr: 1, tpr: 1 }])
})

test('points from progress records: correct under the metric\'s normalisation; multi = no singleAnswer annotation', () => {
  const records: AmbigNqRecord[] = [
    { id: 'a', question: 'q', annotations: [{ type: 'singleAnswer', answer: ['The Beatles'] }] },
    { id: 'b', question: 'q', annotations: [{ type: 'multipleQAs', qaPairs: [{ question: 'x', answer: ['1990'] }, { question: 'y', answer: ['1991'] }] }] },
  ] as AmbigNqRecord[]
  const line = (id: string, answers: [string, number][], ambiguity?: number): ProgressRecord => ({
    id, question: 'q', answers: answers.map(([answer, confidence]) => ({ answer, question: '', confidence, evidence: [] })), read: [], timings: { retrievalMs: 0, totalMs: 0 }, ...(ambiguity !== undefined ? { ambiguity } : {}),
  })
  const done = new Map([['a', line('a', [['beatles', 0.8], ['Elvis', 0.3]], 0.2)], ['b', line('b', [['1991', 0.6]], 0.7)]])
  assert.deepEqual(answerPoints(records, done), [{ p: 0.8, positive: true }, { p: 0.3, positive: false }, { p: 0.6, positive: true }])
  assert.deepEqual(ambiguityPoints(records, done), [{ p: 0.2, positive: false }, { p: 0.7, positive: true }])
  done.set('b', line('b', []))
  assert.deepEqual(ambiguityPoints(records, done), [{ p: 0.2, positive: false }])
})
