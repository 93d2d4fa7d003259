// The one error catalogue of the project. Every failure a user can meet has a code here, a
// message that names the problem and the fix, and the HTTP status the server will map it to.

export class AmbigqaError extends Error {
  readonly code: string
  readonly statusCode: number

  constructor(code: string, message: string, statusCode: number, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'AmbigqaError'
    this.code = code
    this.statusCode = statusCode
  }
}

/** What an error means and how to get past it, in general: the page docs/errors.md is made of
 * these (`ambigqa errors --markdown`); the message of each error gives the particulars. */
export interface ErrorHelp {
  meaning: string
  fix: string
}

export interface ErrorFactory<A extends unknown[]> {
  (...args: A): AmbigqaError
  readonly code: string
  readonly statusCode: number
  readonly help: ErrorHelp
  /** Same error with a cause attached (kept for logs, never shown as a stack to users). */
  withCause(cause: unknown, ...args: A): AmbigqaError
}

function createError<A extends unknown[]>(
  code: string,
  statusCode: number,
  format: (...args: A) => string,
  help: ErrorHelp,
): ErrorFactory<A> {
  const full = `AMBIGQA_ERR_${code}`
  const make = (...args: A): AmbigqaError => new AmbigqaError(full, format(...args), statusCode)
  return Object.assign(make, {
    code: full,
    statusCode,
    help,
    withCause: (cause: unknown, ...args: A) =>
      new AmbigqaError(full, format(...args), statusCode, { cause }),
  })
}

export const ERR_USAGE = createError('USAGE', 400, (problem: string, fix: string) => `${problem}. ${fix}`, { meaning: 'A command or request was used in a way it does not support: a bad flag value, an id list that does not match the data, an output folder in use.', fix: 'Read the message: it names the flag and the value to give. `ambigqa <command> --help` lists the flags.' })

export const ERR_CONFIG_INVALID = createError(
  'CONFIG_INVALID',
  500,
  (key: string, from: string, problem: string, fix: string) =>
    `configuration key '${key}' (from ${from}) ${problem}. ${fix}`,
  { meaning: 'A configuration value (from the file, an `AMBIGQA_*` variable or a flag) is unknown or out of range; the server or command refuses to start.', fix: 'Fix the key the message names; it says where the value came from and what the default is (README, Configuration).' },
)

export const ERR_CONFIG_FILE = createError(
  'CONFIG_FILE',
  500,
  (path: string, problem: string) =>
    `configuration file ${path}: ${problem}. Fix the file or pass another with --config <file>`,
  { meaning: 'The configuration file is missing, not JSON, or not a JSON object.', fix: 'Fix the file, or pass another with `--config <file>`.' },
)

export const ERR_SOURCE_NOT_FOUND = createError(
  'SOURCE_NOT_FOUND',
  400,
  (path: string) => `source ${path} does not exist. Check the --source path`,
  { meaning: '`ambigqa index build` was given a source path that does not exist.', fix: 'Check the `--source` path.' },
)

export const ERR_SOURCE_EMPTY = createError(
  'SOURCE_EMPTY',
  400,
  (path: string) => `source ${path} is empty: no passages to index. Point --source at a non-empty file`,
  { meaning: 'The source holds no passages to index.', fix: 'Point `--source` at a non-empty file or folder.' },
)

export const ERR_SOURCE_FORMAT_UNKNOWN = createError(
  'SOURCE_FORMAT_UNKNOWN',
  400,
  (path: string, detail: string, known: readonly string[]) =>
    `cannot tell the format of ${path} (${detail}). Pass --format with one of: ${known.join(', ')}`,
  { meaning: 'The format of a source cannot be told from its name or first bytes.', fix: 'Pass `--format` with one of the formats the message lists.' },
)

/** A record of a source that cannot be read; `where` is "line N" or "byte N". */
export const ERR_SOURCE_MALFORMED = createError(
  'SOURCE_MALFORMED',
  400,
  (path: string, where: string, problem: string) =>
    `${path}, ${where}: ${problem}. Fix the input, or pass --on-error skip to skip and count bad records`,
  { meaning: 'A record of a source cannot be read (a TSV line with the wrong number of fields, bad JSON).', fix: 'Fix the input, or pass `--on-error skip` to skip and count bad records.' },
)

