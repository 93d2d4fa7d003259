// Configuration: defaults < file (ambigqa.config.json or --config) < environment (AMBIGQA_*) <
// flags. Validated once at start; a bad value names its key, where it came from, and the fix.
import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { z } from 'zod'
import { ERR_CONFIG_FILE, ERR_CONFIG_INVALID } from './errors.js'
import { BASE_RETRIEVER_KINDS, DEVICES, READER_KINDS, RETRIEVER_KINDS } from './kinds.js'
import { DEFAULT_ENCODERS_DIR, DEFAULT_READER_DIR, PROJECT_ROOT } from './paths.js'

/** What one question costs in the server's query-cost limit (ask, and each question of askMany):
 * here because the configuration checks that server.maxCost admits a full askMany. */
export const ASK_COST_PER_QUESTION = 50

/** elasticsearch.url: one node's URL, or several nodes of one cluster separated by commas. */
const esUrls = z.string().refine((value) => value.split(',').every((u) => z.string().url().safeParse(u.trim()).success), 'must be a URL, or several separated by commas')

const configSchema = z
  .object({
    store: z.string().min(1),
    retriever: z.enum(RETRIEVER_KINDS),
    bm25: z.object({ k1: z.number().min(0).max(10), b: z.number().min(0).max(1) }).strict(),
    elasticsearch: z
      .object({ url: esUrls, index: z.string().regex(/^[a-z0-9][a-z0-9_.-]*$/), requestTimeoutMs: z.number().int().min(100).max(600_000), maxRetries: z.number().int().min(0).max(10) })
      .strict(),
    dense: z.object({ model: z.string().min(1), modelsDir: z.string().min(1), threads: z.number().int().min(1).max(64), device: z.enum(DEVICES) }).strict(),
    hybrid: z
      .object({
        retrievers: z.array(z.enum(BASE_RETRIEVER_KINDS)).min(2).refine((r) => new Set(r).size === r.length, 'must not repeat a retriever'),
        fusion: z.enum(['rrf', 'weighted']),
        rrfK: z.number().min(0),
        alpha: z.number().min(0).max(1),
        depth: z.number().int().min(1).max(10_000),
      })
      .strict(),
    ingest: z
      .object({
        onError: z.enum(['fail', 'skip']),
        batchSize: z.number().int().min(1).max(100_000),
        segmentSize: z.number().int().min(100).max(10_000_000),
        workers: z.number().int().min(1).max(64),
      })
      .strict(),
    server: z
      .object({
        host: z.string().min(1),
        port: z.number().int().min(0).max(65_535),
        bodyLimit: z.number().int().min(1024),
        maxQuestionLength: z.number().int().min(1),
        maxBatch: z.number().int().min(1),
        maxK: z.number().int().min(1),
        maxDepth: z.number().int().min(1),
        maxCost: z.number().int().min(1),
        concurrency: z.number().int().min(1),
        queue: z.number().int().min(0),
        timeoutMs: z.number().int().min(1),
        jobs: z.boolean(),
        authToken: z.string(),
        dataRoots: z.array(z.string().min(1)),
        allowedHosts: z.array(z.string().min(1)),
      })
      .strict()
      // Jobs read the server's files: on, they need a token worth the name and somewhere to read.
      .superRefine((s, ctx) => {
        if (s.jobs && s.authToken.length < 16) ctx.addIssue({ code: 'custom', path: ['authToken'], message: 'must have at least 16 characters when server.jobs is on' })
        if (s.jobs && s.dataRoots.length === 0) ctx.addIssue({ code: 'custom', path: ['dataRoots'], message: 'must name at least one folder when server.jobs is on' })
        // Otherwise the largest askMany maxBatch allows would always be refused as too costly.
        const fullBatch = ASK_COST_PER_QUESTION * s.maxBatch
        if (s.maxCost < fullBatch) {
          ctx.addIssue({ code: 'custom', path: ['maxCost'], message: `is less than a full askMany costs (server.maxBatch ${s.maxBatch} × ${ASK_COST_PER_QUESTION} per question = ${fullBatch}), so such a batch could never run; raise server.maxCost to at least ${fullBatch} or lower server.maxBatch` })
        }
      }),
    reranker: z
      .object({ model: z.string(), precision: z.enum(['fp32', 'int8']), maxTokens: z.number().int().min(16).max(4096), batchSize: z.number().int().min(1).max(1024), device: z.enum(DEVICES), threads: z.number().int().min(0).max(64) })
      .strict(),
    reader: z
      .object({
        kind: z.enum(READER_KINDS),
        spanseqgen: z.string().min(1),
        extractive: z.string().min(1),
        qd: z.string().min(1),
        precision: z.enum(['fp32', 'int8']),
        device: z.enum(DEVICES),
        threads: z.number().int().min(0).max(64),
        lmThreads: z.number().int().min(1).max(64),
        maxBatch: z.number().int().min(1).max(256),
        maxInputTokens: z.number().int().min(16).max(4096),
        qdMaxInputTokens: z.number().int().min(16).max(4096),
        qdCandidates: z.number().int().min(1).max(16),
        qdEvidenceVocabulary: z.boolean(),
        qdLookahead: z.number().int().min(0).max(16),
        numBeams: z.number().int().min(0).max(32),
        constrainToPassages: z.boolean(),
        readEach: z.number().int().min(0).max(100),
        poolKeep: z.number().min(0).max(1),
        keep: z.number().min(0).max(1),
        minProbability: z.number().min(0).max(1),
        maxAnswers: z.number().int().min(1).max(100),
        candidates: z.number().int().min(1).max(100),
        rankPrior: z.number().min(0).max(100),
        dropContaining: z.boolean(),
        calibration: z.string(),
        verifier: z.string(),
        minConfidence: z.number().min(0).max(1),
        oneAnswerWhenUnambiguous: z.boolean(),
        splitJoined: z.boolean(),
        completeDates: z.boolean(),
        read: z.number().int().min(1).max(1000),
        retrieve: z.number().int().min(1).max(10_000),
      })
      .strict(),
    support: z.object({ spanLm: z.string(), knowledge: z.string(), generate: z.boolean(), candidates: z.number().int().min(1).max(100), threads: z.number().int().min(1).max(64) }).strict(),
    log: z.object({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) }).strict(),
  })
  .strict()

