// The schema's fields (schema.graphql), one named function each, so that a question can be walked
// from its field to the pipeline. app.ts wraps each in `guarded` (limits, deadline, metrics, coded
// errors) and registers them with mercurius; here is only what each field does.
import type { IncomingHttpHeaders } from 'node:http'
import { ERR_BATCH_TOO_LARGE, ERR_JOBS_DISABLED, ERR_QUERY_TOO_COSTLY, ERR_READER_UNAVAILABLE } from '../../core/errors.js'
import { RETRIEVER_KINDS, retrieverEnumName } from '../../core/kinds.js'
import { describeRetriever } from '../../core/retriever.js'
import { checkCount as checkCountIn, checkQuestion as checkQuestionText } from '../pipeline/ask-arguments.js'
import type { AskOptions, Pipeline, RetrieverKind } from '../pipeline/pipeline.js'
import type { PassageSource } from '../../retriever/passage-source.js'
import { coTrainingConfigFile } from '../training/cotrain-run.js'
import { checkHealth, type DependencyProbe } from './health.js'
import { authorizeJob, resolveDataPath, type JobAccess } from './job-access.js'
import type { CoTrainingRunner, Jobs } from './jobs.js'
import { askManyCost } from './query-cost.js'
import type { ServerLimits } from './limits.js'

/** What the resolvers serve from: one per server. */
export interface ResolverContext {
  pipeline: Pipeline
  passages: PassageSource
  limits: ServerLimits
  jobs: Jobs
  access: JobAccess
  /** Where startIndexing builds. */
  indexStore: string
  coTraining?: CoTrainingRunner
  probes: DependencyProbe[]
}

/**
 * One call of a field: aborted at the deadline or when the client goes away. `disambiguate`:
 * whether an ask runs question disambiguation, decided once for the request (selection.ts,
 * `disambiguates`) and counted the same way by the limiter.
 */
export interface Call { signal: AbortSignal; headers: IncomingHttpHeaders; disambiguate: boolean }

/** The schema's RetrieverName values (validated by GraphQL against the enum, which
 * test/schema.test.ts holds to core/kinds.ts). */
type RetrieverName = string
type AskOptionsInput = { retrieve?: number | null; read?: number | null; retriever?: RetrieverName | null }

// The schema's enum names the configuration's retriever kinds (BM25_SQLITE is bm25-sqlite).
const KIND_OF_NAME = new Map<RetrieverName, RetrieverKind>(RETRIEVER_KINDS.map((kind) => [retrieverEnumName(kind), kind]))
const kindOf = (name?: RetrieverName | null): RetrieverKind | undefined => (name ? KIND_OF_NAME.get(name) : undefined)
const checkQuestion = (ctx: ResolverContext, question: string) => checkQuestionText(question, ctx.limits.maxQuestionLength)
const checkCount = (ctx: ResolverContext, name: string, value: number) => checkCountIn(name, value, ctx.limits.maxK, 'server.maxK')
const passageOut = (p: { id: string; title: string; text: string; score?: number }) => ({ id: p.id, title: p.title, text: p.text, score: p.score ?? null })

/**
 * The request's options: the configured reader.retrieve and reader.read cut to maxK, so a server
 * with a lower limit still accepts them; question disambiguation as the call was decided.
 */
function askOptions(ctx: ResolverContext, o: AskOptionsInput | null | undefined, call: Call): AskOptions {
  const retriever = kindOf(o?.retriever)
  return {
    retrieve: checkCount(ctx, 'options.retrieve', o?.retrieve ?? Math.min(ctx.pipeline.defaultRetrieve, ctx.limits.maxK)),
    read: checkCount(ctx, 'options.read', o?.read ?? Math.min(ctx.pipeline.defaultRead, ctx.limits.maxK)),
    ...(retriever ? { retriever } : {}),
    disambiguate: call.disambiguate,
  }
}

export async function search(ctx: ResolverContext, args: { question: string; k?: number | null; retriever?: RetrieverName | null }) {
  const question = checkQuestion(ctx, args.question)
  const k = checkCount(ctx, 'k', args.k ?? 10)
  const { passages } = await ctx.pipeline.retrieve(question, k, kindOf(args.retriever))
  return passages.map(passageOut)
}