export const ERR_SOURCE_TRUNCATED = createError(
  'SOURCE_TRUNCATED',
  400,
  (path: string, where: string, problem: string) =>
    `${path} is truncated or corrupt at ${where}: ${problem}. Download the file again`,
  { meaning: 'A compressed or XML source ends early or is corrupt.', fix: 'Download the file again.' },
)

export const ERR_STORE_NOT_FOUND = createError(
  'STORE_NOT_FOUND',
  404,
  (dir: string) =>
    `no passage store at ${dir}. Build one with \`ambigqa index build --source <file> --store ${dir}\``,
  { meaning: 'There is no passage store in the folder given.', fix: 'Build one with `ambigqa index build --source <file> --store <dir>`, or pass the right `--store`.' },
)

export const ERR_STORE_INCOMPLETE = createError(
  'STORE_INCOMPLETE',
  503,
  (dir: string, state: string) =>
    `the passage store at ${dir} is not ready (${state}): a build was interrupted or failed. ` +
    `Run the same \`ambigqa index build\` again to resume it, or, when the store was ready before that build, ` +
    `\`ambigqa index rollback --store ${dir}\` to go back to what it served`,
  { meaning: 'The store\'s build was interrupted or failed, so it cannot be searched yet.', fix: 'Run the same `ambigqa index build` again: it resumes. A store that was ready before the build (an append by an older version) goes back to what it served with `ambigqa index rollback --store <dir>`.' },
)

export const ERR_STORE_CORRUPT = createError(
  'STORE_CORRUPT',
  500,
  (dir: string, problem: string) =>
    `the passage store at ${dir} is unreadable or inconsistent (${problem}). Delete the folder and build it again ` +
    '(`ambigqa index build`; `ambigqa index stats --verify` checks a store)',
  { meaning: 'The store\'s files are unreadable or inconsistent.', fix: 'Delete the folder and build it again; `ambigqa index stats --verify` checks a store.' },
)

/** `holder`: who writes the store now ("process 123", "indexing job <id> of this server"). */
export const ERR_STORE_BUSY = createError(
  'STORE_BUSY',
  409,
  (dir: string, holder: string) =>
    `the passage store at ${dir} is being written by ${holder}; one writer at a time. Wait for it to finish, or stop it first`,
  { meaning: 'Another process or server job is writing the store: one writer at a time.', fix: 'Wait for it to finish, or stop it first.' },
)

/** A job of a kind that runs one at a time (co-training takes every core) while one is running. */
export const ERR_JOB_BUSY = createError(
  'JOB_BUSY',
  409,
  (kind: string, id: string) => `a ${kind} job (${id}) is running on this server; one at a time. Wait for it to finish (jobProgress), then start again: the run resumes`,
  { meaning: 'A co-training job was asked while another runs: it takes every core, so one at a time.', fix: 'Wait for the running job to finish (`jobProgress`), then start again; a co-training run resumes where it stopped.' },
)

/** A co-training job named a config that is not one of the project's (train/configs/cotrain-*.json). */
export const ERR_COTRAIN_CONFIG = createError(
  'COTRAIN_CONFIG',
  400,
  (name: string) => `co-training config '${name}' is not one of train/configs/cotrain-*.json. Give the name without the folder or .json, e.g. cotrain-e5`,
  { meaning: '`startCoTraining` named a config that is not a `train/configs/cotrain-*.json` file: the API starts only the configs the project holds.', fix: 'Give the config\'s name without folder or `.json`, e.g. `cotrain-e5`; a new config is added to `train/configs/` by the operator.' },
)

export const ERR_QUESTIONS_FILE = createError(
  'QUESTIONS_FILE',
  400,
  (path: string, where: string, problem: string) =>
    `questions file ${path}${where ? `, ${where}` : ''}: ${problem}. ` +
    `Give an AmbigNQ light JSON file or an NQ-open TSV/JSONL file`,
  { meaning: 'A questions file cannot be read as AmbigNQ light JSON or NQ-open TSV/JSONL.', fix: 'Give a file in one of those formats; the message names the line.' },
)