export type Config = z.infer<typeof configSchema>

export const defaults: Config = {
  store: 'data/demo',
  // The best retriever measured on eval-300 (BENCHMARKS.md): e5 alone; fusing BM25 in added
  // nothing there. Needs the store's e5 vectors (`ambigqa index encode`); bm25-sqlite does not.
  retriever: 'dense',
  bm25: { k1: 0.9, b: 0.4 },
  // A query against a down cluster fails within requestTimeoutMs (no retry) instead of ~8 s.
  elasticsearch: { url: 'http://127.0.0.1:9200', index: 'ambigqa-passages', requestTimeoutMs: 5000, maxRetries: 0 },
  dense: { model: 'e5-small-v2-int8', modelsDir: DEFAULT_ENCODERS_DIR, threads: 2, device: 'cpu' },
  // retrievers: what hybrid fuses (bm25-es and dense-es for Elasticsearch). alpha: in weighted
  // fusion of two, the first one's weight (the second gets 1 - alpha); more share equally.
  hybrid: { retrievers: ['bm25-sqlite', 'dense'], fusion: 'weighted', rrfK: 60, alpha: 0.2, depth: 100 },
  ingest: { onError: 'fail', batchSize: 2000, segmentSize: 200_000, workers: 2 },
  server: {
    host: '127.0.0.1', port: 4000, bodyLimit: 64 * 1024,
    // maxCost: a full askMany (32 × 50) and the fields it selects; as much reader work as 34 asks.
    maxQuestionLength: 1000, maxBatch: 32, maxK: 1000, maxDepth: 6, maxCost: 1700, concurrency: 8, queue: 64, timeoutMs: 30_000,
    // Jobs (startIndexing, startEvaluation) are off: they read the server's files. allowedHosts:
    // Host names answered besides the loopback ones and the listening address (DNS rebinding).
    jobs: false, authToken: '', dataRoots: [], allowedHosts: [],
  },
  // model: a cross-encoder folder (model.onnx + tokenizer.json); empty keeps the retriever's order.
  // device, threads: its own, as the reader's (threads 0 lets onnxruntime choose).
  reranker: { model: '', precision: 'int8', maxTokens: 256, batchSize: 16, device: 'cpu', threads: 2 },
  // The trained defaults live in assets/models (int8, rebuilt by scripts/train-defaults); one
  // folder may serve both tasks. maxBatch: questions decoded together; numBeams 0 keeps the
  // model's generation_config.json; constrainToPassages: answers only copy passage spans.
  // maxInputTokens 384: what the shipped reader is trained at, and the best measured with e5's
  // passages (192/256/384/512 for the earlier reader, 256/384 for this one; BENCHMARKS.md).
  // readEach 0 reads the passages together (SpanSeqGen); n reads the top n one at a time and
  // pools the answers, keeping those within poolKeep of the best (opt-in: BENCHMARKS.md).
  // kind: which reader recalls the answers: extractive reads each passage alone and returns its
  // best `candidates` answers (spans merged by text), rankPrior weighing the retriever's order into
  // its passage scores, dropContaining merging an answer that holds a better one's words and more
  // (the same answer with its context: F1 21.7 against 21.5); spanseqgen writes its set whole.
  // The default is the better of the two on eval-300. The answer-set decider
  // (reader/answer-set-decider.ts) alone decides which candidates make the set: with the
  // calibration (the default) those whose calibrated confidence reaches minConfidence; without one
  // (the plain rule) those within `keep` of the best one's probability; either way at most
  // maxAnswers, the best always, and none when the best probability is under minProbability.
  // rankPrior, keep and minProbability were chosen on train/splits/reader-tune.txt by
  // bench/tune-extractive (BENCHMARKS.md), never on eval-300; read, minConfidence and maxAnswers are
  // what `ambigqa train calibration` chose on the tuning sets (reader-tune and asqa-tune;
  // calibration.json records them), never on eval-300.
  // qd: the question-disambiguation model, which reads qdMaxInputTokens (what it is trained at)
  // and proposes qdCandidates rewrites per answer, of which the best without a fault is returned;
  // qdEvidenceVocabulary: decoding uses only the word pieces of the prompt, answers and evidence.
  // qdLookahead: with the pretrained decoder (qd-lm, served with its adapter merged into the
  // base), draft tokens read per step by prompt-lookup decoding (0: one token a step); on the
  // merged model it writes greedy's rewrites, and 3 was the fastest on the held-out split
  // (BENCHMARKS.md, "QD latency").
  // calibration: the folder of calibration.json (answer calibrator and ambiguity detector, fit on
  // the tuning split; '' keeps the reader's raw probabilities and "ambiguous" = two answers);
  // verifier: the answer verifier's cross-encoder folder (where `ambigqa train verifier` writes it),
  // read only when calibration.json stacks it (opt-in: the shipped calibration does not);
  // minConfidence: answers whose calibrated confidence is under it are dropped, the best kept (the
  // default was chosen with the models on the tuning sets, BENCHMARKS.md; unused without calibration);
  // oneAnswerWhenUnambiguous: a question the detector judges unambiguous keeps its best answer alone
  // (off: the fit found no gain on the natural mix of questions that it could tell from noise, and
  // it costs multi-answer questions their other answers; calibration.json's `detector` records it).
  // splitJoined: an answer that joins names ("Carlton and Essendon") becomes one answer a name
  // (chosen on the tuning sets, issue 47: reader/answer-set-decider.ts splitJoined).
  // completeDates: a bare year becomes the whole date its evidence writes (off: it gained on the
  // tuning sets and not on eval-300 or the second set, issue 47: completeDates).
  // lmThreads: llama.cpp's threads for each Gemma decoder (QD, SpanSeqGen on Gemma): 1, since two
  // threads wait on each other when the cores are busy (QD p50 52 s with 2, 4 s with 1 at load 10,
  // same rewrites: bench/qd-latency, docs/configuration.md).
  // read: passages the reader reads when a request does not say (ask's options.read, --read);
  // retrieve: passages retrieved for it when a request does not say (options.retrieve, --retrieve).
  reader: {
    kind: 'extractive', spanseqgen: join(DEFAULT_READER_DIR, 'reader'), extractive: join(DEFAULT_READER_DIR, 'extractive'), qd: join(DEFAULT_READER_DIR, 'qd-lm'),
    precision: 'int8', device: 'cpu', threads: 2, lmThreads: 1, maxBatch: 8, maxInputTokens: 384, qdMaxInputTokens: 96, qdCandidates: 8, qdEvidenceVocabulary: true, qdLookahead: 3, numBeams: 0, constrainToPassages: true, readEach: 0, poolKeep: 0.5,
    keep: 0.3, minProbability: 0, maxAnswers: 4, candidates: 20, rankPrior: 4, dropContaining: true, calibration: join(DEFAULT_READER_DIR, 'calibration'), verifier: join(PROJECT_ROOT, 'models', 'verifier'), minConfidence: 0.15, oneAnswerWhenUnambiguous: false, splitJoined: true, completeDates: false, read: 20,
    retrieve: 100,
  },
  // What pretrained decoders know of each candidate, for the verifier (reader/candidate-support.ts,
  // a stage between the reader and the decider; off: BENCHMARKS.md, issue 47): spanLm, SpanSeqGen's
  // decoder folder ('' for none: its log probability of each candidate after its prompt);
  // knowledge, a pretrained GGUF ('' for none: the closed-book check); generate: SpanSeqGen's own
  // answers join the candidates; candidates: the reader's first ones scored; threads: llama.cpp's
  // per model (1: two wait on each other on a busy machine). A calibration fit with these features
  // needs them on, as it was fit.
  support: { spanLm: '', knowledge: '', generate: false, candidates: 20, threads: 1 },
  log: { level: 'info' },
}

