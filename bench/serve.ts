// Load on loopback against the GraphQL `ask` field (the whole pipeline with the default models) or
// `search` (retrieval only): throughput and p50/p99 at concurrency 1, 8, 64 (skipped when
// seconds-per-level is 0), then 200 clients for a soak whose only errors must be explicit
// overloads (503, refused at the door): 504s and other errors should be 0. Memory is the peak
// RSS of this process, which holds the server and the load generator both.
// For ask, each level runs twice in the same process, side by side: a query that selects the
// answers' rewritten questions (`question`: question disambiguation runs) and one that selects
// only `answers { answer confidence }` (it does not); the soak uses the second.
// Clients wait up to 40 s, longer than the server's own 30 s deadline, so every answer is counted.
// Usage: node dist/bench/serve.js [store] [seconds-per-level] [soak-seconds] [ask|search] [read]
// (read: passages read per question, default the configuration's reader.read).
// Ends with the soak as a BENCHMARKS.md row: clients, seconds, answers, 503s, 504s, other errors, peak MB.
import autocannon from 'autocannon'
import { loadConfig } from '../core/config.js'
import { limitsOf } from '../src/server/limits.js'
import { startServer } from '../src/server/start.js'

const store = process.argv[2] ?? 'data/demo'
const seconds = Number(process.argv[3] ?? 10)
const soakSeconds = Number(process.argv[4] ?? 60)
const field = process.argv[5] ?? 'ask'
if (field !== 'ask' && field !== 'search') throw new Error(`field must be ask or search, not ${field}`)
const read = process.argv[6] === undefined ? undefined : Number(process.argv[6])
if (read !== undefined && !(Number.isInteger(read) && read > 0)) throw new Error(`read must be a positive integer, not ${process.argv[6]}`)
const questions = ['when did the harry potter movie come out', 'who sings i\'m coming out', 'who played the doctor in dexter season 1', 'how many episodes are in season 2 of the crown']

const config = loadConfig({ flags: { store, 'log.level': 'warn' } })
const { bodyLimit } = config.server
const limits = limitsOf(config.server)
const app = await startServer(config, { host: '127.0.0.1', port: 0, bodyLimit, logLevel: 'warn', limits })
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/graphql`
let i = 0
const SELECTIONS = {
  question: 'ambiguous answers { answer question confidence evidence { id } }',
  answers: 'answers { answer confidence }',
  search: 'id score',
} as const
type Selection = keyof typeof SELECTIONS
const argumentsOf = (question: string) => field === 'search'
  ? `question: ${JSON.stringify(question)}, k: 10`
  : `question: ${JSON.stringify(question)}${read === undefined ? '' : `, options: { read: ${read} }`}`
const body = (selection: Selection) => JSON.stringify({ query: `{ ${field}(${argumentsOf(questions[i++ % questions.length]!)}) { ${SELECTIONS[selection]} } }` })

async function run(selection: Selection, connections: number, duration: number) {
  let answers = 0
  let overloaded = 0
  let timedOut = 0
  let otherErrors = 0
  let maxRss = 0
  const sampler = setInterval(() => { maxRss = Math.max(maxRss, process.memoryUsage().rss) }, 250)
  const result = await autocannon({
    url, connections, duration, timeout: 40, method: 'POST', headers: { 'content-type': 'application/json' },
    requests: [{ setupRequest: (request) => ({ ...request, body: body(selection) }), onResponse: (status, responseBody) => {
      if (status === 503 && responseBody.includes('AMBIGQA_ERR_OVERLOADED')) overloaded++
      else if (status === 504 && responseBody.includes('AMBIGQA_ERR_TIMEOUT')) timedOut++
      else if (status !== 200 || responseBody.includes('"errors"')) otherErrors++
      else answers++
    } }],
  })
  clearInterval(sampler)
  return {
    selection, connections, seconds: duration, requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50, p99Ms: result.latency.p99, answers, overloaded503: overloaded, timeouts504: timedOut, otherErrors,
    transportErrors: result.errors + result.timeouts, maxRssMB: Math.round(maxRss / 1e6),
  }
}

/** Waits until the server holds no request (a level's clients leave queued work behind), so that
 * each level starts on an idle server. */
async function drained(): Promise<void> {
  const metrics = url.replace(/\/graphql$/, '/metrics')
  for (let waited = 0; waited < 60_000; waited += 250) {
    const text = await (await fetch(metrics)).text()
    if (/^ambigqa_in_flight 0$/m.test(text)) return
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error('the server still holds requests 60 s after the level ended')
}

const selections: Selection[] = field === 'search' ? ['search'] : ['question', 'answers']
const rows = []
if (seconds > 0) {
  for (const c of [1, 8, 64]) {
    for (const selection of selections) {
      rows.push(await run(selection, c, seconds))
      await drained()
    }
  }
}
if (soakSeconds > 0) rows.push(await run(selections.at(-1)!, 200, soakSeconds))
console.log(JSON.stringify({ store, field, read: read ?? config.reader.read, retriever: config.retriever, reader: config.reader, limits, rows }, null, 2))
console.log('| selection | connections | answered/s | p50 ms | p99 ms | answered | 503 | 504 | other errors | peak RSS MB |')
for (const r of rows) console.log(`| ${r.selection} | ${r.connections} | ${r.requestsPerSecond} | ${r.p50Ms} | ${r.p99Ms} | ${r.answers} | ${r.overloaded503} | ${r.timeouts504} | ${r.otherErrors + r.transportErrors} | ${r.maxRssMB} |`)
const soak = rows.find((r) => r.connections === 200)
if (soak) {
  console.log('| clients | seconds | answers | 503 (refused) | 504 | other errors | peak RSS MB |')
  console.log(`| ${soak.connections} | ${soak.seconds} | ${soak.answers} | ${soak.overloaded503} | ${soak.timeouts504} | ${soak.otherErrors + soak.transportErrors} | ${soak.maxRssMB} |`)
}
await app.close()
process.exit(0)