export const ERR_DATA_MISSING = createError(
  'DATA_MISSING',
  404,
  (path: string, what: string) =>
    `${what} needs ${path}, which is absent. Put the shared data folder beside the project (../shared/data) or pass its path`,
  { meaning: 'A command needs a file of the shared data folder that is absent.', fix: 'Put the shared data folder beside the project (`../shared/data`) or pass the file\'s path.' },
)

/** A training-data file (data/train/*.jsonl) that is unreadable or from an older `data build`. */
export const ERR_TRAINING_DATA = createError(
  'TRAINING_DATA',
  400,
  (path: string, where: string, problem: string) =>
    `training data ${path}${where ? `, ${where}` : ''}: ${problem}. Rebuild it with \`ambigqa data build\``,
  { meaning: 'A training-data file (`data/train/*.jsonl`) is unreadable or from an older `data build`.', fix: 'Rebuild it with `ambigqa data build`.' },
)

export const ERR_INTERNAL = createError('INTERNAL', 500, (problem: string) => `internal error: ${problem}. Please report it`, { meaning: 'A bug: something the program assumed did not hold.', fix: 'Report it with the message and what you ran.' })

export function isAmbigqaError(err: unknown): err is AmbigqaError {
  return err instanceof AmbigqaError
}

/** `fix`: what undoes the unfinished build (an append's rollback; else deleting what it built). */
export const ERR_SOURCE_CHANGED = createError(
  'SOURCE_CHANGED',
  409,
  (path: string, dir: string, fix?: string) =>
    `source ${path} changed since an unfinished build of ${dir} started reading it, so the build cannot resume. ` +
    (fix ?? `Delete ${dir} and build again`),
  {
    meaning: 'The source changed since an unfinished build started reading it, so the build cannot resume.',
    fix: 'For an append to a store that was ready, `ambigqa index rollback --store <dir>` drops the unfinished append (the store keeps serving what it had), then build again; for a store\'s first build or an Elasticsearch index, delete it and build again.',
  },
)

/** An append to a ready store was left unfinished (staged beside it, never published) and cannot go on as asked (`problem` says why). */
export const ERR_APPEND_UNFINISHED = createError(
  'APPEND_UNFINISHED',
  409,
  (dir: string, problem: string) =>
    `${problem}. Run the build of its sources again to finish it, or drop it with \`ambigqa index rollback --store ${dir}\`; ` +
    'the store serves what it had meanwhile',
  { meaning: 'An earlier append to the store failed or was interrupted; its passages are staged beside the store, unpublished, and a build of other sources cannot start until it is finished or dropped.', fix: 'Run the build of the sources the message names again (it resumes), or `ambigqa index rollback --store <dir>` to drop the append.' },
)

/** A predictions file for `ambigqa score` that cannot be scored; `problem` names the ids or the JSON position. */
export const ERR_PREDICTIONS_INVALID = createError(
  'PREDICTIONS_INVALID',
  400,
  (source: string, problem: string) =>
    `predictions ${source}: ${problem}. Give a JSON object mapping every reference id to a non-empty list ` +
    `of answer strings, or of {"question", "answer"} objects`,
  { meaning: 'A predictions file for `ambigqa score` cannot be scored (not JSON, missing ids, empty lists).', fix: 'Give a JSON object mapping every reference id to a non-empty list of answers, or of `{question, answer}` objects.' },
)

/** An AmbigNQ reference file that is not the official JSON list of questions with annotations. */
export const ERR_REFERENCE_INVALID = createError(
  'REFERENCE_INVALID',
  400,
  (source: string, problem: string) =>
    `reference ${source}: ${problem}. Give an AmbigNQ JSON file (a list of {id, question, annotations})`,
  { meaning: 'A reference file is not AmbigNQ\'s JSON list of questions with annotations.', fix: 'Give an AmbigNQ JSON file (`ambignq/dev_light.json`, say).' },
)

export const ERR_MODEL_MISSING = createError(
  'MODEL_MISSING',
  503,
  (path: string, command: string) => `model file ${path} is missing. Run \`${command}\` to fetch or build it`,
  { meaning: 'A model file (reader, reranker, encoder) is not where the configuration points.', fix: 'Run the command the message names to fetch or build it, or point the configuration at the model folder.' },
)