/** Leaf keys the environment may set: AMBIGQA_BM25_K1 sets bm25.k1, and so on; a list is comma-separated. */
const envKeys: Record<string, { key: string; type: 'string' | 'number' | 'boolean' | 'list' }> = {}
for (const [key, value] of leaves(defaults)) {
  envKeys[`AMBIGQA_${key.replace(/\./g, '_').replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}`] = {
    key,
    type: typeof value === 'number' ? 'number' : typeof value === 'boolean' ? 'boolean' : Array.isArray(value) ? 'list' : 'string',
  }
}

export const DEFAULT_CONFIG_FILE = 'ambigqa.config.json'

export interface ConfigSources {
  /** Path given with --config; else ./ambigqa.config.json when it exists. */
  file?: string
  env?: NodeJS.ProcessEnv
  /** Flags, as dotted keys ({ 'bm25.k1': 1.2 }). */
  flags?: Record<string, unknown>
  cwd?: string
}

export function loadConfig(sources: ConfigSources = {}): Config {
  const cwd = sources.cwd ?? process.cwd()
  const origin = new Map<string, string>()
  const merged = structuredClone(defaults) as unknown as Record<string, unknown>

  const filePath = sources.file ? resolve(cwd, sources.file) : resolve(cwd, DEFAULT_CONFIG_FILE)
  if (sources.file || existsSync(filePath)) {
    let parsed: unknown
    try {
      parsed = JSON.parse(readFileSync(filePath, 'utf8'))
    } catch (err) {
      const problem = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `is not valid JSON (${(err as Error).message})`
      throw ERR_CONFIG_FILE(filePath, problem)
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw ERR_CONFIG_FILE(filePath, 'must hold a JSON object')
    }
    for (const [key, value] of leaves(parsed as Record<string, unknown>)) set(merged, key, value, origin, `file ${filePath}`)
  }

  for (const [name, raw] of Object.entries(sources.env ?? process.env)) {
    // AMBIGQA_TEST_* steer the test harness (scripts/test, .ci/run), not the program.
    if (!name.startsWith('AMBIGQA_') || name.startsWith('AMBIGQA_TEST_') || raw === undefined) continue
    const known = envKeys[name]
    if (!known) {
      throw ERR_CONFIG_INVALID(name, 'the environment', 'is not a known setting', `Known variables: ${Object.keys(envKeys).join(', ')}`)
    }
    if (known.type === 'boolean' && raw !== 'true' && raw !== 'false') {
      throw ERR_CONFIG_INVALID(known.key, `environment ${name}`, `must be true or false, got '${raw}'`, `Set ${name} to true or false`)
    }
    const value = known.type === 'number' ? Number(raw) : known.type === 'boolean' ? raw === 'true' : known.type === 'list' ? raw.split(',').map((x) => x.trim()) : raw
    if (known.type === 'number' && (raw.trim() === '' || Number.isNaN(value))) {
      throw ERR_CONFIG_INVALID(known.key, `environment ${name}`, `must be a number, got '${raw}'`, `Set ${name} to a number`)
    }
    set(merged, known.key, value, origin, `environment ${name}`)
  }

  for (const [key, value] of Object.entries(sources.flags ?? {})) {
    if (value !== undefined) set(merged, key, value, origin, 'a command-line flag')
  }

  const result = configSchema.safeParse(merged)
  if (!result.success) {
    const issue = result.error.issues[0]!
    const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => [...issue.path, k].join('.')) : [issue.path.join('.')]
    const key = keys[0] ?? '(root)'
    const from = origin.get(key) ?? 'defaults'
    if (issue.code === 'unrecognized_keys') {
      throw ERR_CONFIG_INVALID(key, from, 'is not a known setting', `Known keys: ${leaves(defaults).map(([k]) => k).join(', ')}`)
    }
    // zod's own messages start with a capital; ours (custom) are written to follow 'is invalid:' and name keys in their case.
    throw ERR_CONFIG_INVALID(key, from, `is invalid: ${issue.code === 'custom' ? issue.message : issue.message.toLowerCase()}`, `Default: ${JSON.stringify(get(defaults, key))}`)
  }
  return result.data
}

function leaves(obj: object, prefix = ''): [string, unknown][] {
  const out: [string, unknown][] = []
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix ? `${prefix}.${k}` : k
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) out.push(...leaves(v, key))
    else out.push([key, v])
  }
  return out
}

function set(target: Record<string, unknown>, key: string, value: unknown, origin: Map<string, string>, from: string): void {
  const parts = key.split('.')
  let node = target
  for (const part of parts.slice(0, -1)) {
    const next = node[part]
    if (next === null || typeof next !== 'object' || Array.isArray(next)) node[part] = {}
    node = node[part] as Record<string, unknown>
  }
  node[parts.at(-1)!] = value
  origin.set(key, from)
}

function get(obj: object, key: string): unknown {
  return key.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], obj)
}
