// `eval ambignq --answers-from RUN`: a finished run's answer sets (answers, confidences, evidence,
// the passages read) handed to question disambiguation as the decider handed them, so that only
// that stage runs again. Two QD models are then compared on the same answers, in the time of
// their rewrites alone.
import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { ERR_USAGE } from '../../core/errors.js'
import type { RetrievedPassage } from '../../core/retriever.js'
import type { Read } from '../../core/stages.js'
import type { PassageRecord, ProgressRecord } from './eval-records.js'
import { differences, PASSAGES_FILE, PROGRESS_FILE, readJsonLines, SETTINGS_FILE } from './run-folder.js'
import type { AmbigNqRecord } from './score-ambignq.js'

/** The reader's settings that only question disambiguation reads (or only its speed): the source
 * run may differ from this one in these alone. */
const QD_ONLY = new Set(['qd', 'qdMaxInputTokens', 'qdCandidates', 'qdEvidenceVocabulary', 'qdLookahead', 'lmThreads'])

/** What settings.json records for the answers themselves: the run's settings less QD's. */
function answerSettings(settings: Record<string, unknown>): Record<string, unknown> {
  const { disambiguate: _d, answersFrom: _a, reader, ...rest } = settings
  const kept = Object.entries((reader ?? {}) as Record<string, unknown>).filter(([k]) => !QD_ONLY.has(k))
  return { ...rest, reader: Object.fromEntries(kept) }
}

/**
 * Each record's answer set as the run in `dir` decided it, as a `Read` for question
 * disambiguation. Refused (AMBIGQA_ERR_USAGE) when `dir` is no run folder, when its answers were
 * made with other settings than `settings` (QD's aside), or when it has not answered every record.
 */
export function answersFrom(dir: string, settings: Record<string, unknown>, records: readonly AmbigNqRecord[]): (record: AmbigNqRecord) => Read {
  const from = resolve(dir)
  const settingsPath = join(from, SETTINGS_FILE)
  if (!existsSync(settingsPath) || !existsSync(join(from, PROGRESS_FILE))) {
    throw ERR_USAGE(`--answers-from ${dir} is not a run folder of \`eval ambignq\` (no ${SETTINGS_FILE} and ${PROGRESS_FILE})`, 'Give the --out folder of a finished run')
  }
  const diffs = differences(answerSettings(JSON.parse(readFileSync(settingsPath, 'utf8')) as Record<string, unknown>), answerSettings(settings))
  if (diffs.length > 0) {
    throw ERR_USAGE(`--answers-from ${dir}: its answers were made with other settings (${diffs.slice(0, 5).join('; ')})`, 'Run with the settings of that run (only question disambiguation\'s may differ)')
  }
  const runs = new Map(readJsonLines<ProgressRecord>(join(from, PROGRESS_FILE)).items.map((r) => [r.id, r]))
  const missing = records.filter((r) => !runs.has(r.id))
  if (missing.length > 0) {
    throw ERR_USAGE(`--answers-from ${dir} has not answered ${missing.length} of the ${records.length} questions (${missing.slice(0, 3).map((r) => r.id).join(', ')}${missing.length > 3 ? ', ...' : ''})`,
      'Finish that run first (its own command resumes it), or give the same --ids and --limit')
  }
  const passages = new Map(readJsonLines<PassageRecord>(join(from, PASSAGES_FILE)).items.map((p) => [p.id, p]))
  const passage = (id: string): RetrievedPassage => {
    const p = passages.get(id)
    if (!p) throw ERR_USAGE(`--answers-from ${dir}: passage ${id} is not in its ${PASSAGES_FILE}`, 'Give a run folder as `eval ambignq` wrote it')
    // The score is the retriever's, which the run does not keep and no later stage reads.
    return { ...p, score: 0 }
  }
  return (record) => {
    const r = runs.get(record.id)!
    const reranked = r.read.map(passage)
    // Its own time for every stage but disambiguation's, which this run measures again.
    const { disambiguateMs, ...timings } = r.timings
    return {
      question: r.question, retrieve: reranked.length, read: reranked.length, passages: reranked, reranked,
      answers: r.answers.map((a) => ({ answer: a.answer, confidence: a.confidence, ...(a.readerProbability !== undefined ? { readerProbability: a.readerProbability } : {}), evidence: a.evidence.map(passage) })),
      ...(r.ambiguity !== undefined ? { ambiguity: r.ambiguity } : {}),
      timings: { ...timings, totalMs: timings.totalMs - (disambiguateMs ?? 0) },
    }
  }
}