export const ERR_VECTORS_MISSING = createError(
  'VECTORS_MISSING',
  503,
  (store: string, model: string) =>
    `the store ${store} holds no ${model} vectors for dense retrieval. Run \`ambigqa index encode --store ${store} --model ${model}\`, ` +
    'or use --retriever bm25-sqlite, which needs none',
  { meaning: 'Dense retrieval was asked of a store that holds no vectors for that encoder.', fix: 'Run `ambigqa index encode --store <dir> --model <model>`, or use `--retriever bm25-sqlite`, which needs none.' },
)

export const ERR_MODEL_INVALID = createError(
  'MODEL_INVALID',
  503,
  (path: string, problem: string, fix: string) => `model ${path}: ${problem}. ${fix}`,
  { meaning: 'A model folder is there but unusable: unreadable JSON, a missing token, a layout this server does not run.', fix: 'Re-export the model as the message says (`ambigqa train export ...`).' },
)

export const ERR_ELASTICSEARCH_UNAVAILABLE = createError(
  'ELASTICSEARCH_UNAVAILABLE',
  503,
  (url: string, cause: string) =>
    `Elasticsearch at ${url} is not reachable (${cause}). Start it with scripts/elasticsearch up, or point --es-url / AMBIGQA_ELASTICSEARCH_URL at a running cluster`,
  { meaning: 'Elasticsearch does not answer at the configured URL.', fix: 'Start it with `scripts/elasticsearch up`, or point `--es-url` / `AMBIGQA_ELASTICSEARCH_URL` at a running cluster.' },
)

export const ERR_ELASTICSEARCH_INDEX = createError(
  'ELASTICSEARCH_INDEX',
  500,
  (url: string, index: string, problem: string, fix: string) => `Elasticsearch index '${index}' at ${url}: ${problem}. ${fix}`,
  { meaning: 'The Elasticsearch index is missing, or lacks what the request needs (a vector field, a mapping).', fix: 'Follow the fix the message names: usually build or encode the index (`ambigqa index build --backend elasticsearch`, `ambigqa index encode --backend elasticsearch`).' },
)

export const ERR_QUESTION_INVALID = createError(
  'QUESTION_INVALID',
  400,
  (problem: string) => `question ${problem}. Give a non-empty question of at most server.maxQuestionLength characters`,
  { meaning: 'A question is empty or longer than the server allows.', fix: 'Give a non-empty question of at most `server.maxQuestionLength` characters.' },
)

export const ERR_BATCH_TOO_LARGE = createError(
  'BATCH_TOO_LARGE',
  400,
  (size: number, max: number) => `askMany got ${size} questions, more than the limit of ${max}. Split the batch or raise server.maxBatch`,
  { meaning: 'An `askMany` holds more questions than the server allows.', fix: 'Split the batch, or raise `server.maxBatch`.' },
)

export const ERR_READER_UNAVAILABLE = createError(
  'READER_UNAVAILABLE',
  503,
  (what: string, reason: string) => `${what} needs the reader models, which did not load: ${reason} (scripts/train-defaults rebuilds the shipped ones). Until they do, search works`,
  { meaning: '`ask` needs the reader models, which did not load; search still works.', fix: 'Fix what the message says (usually a missing model folder); `scripts/train-defaults` rebuilds the shipped ones.' },
)

export const ERR_QUERY_TOO_COSTLY = createError(
  'QUERY_TOO_COSTLY',
  400,
  (cost: number, max: number) => `query costs at least ${cost}, more than the limit of ${max} (ask costs 50 per question, search 5, any other field 1). Split it into several requests or raise server.maxCost`,
  { meaning: 'A GraphQL query would cost more than the server\'s limit (ask 50 per question, search 5, any other field 1).', fix: 'Split it into several requests, or raise `server.maxCost`.' },
)

export const ERR_QUERY_TOO_DEEP = createError(
  'QUERY_TOO_DEEP',
  400,
  (depth: number, max: number) =>
    `query depth ${depth} is more than the limit of ${max} (nested fields; introspection's type and ofType wrappers do not count). Ask for fewer nested fields or raise server.maxDepth`,
  { meaning: 'A GraphQL query nests fields deeper than the server\'s limit.', fix: 'Ask for fewer nested fields, or raise `server.maxDepth`.' },
)