export async function passage(ctx: ResolverContext, args: { id: string }) {
  const p = await ctx.passages.byId(args.id)
  return p ? passageOut(p) : null
}

export async function health(ctx: ResolverContext) {
  const report = await checkHealth(ctx.probes)
  const passages = await ctx.passages.count().catch(() => null)
  return { ...report, store: ctx.passages.name, passages, retriever: ctx.pipeline.stages.retriever.name, retrieval: describeRetriever(ctx.pipeline.stages.retriever) }
}

export async function ask(ctx: ResolverContext, args: { question: string; options?: AskOptionsInput | null }, call: Call) {
  const question = checkQuestion(ctx, args.question)
  return ctx.pipeline.ask(question, askOptions(ctx, args.options, call), call.signal)
}

export async function askMany(ctx: ResolverContext, args: { questions: string[]; options?: AskOptionsInput | null }, call: Call) {
  const { maxBatch, maxCost } = ctx.limits
  if (args.questions.length > maxBatch) throw ERR_BATCH_TOO_LARGE(args.questions.length, maxBatch)
  if (askManyCost(args.questions.length) > maxCost) throw ERR_QUERY_TOO_COSTLY(askManyCost(args.questions.length), maxCost)
  const questions = args.questions.map((q) => checkQuestion(ctx, q))
  const settings = askOptions(ctx, args.options, call)
  if (!ctx.pipeline.readerAvailable) throw ERR_READER_UNAVAILABLE('askMany', ctx.pipeline.stages.readerProblem ?? 'no reader was configured')
  // Each question stands alone: one still being read at the deadline (or failing) is its own item's
  // error, null in its place, and the sets answered by then still come back. Only when no question
  // was answered is the batch's error the field's (a 504 at the deadline).
  const settled = await Promise.allSettled(questions.map((q) => ctx.pipeline.ask(q, settings, call.signal)))
  if (settled.every((s) => s.status === 'rejected')) throw settled[0]!.reason
  return settled.map((s) => (s.status === 'fulfilled' ? s.value : asError(s.reason)))
}

/** A rejection as an Error, which graphql-js reports at the item's path. */
function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason))
}

export function job(ctx: ResolverContext, args: { id: string }) {
  return ctx.jobs.get(args.id) ?? null
}

export function startIndexing(ctx: ResolverContext, args: { source: string; format?: string | null }, call: Call) {
  authorizeJob('startIndexing', ctx.access, call.headers.authorization)
  const source = resolveDataPath(args.source, ctx.access)
  return ctx.jobs.startIndexing(source, args.source, args.format ?? undefined, ctx.indexStore)
}

export function startCoTraining(ctx: ResolverContext, args: { config: string }, call: Call) {
  authorizeJob('startCoTraining', ctx.access, call.headers.authorization)
  if (!ctx.coTraining) throw ERR_JOBS_DISABLED('startCoTraining')
  return ctx.jobs.startCoTraining(coTrainingConfigFile(args.config), args.config, ctx.coTraining)
}

export function startEvaluation(ctx: ResolverContext, args: { data: string; ids?: string | null }, call: Call): never {
  authorizeJob('startEvaluation', ctx.access, call.headers.authorization)
  resolveDataPath(args.data, ctx.access)
  if (args.ids) resolveDataPath(args.ids, ctx.access)
  throw ERR_READER_UNAVAILABLE('startEvaluation', 'evaluation jobs from the API are not built yet; run `ambigqa eval ambignq`')
}

/** AnswerSet.found: whether any answer was found. */
export function found(set: { answers: unknown[] }): boolean {
  return set.answers.length > 0
}

/** Answer.rewriteStopped: whether question disambiguation stopped at the deadline before its rewrite. */
export function rewriteStopped(answer: { rewriteStopped?: true }): boolean {
  return answer.rewriteStopped === true
}

/** Subscription.jobProgress: the job's state on every change, until it ends. */
export function jobProgress(ctx: ResolverContext, args: { id: string }) {
  return ctx.jobs.watch(args.id)
}
