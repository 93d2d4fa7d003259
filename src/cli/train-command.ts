// `ambigqa data build` and `ambigqa train ...`: thin wrappers over the Python package in train/
// (run in .venv-train, created by scripts/train-env). Serving never needs Python.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Command } from 'commander'
import { buildIndex } from '../../index/build-index.js'
import { Bm25SqliteRetriever } from '../../retriever/bm25-sqlite-retriever.js'
import { PassageStore } from '../../retriever/passage-store.js'
import { loadConfig } from '../../core/config.js'
import { ERR_USAGE } from '../../core/errors.js'
import { createLogger } from '../../core/log.js'
import { EVAL_300_STORE, EVAL_ASQA_STORE, eval300Sources } from '../eval/eval-300.js'
import { openRetriever } from '../../retriever/open-retriever.js'
import { ExtractiveReader, extractiveSettings } from '../../reader/extractive-reader.js'
import { mineHardNegatives } from '../training/hard-negatives.js'
import { writeCalibrationData } from '../training/calibration-data.js'
import { CandidateSupport } from '../../reader/candidate-support.js'
import { DenseEncoder } from '../../retriever/dense-encoder.js'
import { runCoTraining } from '../training/cotrain-run.js'
import { pythonCommand } from '../../core/python-process.js'
import { contextFor, parseNumber } from './context.js'

/** Extractive reader groups: questions per source by default (SQuAD has 86k, NQ-open gold 2.6k) and negatives each. */
const READER_PER_SOURCE = 24_000
const READER_NEGATIVES = 4

/** Run `python -m ambigqa_train.<module> ...args` in the training venv, output shown; returns its exit code. */
export function runPython(module: string, args: string[]): number {
  const command = pythonCommand(module, args)
  return spawnSync(command.python, command.args, { stdio: 'inherit', env: command.env }).status ?? 1
}

/** The devices a trainer takes (train/ambigqa_train/common.py pick_device). */
const TRAIN_DEVICES = ['cpu', 'cuda', 'auto'] as const
const DEVICE_HELP = 'cpu, cuda or auto (cuda when there is one); default: the config\'s device, else cpu'

/** `--device` checked here, so a typo is a usage error before Python starts; the args to pass on. */
function deviceArgs(device: string | undefined): string[] {
  if (device === undefined) return []
  if (!(TRAIN_DEVICES as readonly string[]).includes(device)) throw ERR_USAGE(`--device ${device} is not a device`, 'Give cpu, cuda or auto')
  return ['--device', device]
}

function exitWith(code: number): void {
  if (code !== 0) process.exitCode = code
}