/** `why`: what is full ("8 requests running and 64 queued", "the 40 requests ahead would not leave this one time ..."). */
export const ERR_OVERLOADED = createError(
  'OVERLOADED',
  503,
  (why: string) => `server overloaded: ${why}. Retry later, or raise server.concurrency / server.queue / server.timeoutMs`,
  { meaning: 'Refused at once, before any work: at the speed the server measures, this request would not finish before its deadline (`server.timeoutMs`), or taking it would make a request already admitted miss its own; or as many requests run and wait as `server.concurrency` and `server.queue` allow. The response\'s `Retry-After` header says in how many seconds to try again.', fix: 'Retry after the seconds `Retry-After` gives, or raise `server.timeoutMs` (`server.concurrency` or `server.queue` when those are what is full).' },
)

export const ERR_ARGUMENT_INVALID = createError(
  'ARGUMENT_INVALID',
  400,
  (name: string, value: number, max: number, key: string) =>
    `argument ${name} is ${value}, outside [1, ${max}]. Give an integer from 1 to ${max} (the limit is ${key})`,
  { meaning: 'A count (`retrieve`, `read`, `k`, `--retrieve`, ...) is not an integer from 1 to the server\'s limit.', fix: 'Give an integer from 1 to `server.maxK`.' },
)

/** A request named a retriever this server cannot give it (`why`: what it serves, or what is missing). */
export const ERR_RETRIEVER_UNAVAILABLE = createError(
  'RETRIEVER_UNAVAILABLE',
  400,
  (kind: string, why: string) => `retriever ${kind} is not available here: ${why}. Leave the retriever argument out to use the server's own (health.retriever names it)`,
  { meaning: 'A request named a retriever this server cannot open (no vectors, no encoder, or it serves only its own).', fix: 'Leave the retriever argument out to use the server\'s own (`health.retriever` names it), or make the missing part (`ambigqa index encode`).' },
)

export const ERR_JOBS_DISABLED = createError(
  'JOBS_DISABLED',
  403,
  (field: string) =>
    `${field} is turned off on this server: jobs read the server's files. The operator turns jobs on with server.jobs, ` +
    'which also needs server.authToken and server.dataRoots; or run the same command with the ambigqa CLI',
  { meaning: 'A job (`startIndexing`, `startEvaluation`) was asked of a server whose jobs are off: jobs read the server\'s files.', fix: 'The operator turns jobs on with `server.jobs`, which also needs `server.authToken` and `server.dataRoots`; or run the same command with the `ambigqa` CLI.' },
)

export const ERR_UNAUTHORIZED = createError(
  'UNAUTHORIZED',
  401,
  (field: string) => `${field} needs the server's token. Send the header 'Authorization: Bearer <server.authToken>'`,
  { meaning: 'A job was asked without the server\'s token.', fix: 'Send the header `Authorization: Bearer <server.authToken>`.' },
)

export const ERR_PATH_NOT_ALLOWED = createError(
  'PATH_NOT_ALLOWED',
  403,
  (path: string, why: string) =>
    `path ${path} is refused: ${why}. Give a path inside one of the server's data roots (server.dataRoots), without '..'`,
  { meaning: 'A job named a path outside the server\'s data roots, with `..`, or through a symbolic link leading out.', fix: 'Give a path inside one of `server.dataRoots`.' },
)

export const ERR_HOST_NOT_ALLOWED = createError(
  'HOST_NOT_ALLOWED',
  421,
  (host: string) =>
    `this server does not answer for host '${host}'. Use its own address, or have the operator add the name to server.allowedHosts`,
  { meaning: 'The request\'s `Host` is not a name this server answers for (protection against DNS rebinding).', fix: 'Use the server\'s own address, or have the operator add the name to `server.allowedHosts`.' },
)

export const ERR_TIMEOUT = createError(
  'TIMEOUT',
  504,
  (ms: number) => `request took longer than ${ms} ms. Ask for fewer passages or raise server.timeoutMs`,
  { meaning: 'A request took longer than the server allows. In an `askMany`, the error of each question not answered by the deadline, at its path (`askMany.i`), beside the sets answered by then.', fix: 'Ask for fewer passages, or raise `server.timeoutMs`.' },
)

