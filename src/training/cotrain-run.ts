// A co-training run from its config (train/configs/cotrain-*.json), as `ambigqa train cotrain`
// and the `startCoTraining` job run it: the committees and their votes (Python,
// train/ambigqa_train/cotrain.py), each member exported to ONNX, eval-300 F1 answer of one member,
// of every committee as an ensemble (committee 1 is the plain ensemble, the last the co-trained
// one), and report.html. Every step skips what an earlier start finished, so a killed run is
// started again with the same command.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import type { Config } from '../../core/config.js'
import { ERR_COTRAIN_CONFIG, ERR_USAGE } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import { evaluateAmbigNq } from '../eval/eval-ambignq.js'
import type { EvalMetrics } from '../eval/eval-records.js'
import { openPipeline } from '../pipeline/open-pipeline.js'
import { renderCoTrainingReport, type CoTrainingResults, type EvalResult, type SilverSummary } from './cotrain-report.js'
import { PROJECT_ROOT } from '../../core/paths.js'
import { runPythonLines } from '../../core/python-process.js'

export interface CoTrainingConfig {
  out: string
  committee: number
  iterations: number
  steps: number
  partial_limit: number
  /** eval-300 (or any AmbigNQ file and id list) after each committee; absent: no evaluation. */
  eval?: { data: string; ids?: string; store?: string; limit?: number }
}

export interface CoTrainingProgress { stage: string; fraction: number | null; message: string }

export interface CoTrainingEnvironment {
  config: Config
  log: Logger
  signal?: AbortSignal
  onProgress?: (progress: CoTrainingProgress) => void
  /** cpu, cuda or auto: where the members train and vote (cotrain.py's --device); absent: the config's "device", else cpu. */
  device?: string
}

/** train/configs/<name>.json for a job's config name; only the project's cotrain-* configs. */
export function coTrainingConfigFile(name: string): string {
  const file = join(PROJECT_ROOT, 'train/configs', `${name}.json`)
  if (!/^cotrain-[a-z0-9][a-z0-9-]{0,63}$/.test(name) || !existsSync(file)) throw ERR_COTRAIN_CONFIG(name)
  return file
}

export function readCoTrainingConfig(file: string): CoTrainingConfig {
  let raw: unknown
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'))
  } catch (error) {
    throw ERR_USAGE.withCause(error, `co-training config ${file} is missing or not JSON`, 'Pass --config train/configs/cotrain-<name>.json')
  }
  const cfg = raw as Partial<CoTrainingConfig>
  for (const key of ['committee', 'iterations', 'steps', 'partial_limit'] as const) {
    if (!Number.isInteger(cfg[key]) || (cfg[key] as number) < 1) throw ERR_USAGE(`co-training config ${file}: "${key}" must be a whole number from 1`, 'See train/configs/cotrain-e5.json')
  }
  if (typeof cfg.out !== 'string' || cfg.out === '') throw ERR_USAGE(`co-training config ${file}: "out" must name a folder`, 'See train/configs/cotrain-e5.json')
  return cfg as CoTrainingConfig
}

/**
 * The share of the run done when the Python side prints `event`: trainings count one unit each,
 * a committee's votes one unit per member (evaluations are not counted: they follow at the end).
 */
export class CoTrainingTracker {
  private unit = 0
  private within = 0
  private readonly total: number

  constructor(private readonly cfg: CoTrainingConfig) {
    this.total = (cfg.iterations + 1) * cfg.committee + cfg.iterations * cfg.committee
  }

  describe(event: Record<string, unknown>): CoTrainingProgress | undefined {
    const { committee: c } = this.cfg
    const fraction = () => Math.min(1, (this.unit + this.within) / this.total)
    if (event.stage === 'train') {
      const k = event.committee as number
      const m = event.member as number
      // Trainings before committee k: (k - 1) C; votes before it: (k - 1) C.
      this.unit = 2 * (k - 1) * c + m
      this.within = 0
      return { stage: 'train', fraction: fraction(), message: `committee ${k} of ${this.cfg.iterations + 1}, member ${m + 1} of ${c}: training on ${event.rows} examples` }
    }
    if (typeof event.step === 'number' && typeof event.of === 'number') {
      this.within = event.step / event.of
      return { stage: 'train', fraction: fraction(), message: `step ${event.step} of ${event.of}, ${event.examples_per_s} examples/s, ETA ${event.eta_s} s` }
    }
    if (event.stage === 'predict') {
      const [k, m] = String(event.member).split('.').map(Number) as [number, number]
      this.unit = 2 * (k - 1) * c + c + m
      this.within = (event.done as number) / Math.max(1, event.total as number)
      return { stage: 'vote', fraction: fraction(), message: `committee ${k}, member ${m + 1}: ${event.done} of ${event.total} examples, ${event.examples_per_s} examples/s, ETA ${event.eta_s} s` }
    }
    if (event.stage === 'vote') {
      return { stage: 'vote', fraction: fraction(), message: `iteration ${event.iteration}: ${event.multi} multi-answer, ${event.single} single-answer, ${event.wait} waiting` }
    }
    return undefined
  }
}

const committeeDir = (out: string, k: number) => join(out, `committee-${k}`)
const onnxDir = (out: string, k: number) => join(committeeDir(out, k), 'onnx')