export function registerTrainCommands(program: Command): void {
  const data = program.command('data').description('training data (Python, .venv-train)')
  data
    .command('build')
    .description('build the training sets (JSON Lines) from ../shared/data, never from an eval-300 question')
    .option('--data <dir>', 'shared data folder', '../shared/data')
    .option('--out <dir>', 'output folder', 'data/train')
    .option('--seed <n>', 'seed', '13')
    .option('--store <dir>', 'the BM25 store hard negatives are mined from (built from the shared data when absent)', EVAL_300_STORE)
    .option('--negatives <n>', 'BM25 hard negatives per reranker question', parseNumber('--negatives'), 3)
    .option('--depth <n>', 'BM25 depth searched for them', parseNumber('--depth'), 30)
    .option('--per-source <n>', 'reranker questions mined per source', parseNumber('--per-source'), 4000)
    .option('--reader-per-source <n>', 'extractive reader questions mined per source (90000 takes every SQuAD one)', parseNumber('--reader-per-source'), READER_PER_SOURCE)
    .action(async (o: { data: string; out: string; seed: string; store: string; negatives: number; depth: number; perSource: number; readerPerSource: number }, command: Command) => {
      const code = runPython('data', ['build', '--data', o.data, '--out', o.out, '--seed', o.seed])
      if (code !== 0) return exitWith(code)
      const ctx = contextFor(command, { store: o.store })
      if (!existsSync(join(o.store, 'passages.sqlite'))) {
        ctx.log.info({ store: o.store }, 'building the eval-300 store to mine hard negatives from')
        await buildIndex({ store: o.store, sources: eval300Sources(o.data), onError: 'fail', batchSize: ctx.config.ingest.batchSize, segmentSize: ctx.config.ingest.segmentSize, workers: ctx.config.ingest.workers, log: ctx.log })
      }
      const retriever = new Bm25SqliteRetriever(PassageStore.openReadOnly(o.store), ctx.config.bm25)
      try {
        for (const part of ['train', 'heldout']) {
          const r = await mineHardNegatives({
            retriever, input: join(o.out, `reranker-${part}.jsonl`), output: join(o.out, `reranker-groups-${part}.jsonl`),
            depth: o.depth, negatives: o.negatives, perSource: part === 'train' ? o.perSource : undefined, log: ctx.log,
          })
          ctx.out(`reranker-groups-${part}.jsonl: ${r.groups} questions with ${o.negatives} BM25 hard negatives each (${r.skipped} without enough)`)
        }
        // The extractive reader trains on the same kind of groups, from many more questions (its
        // held-out groups are the reranker's: the same questions, as that file is not capped).
        const r = await mineHardNegatives({
          retriever, input: join(o.out, 'reranker-train.jsonl'), output: join(o.out, 'reader-groups-train.jsonl'),
          depth: o.depth, negatives: READER_NEGATIVES, perSource: o.readerPerSource, log: ctx.log,
        })
        ctx.out(`reader-groups-train.jsonl: ${r.groups} questions with ${READER_NEGATIVES} BM25 hard negatives each (${r.skipped} without enough)`)
      } finally {
        await retriever.close()
      }
      // The stage-2 mix reads the hard-negative groups, so it is written last.
      exitWith(runPython('data', ['mix', '--out', o.out, '--seed', o.seed]))
    })
  const train = program.command('train').description('train and export models (Python, .venv-train)')
  for (const [name, module] of [['seq2seq', 'train_seq2seq'], ['reranker', 'train_reranker']] as const) {
    train
      .command(name)
      .description(`train the ${name} from a config file (train/configs/*.json); resumes from its checkpoint`)
      // --config is the program's own option (commander gives it to the program wherever it
      // stands), so the training config file is read from there.
      .option('--config <file>', 'training config file (train/configs/*.json)')
      .option('--seed <n>', 'seed', '0')
      .option('--device <device>', DEVICE_HELP)
      .action((_o: unknown, command: Command) => {
        const o = command.optsWithGlobals<{ config?: string; seed: string; device?: string }>()
        if (!o.config) throw ERR_USAGE(`ambigqa train ${name} needs a training config`, `Pass --config train/configs/<name>.json`)
        exitWith(runPython(module, ['--config', o.config, '--seed', o.seed, ...deviceArgs(o.device)]))
      })
  }
  train
    .command('extractive')
    .description('train the extractive reader from a config file (train/configs/extractive-*.json); resumes from its checkpoint')
    .option('--config <file>', 'training config file (train/configs/*.json)')
    .option('--seed <n>', 'seed', '0')
    .option('--stop-at <step>', 'stop after this step; the learning-rate schedule stays the config\'s, so a later run continues it')
    .option('--device <device>', DEVICE_HELP)
    .action((_o: unknown, command: Command) => {
      const o = command.optsWithGlobals<{ config?: string; seed: string; stopAt?: string; device?: string }>()
      if (!o.config) throw ERR_USAGE('ambigqa train extractive needs a training config', 'Pass --config train/configs/extractive-<warm start>.json')
      if (o.stopAt !== undefined && !/^[1-9]\d{0,6}$/.test(o.stopAt)) throw ERR_USAGE(`--stop-at ${o.stopAt} is not a step number`, 'Give a whole number of steps, e.g. --stop-at 1200')
      exitWith(runPython('train_extractive', ['train', '--config', o.config, '--seed', o.seed, ...(o.stopAt ? ['--stop-at', o.stopAt] : []), ...deviceArgs(o.device)]))
    })
  train
    .command('calibration-data')
    .description('read the tuning sets with the extractive reader (every candidate, at each passage count) and embed the labelled questions: what `train calibration` fits on')
    .option('--data <dir>', 'shared data folder', '../shared/data')
    .option('--tune-ids <file>', 'AmbigNQ train ids of a tuning set', 'train/splits/reader-tune.txt')
    .option('--tune-dev-ids <file>', 'AmbigNQ dev ids of a tuning set (never eval-300\'s)', 'train/splits/asqa-tune.txt')
    .option('--store <dir>', 'the store holding the tuning sets\' passages (`ambigqa bench corpus --asqa-knowledge`)', EVAL_ASQA_STORE)
    .option('--reads <list>', 'passage counts to write candidates for', '5,10,20')
    .option('--max-candidates <n>', 'candidates kept per question', parseNumber('--max-candidates'), 20)
    .option('--verify-top <n>', 'candidates per question written as answer-verifier pairs (verifier-pairs.jsonl)', parseNumber('--verify-top'), 10)
    .option('--encoder <name>', 'the question-only model\'s sentence encoder (models/encoders)', 'e5-small-v2-int8')
    .option('--out <dir>', 'output folder', 'data/train')
    .option('--questions-only', 'write only ambiguity-questions.jsonl (no store, no reading: a minute)')
    .option('--support', 'add the decoders\' scores of each candidate as the configuration\'s support.* gives them (reader/candidate-support.ts; seconds a question, one --reads count)')
    .action(async (o: { data: string; tuneIds: string; tuneDevIds: string; store: string; reads: string; maxCandidates: number; verifyTop: number; encoder: string; out: string; questionsOnly?: boolean; support?: boolean }, command: Command) => {
      const reads = o.reads.split(',').map(Number)
      if (reads.some((n) => !Number.isInteger(n) || n < 1 || n > 100)) throw ERR_USAGE(`--reads ${o.reads} is not a list of passage counts`, 'Give whole numbers from 1 to 100, comma-separated: --reads 5,10,20')
      if (!Number.isInteger(o.verifyTop) || o.verifyTop < 0 || o.verifyTop > 100) throw ERR_USAGE(`--verify-top ${o.verifyTop} is not a number of candidates`, 'Give a whole number from 0 (no verifier pairs) to 100')
      const ctx = contextFor(command, { store: o.store })
      const r = ctx.config.reader
      const retriever = o.questionsOnly ? undefined : await openRetriever(ctx.config, ctx.log)
      // Every candidate up to --max-candidates: the fit decides the set.
      const reader = o.questionsOnly ? undefined : await ExtractiveReader.load(r.extractive, { precision: r.precision, device: r.device, threads: r.threads, logger: ctx.log }, { ...extractiveSettings(r), candidates: o.maxCandidates })
      const encoder = await DenseEncoder.load(o.encoder, ctx.config.dense.modelsDir, ctx.config.dense.threads, { device: ctx.config.dense.device, logger: ctx.log })
      const s = ctx.config.support
      if (o.support && s.spanLm === '' && s.knowledge === '') throw ERR_USAGE('--support needs a decoder: support.spanLm and support.knowledge are both off', 'Set them (AMBIGQA_SUPPORT_SPAN_LM=assets/models/span-lm, AMBIGQA_SUPPORT_KNOWLEDGE=models/base/gemma-3-270m-q4_k_m.gguf) or drop --support')
      const support = o.support && !o.questionsOnly ? await CandidateSupport.open(s, ctx.log) : undefined
      try {
        const tuneSets = [{ name: 'reader-tune', ids: o.tuneIds, reference: 'train' as const }, { name: 'asqa-tune', ids: o.tuneDevIds, reference: 'dev' as const }]
        const result = await writeCalibrationData({ shared: o.data, tuneSets, out: o.out, ...(retriever && reader ? { retriever, reader } : {}), ...(support ? { support } : {}), encoder, reads, verifyTop: o.verifyTop, retrieve: r.retrieve, log: ctx.log })
        if (reader) ctx.out(`${o.out}/calibration-tune.jsonl: ${result.tune} tuning questions read at ${reads.join(', ')} passages`)
        ctx.out(`${o.out}/ambiguity-questions.jsonl: ${result.questions} questions embedded (${o.encoder})`)
      } finally {
        await encoder.close()
        await support?.close()
        await reader?.close()
        await retriever?.close()
      }
    })
  train
    .command('verifier')
    .description('train the answer verifier, a cross-encoder over each candidate and the words around it, fold by fold on `train calibration-data`\'s verifier-pairs.jsonl (train/configs/verifier.json): out-of-fold logits for `train calibration`, and the served int8 model')
    .option('--config <file>', 'verifier config file', 'train/configs/verifier.json')
    .option('--seed <n>', 'seed', '0')
    .option('--device <device>', DEVICE_HELP)
    .action((_o: unknown, command: Command) => {
      const o = command.optsWithGlobals<{ config?: string; seed: string; device?: string }>()
      exitWith(runPython('train_verifier', ['--config', o.config ?? 'train/configs/verifier.json', '--seed', o.seed, ...deviceArgs(o.device)]))
    })
  train
    .command('calibration')
    .description('fit the answer calibrator and the ambiguity detector (train/configs/calibration.json) on `train calibration-data`\'s files')
    .option('--config <file>', 'fit config file', 'train/configs/calibration.json')
    .option('--seed <n>', 'seed', '0')
    .option('--ambiguity-only', 'replace only the ambiguity detector (the question-only model and the one-answer rule) of the calibration.json the config writes; its answer verifier and set rule stay')
    .action((_o: unknown, command: Command) => {
      const o = command.optsWithGlobals<{ config?: string; seed: string; ambiguityOnly?: boolean }>()
      exitWith(runPython('fit_calibration', ['--config', o.config ?? 'train/configs/calibration.json', '--seed', o.seed, ...(o.ambiguityOnly ? ['--ambiguity-only'] : [])]))
    })
  train
    .command('cotrain')
    .description('democratic co-training (AmbigQA Algorithm 1) from a config file (train/configs/cotrain-*.json): committees, votes, eval, report.html; resumes where it stopped')
    .option('--config <file>', 'co-training config file (train/configs/cotrain-*.json)')
    // --config is taken by the co-training file, so the server configuration the evaluation
    // reads (store, retriever, reader settings) comes from here.
    .option('--app-config <file>', 'server configuration for the evaluation (default: ./ambigqa.config.json when present)')
    .option('--device <device>', `where the members train and vote: ${DEVICE_HELP}`)
    .action(async (_o: unknown, command: Command) => {
      const o = command.optsWithGlobals<{ config?: string; appConfig?: string; logLevel?: string; device?: string }>()
      if (!o.config) throw ERR_USAGE('ambigqa train cotrain needs a co-training config', 'Pass --config train/configs/cotrain-<name>.json')
      const device = deviceArgs(o.device)[1]
      const config = loadConfig({ ...(o.appConfig ? { file: o.appConfig } : {}), flags: o.logLevel ? { 'log.level': o.logLevel } : {} })
      const log = createLogger(config.log.level)
      const results = await runCoTraining(o.config, {
        config, log, ...(device ? { device } : {}),
        onProgress: (p) => process.stderr.write(`cotrain ${p.stage}${p.fraction === null ? '' : ` ${(100 * p.fraction).toFixed(1)}%`}: ${p.message}\n`),
      })
      for (const s of results.silver) process.stdout.write(`silver ${s.iteration}: ${s.multi} multi-answer, ${s.single} single-answer, ${s.wait} waiting\n`)
      for (const e of results.evals) process.stdout.write(`${e.name}: F1 answer all ${(100 * e.f1All).toFixed(1)}, multi ${e.f1Multi === null ? '-' : (100 * e.f1Multi).toFixed(1)}\n`)
    })
  train
    .command('export <kind> <checkpoint> <out>')
    .description('export a checkpoint to ONNX (kind: seq2seq | cross-encoder | extractive)')
    .action((kind: string, checkpoint: string, out: string) => {
      exitWith(runPython('export_onnx', [kind, checkpoint, out]))
    })
}