/** An output folder (e.g. `eval ambignq --out`) that cannot be created or written. */
export const ERR_OUTPUT_UNWRITABLE = createError(
  'OUTPUT_UNWRITABLE',
  400,
  (path: string, problem: string) => `cannot write to ${path} (${problem}). Pass --out a folder you can write to`,
  { meaning: 'An output folder (`eval ambignq --out`, say) cannot be created or written.', fix: 'Pass a folder you can write to.' },
)

export const ERR_ANN_INDEX = createError(
  'ANN_INDEX',
  503,
  (store: string, model: string, problem: string) =>
    `the ANN index of the store at ${store} for ${model} ${problem}: it is not searched. Run \`ambigqa index ann --store ${store} --model ${model}\` to rebuild it`,
  { meaning: 'A store\'s ANN index was built from older vectors than the store holds now, or its files are damaged: searching it would give stale or wrong passages.', fix: 'Run `ambigqa index ann --store <dir> --model <model>` (resumable) to rebuild it.' },
)

export const ERR_VECTORS_FILE = createError(
  'VECTORS_FILE',
  503,
  (store: string, model: string, file: string, problem: string) =>
    `the ${model} vectors of the store at ${store} were released to ${file}, their one copy, which ${problem}: they are not read. ` +
    `Put that file back from a backup taken with the store; failing that, delete the store's ${model} vectors ` +
    `(sqlite3 ${store}/passages.sqlite "DELETE FROM dense_vectors WHERE model = '${model}'") and run \`ambigqa index encode --store ${store} --model ${model}\` again`,
  {
    meaning: 'An ANN build keeps a store\'s dense vectors once, in the rows file beside its graph (STORE/ann/<model>.f32), and the store\'s own copy is released; that file is missing, shorter than the rows released into it, or holds other vectors than were released (checked against the SHA-256 each released chunk keeps).',
    fix: 'Put the rows file back from a backup taken with the store; failing that, delete the model\'s vectors from the store (`DELETE FROM dense_vectors WHERE model = \'<model>\'`) and encode again.',
  },
)

/** Every factory in the catalogue, for tests that check codes are unique and well formed, and for docs/errors.md. */
export const catalogue: readonly ErrorFactory<never[]>[] = [
  ERR_QUESTION_INVALID as ErrorFactory<never[]>, ERR_BATCH_TOO_LARGE as ErrorFactory<never[]>,
  ERR_READER_UNAVAILABLE as ErrorFactory<never[]>, ERR_OVERLOADED as ErrorFactory<never[]>, ERR_TIMEOUT as ErrorFactory<never[]>, ERR_QUERY_TOO_COSTLY as ErrorFactory<never[]>, ERR_QUERY_TOO_DEEP as ErrorFactory<never[]>,
  ERR_ELASTICSEARCH_UNAVAILABLE, ERR_ELASTICSEARCH_INDEX,
  ERR_USAGE, ERR_CONFIG_INVALID, ERR_CONFIG_FILE, ERR_SOURCE_NOT_FOUND, ERR_SOURCE_EMPTY,
  ERR_SOURCE_FORMAT_UNKNOWN, ERR_SOURCE_MALFORMED, ERR_SOURCE_TRUNCATED, ERR_STORE_NOT_FOUND,
  ERR_STORE_INCOMPLETE, ERR_STORE_CORRUPT, ERR_STORE_BUSY, ERR_JOB_BUSY, ERR_COTRAIN_CONFIG, ERR_QUESTIONS_FILE, ERR_DATA_MISSING, ERR_TRAINING_DATA,
  ERR_INTERNAL, ERR_SOURCE_CHANGED, ERR_APPEND_UNFINISHED,
  ERR_PREDICTIONS_INVALID, ERR_REFERENCE_INVALID,
  ERR_MODEL_MISSING, ERR_VECTORS_MISSING, ERR_ANN_INDEX, ERR_VECTORS_FILE, ERR_MODEL_INVALID, ERR_OUTPUT_UNWRITABLE,
  ERR_ARGUMENT_INVALID, ERR_RETRIEVER_UNAVAILABLE, ERR_JOBS_DISABLED, ERR_UNAUTHORIZED, ERR_PATH_NOT_ALLOWED, ERR_HOST_NOT_ALLOWED,
] as unknown as readonly ErrorFactory<never[]>[]