/** Each member of committee k in ONNX (int8 too), and the committee.json that makes the folder a reader. */
async function exportCommittee(cfg: CoTrainingConfig, k: number, env: CoTrainingEnvironment): Promise<string> {
  const dir = onnxDir(cfg.out, k)
  const members: string[] = []
  for (let c = 0; c < cfg.committee; c++) {
    const target = join(dir, `member-${c}`)
    members.push(`member-${c}`)
    if (existsSync(join(target, 'config.json'))) continue
    const tmp = `${target}.tmp`
    rmSync(tmp, { recursive: true, force: true })
    env.onProgress?.({ stage: 'export', fraction: null, message: `exporting committee ${k}, member ${c + 1} to ONNX` })
    await runPythonLines('export_onnx', ['extractive', join(committeeDir(cfg.out, k), `member-${c}`, 'checkpoint'), tmp], (line) => env.log.debug({ line }, 'export'), env.signal ? { signal: env.signal } : {})
    // Exported beside the target and renamed when the export has exited: a member folder is whole.
    renameSync(tmp, target)
  }
  writeFileSync(join(dir, 'committee.json'), `${JSON.stringify({ members }, null, 1)}\n`)
  return dir
}

async function evaluate(cfg: CoTrainingConfig, name: string, reader: string, env: CoTrainingEnvironment): Promise<EvalResult> {
  const ev = cfg.eval!
  const outDir = join(cfg.out, 'eval', name)
  const metricsFile = join(outDir, 'metrics.json')
  if (!existsSync(metricsFile)) {
    env.onProgress?.({ stage: 'eval', fraction: null, message: `evaluating ${name} (${relative(process.cwd(), reader) || reader})` })
    const config: Config = { ...env.config, ...(ev.store ? { store: ev.store } : {}), reader: { ...env.config.reader, kind: 'extractive', extractive: resolve(reader) } }
    await evaluateAmbigNq(
      { dataPath: ev.data, ...(ev.ids ? { idsPath: ev.ids } : {}), outDir, retrieve: config.reader.retrieve, read: config.reader.read, concurrency: config.reader.maxBatch, ...(ev.limit ? { limit: ev.limit } : {}) },
      { config, log: env.log, openPipeline: () => openPipeline(config, env.log) },
    )
  }
  const m = JSON.parse(readFileSync(metricsFile, 'utf8')) as EvalMetrics
  return { name, reader, f1All: m['F1 answer'].all, f1Multi: m['F1 answer'].multi ?? null, n: m.n_all, seconds: m.run.seconds }
}

function silverSummary(out: string, k: number): SilverSummary {
  const rows = readFileSync(join(out, `silver-${k}.jsonl`), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { decision: string; votes: Record<string, number>; members: (string[] | null)[] })
  const count = (d: string) => rows.filter((r) => r.decision === d).length
  const topVote: Record<string, number> = {}
  for (const r of rows) {
    const top = String(Math.max(0, ...Object.values(r.votes)))
    topVote[top] = (topVote[top] ?? 0) + 1
  }
  const abstentions = rows.reduce((s, r) => s + r.members.filter((m) => m === null).length, 0)
  return { iteration: k, multi: count('multi'), single: count('single'), wait: count('wait'), topVote, abstentions }
}

export async function runCoTraining(configFile: string, env: CoTrainingEnvironment): Promise<CoTrainingResults> {
  const cfg = readCoTrainingConfig(configFile)
  const started = performance.now()
  const tracker = new CoTrainingTracker(cfg)
  mkdirSync(cfg.out, { recursive: true })
  await runPythonLines('cotrain', ['run', '--config', configFile, ...(env.device ? ['--device', env.device] : [])], (line) => {
    if (!line.startsWith('{')) return env.log.debug({ line }, 'cotrain')
    const progress = tracker.describe(JSON.parse(line) as Record<string, unknown>)
    if (progress) env.onProgress?.(progress)
  }, { env: { OMP_NUM_THREADS: '1' }, onError: (line) => env.log.debug({ line }, 'cotrain stderr'), ...(env.signal ? { signal: env.signal } : {}) })
  const evals: EvalResult[] = []
  const committees = cfg.iterations + 1
  for (let k = 1; k <= committees; k++) {
    const dir = await exportCommittee(cfg, k, env)
    if (!cfg.eval) continue
    if (k === 1) evals.push(await evaluate(cfg, 'single', join(dir, 'member-0'), env))
    evals.push(await evaluate(cfg, `committee-${k}`, dir, env))
  }
  const results: CoTrainingResults = {
    config: configFile, committee: cfg.committee, iterations: cfg.iterations, steps: cfg.steps, partial: cfg.partial_limit,
    silver: Array.from({ length: cfg.iterations }, (_, i) => silverSummary(cfg.out, i + 1)), evals,
    secondsThisStart: Math.round((performance.now() - started) / 1000),
  }
  writeFileSync(join(cfg.out, 'results.json'), `${JSON.stringify(results, null, 1)}\n`)
  writeFileSync(join(cfg.out, 'report.html'), renderCoTrainingReport(results))
  env.onProgress?.({ stage: 'done', fraction: 1, message: `report: ${join(cfg.out, 'report.html')}` })
  return results
}
