// The limiter's promise under load (issue 48): an admitted ask finishes before its deadline, and
// anything else is refused at once with HTTP 503 and Retry-After. N clients each ask, wait for the
// reply and ask again at once (a refused one too, the harshest client; with --honor-retry-after a
// refused client waits the seconds the server said first), for `seconds`, against
// the default pipeline on a store; each level on a freshly started server (so each starts cold:
// nothing measured yet), once selecting the answers' rewritten questions (question
// disambiguation runs) and once only `answers { answer confidence }` (it does not), side by side.
// The server runs in a child process, so that the load generator's event loop does not delay the
// server's replies, nor the server's the clock that times them.
// With --peer DIST, the same levels also run on another build (say the previous commit, exported
// and built in a folder of its own: DIST is its dist/), each level on both builds one after the
// other; --build DIST serves another build than this one's as the first.
// How busy the machine was: the CPU cores that processes other than this bench and its server
// used during each level (from /proc), and the load average; and how late the server's event loop
// ran (a refusal waits for it: a slow refusal with a late loop is the loop's, not the limiter's),
// and each refusal's time inside the server, from its request's parsing to its response's end (the
// rest of what a client waits is the machine scheduling the two processes). Beside the refusals, the
// floor any reply has here: GET /health/live (no GraphQL, no limiter) asked every 200 ms during the
// level, and how late this bench's own event loop ran (a reply waits for it to be read).
// An answer whose question disambiguation stopped at its deadline (Answer.rewriteStopped, on a
// build that has it) is counted apart: answered, but with some rewrites missing.
// Usage: node dist/bench/overload.js [--store DIR] [--seconds 60] [--clients 8,32] [--build DIST] [--peer DIST]
//   [--honor-retry-after] [--selections rewrites,answers]
import { fork, type ChildProcess } from 'node:child_process'
import { subscribe } from 'node:diagnostics_channel'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import { resolve } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { parseArgs } from 'node:util'

const SELECTIONS = {
  rewrites: 'ambiguous answers { answer question confidence evidence { id } }',
  answers: 'answers { answer confidence }',
} as const
type Selection = keyof typeof SELECTIONS
const QUESTIONS = ['when did the harry potter movie come out', 'who sings i\'m coming out', 'who played the doctor in dexter season 1', 'how many episodes are in season 2 of the crown']
/** A refusal slower than this breaks the promise of "at once". */
const REFUSAL_LIMIT_MS = 50
/** Clients wait longer than the server's own 30 s deadline, so that every late answer is seen. */
const CLIENT_TIMEOUT_MS = 40_000

interface Reply { status: number; body: string; retryAfter: string | undefined; ms: number }

function post(agent: http.Agent, port: number, body: string): Promise<Reply> {
  const start = performance.now()
  return new Promise((done, fail) => {
    const request = http.request({ host: '127.0.0.1', port, path: '/graphql', method: 'POST', agent, timeout: CLIENT_TIMEOUT_MS, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (c: Buffer) => chunks.push(c))
      response.on('end', () => {
        const header = response.headers['retry-after']
        done({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), retryAfter: Array.isArray(header) ? header[0] : header, ms: performance.now() - start })
      })
      response.on('error', fail)
    })
    request.on('timeout', () => request.destroy(new Error(`no reply within ${CLIENT_TIMEOUT_MS} ms`)))
    request.on('error', fail)
    request.end(body)
  })
}

/** CPU time (jiffies) the whole machine spent busy, and what `pids` spent, so far. */
function cpuNow(pids: number[]): { busy: number; ours: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  const busy = fields.slice(0, 8).reduce((a, b) => a + b, 0) - fields[3]! - fields[4]!
  let ours = 0
  for (const pid of pids) {
    try {
      // utime and stime, after the command name (which may hold spaces) and its ')'.
      const after = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
      ours += Number(after[11]) + Number(after[12])
    } catch { /* gone */ }
  }
  return { busy, ours }
}

const percentile = (sorted: number[], p: number) => sorted.length === 0 ? null : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!)

async function level(server: Server, selection: Selection, clients: number, seconds: number, honorRetryAfter: boolean) {
  const { port } = server
  const serverPid = server.child.pid!
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients })
  const answered: number[] = []
  const refused: number[] = []
  let withoutRetryAfter = 0
  let timedOut = 0
  /** Each 504's request: seconds into the level at which it was sent, and its question. */
  const timedOutSent: { at: number; question: string }[] = []
  const others: string[] = []
  let stoppedRewrites = 0
  let i = 0
  // A build whose answers say when their rewrite was stopped at the deadline is asked for it.
  const stoppedField = selection === 'rewrites' && await answerHas(port, 'rewriteStopped')
  const fields = stoppedField ? SELECTIONS[selection].replace('question', 'question rewriteStopped') : SELECTIONS[selection]
  const ask = (question: string) => JSON.stringify({ query: `{ ask(question: ${JSON.stringify(question)}) { ${fields} } }` })
  const cpu0 = cpuNow([process.pid, serverPid])
  const load0 = readFileSync('/proc/loadavg', 'utf8').split(' ')[0]
  const start = performance.now()
  const end = start + seconds * 1000
  let last = start
  const client = async () => {
    while (performance.now() < end) {
      try {
        const sent = performance.now()
        const question = QUESTIONS[i++ % QUESTIONS.length]!
        const r = await post(agent, port, ask(question))
        last = performance.now()
        if (r.status === 200 && !r.body.includes('"errors"')) {
          answered.push(r.ms)
          if (r.body.includes('"rewriteStopped":true')) stoppedRewrites++
        }
        else if (r.status === 503 && r.body.includes('AMBIGQA_ERR_OVERLOADED')) {
          refused.push(r.ms)
          if (r.retryAfter === undefined || !(Number(r.retryAfter) >= 1)) withoutRetryAfter++
          else if (honorRetryAfter) await new Promise((done) => setTimeout(done, Math.min(Number(r.retryAfter) * 1000, end - performance.now())))
        } else if (r.status === 504 && r.body.includes('AMBIGQA_ERR_TIMEOUT')) {
          timedOut++
          timedOutSent.push({ at: Math.round((sent - start) / 100) / 10, question })
        }
        else others.push(`${r.status} ${r.body.slice(0, 200)}`)
      } catch (error) {
        last = performance.now()
        others.push(String(error))
      }
    }
  }
  // The floor: a reply with no GraphQL and no limiter in it, every 200 ms, on a connection of its own.
  const probeAgent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  const probes: number[] = []
  const probe = async () => {
    while (performance.now() < end) {
      const sent = performance.now()
      await new Promise<void>((done) => {
        http.get({ host: '127.0.0.1', port, path: '/health/live', agent: probeAgent }, (response) => {
          response.resume()
          response.on('end', () => { probes.push(performance.now() - sent); done() })
        }).on('error', () => done())
      })
      await new Promise((done) => setTimeout(done, 200))
    }
  }
  const ownLoop = monitorEventLoopDelay({ resolution: 10 })
  ownLoop.enable()
  // The requests in flight at the end are waited for and counted: a late answer is what this looks for.
  await Promise.all([...Array.from({ length: clients }, client), probe()])
  ownLoop.disable()
  probeAgent.destroy()
  probes.sort((a, b) => a - b)
  const elapsed = (last - start) / 1000
  const cpu1 = cpuNow([process.pid, serverPid])
  const loop = await server.loopDelay()
  const measured = await limiterEstimates(port)
  agent.destroy()
  answered.sort((a, b) => a - b)
  refused.sort((a, b) => a - b)
  return {
    selection, clients, seconds: Math.round(elapsed * 10) / 10,
    answered: answered.length, answeredPerSecond: Math.round((answered.length / elapsed) * 100) / 100,
    // Of those, answers with a rewrite stopped at the deadline (null: the build cannot say).
    answeredRewritesStopped: stoppedField ? stoppedRewrites : null,
    answerP50Ms: percentile(answered, 0.5), answerP99Ms: percentile(answered, 0.99), answerMaxMs: answered.length ? Math.round(answered.at(-1)!) : null,
    refused: refused.length, refusalP50Ms: percentile(refused, 0.5), refusalP99Ms: percentile(refused, 0.99), refusalMaxMs: refused.length ? Math.round(refused.at(-1)!) : null,
    refusalsOverLimit: refused.filter((ms) => ms > REFUSAL_LIMIT_MS).length, withoutRetryAfter,
    timeouts504: timedOut, timedOutSent, otherErrors: others.length, firstOtherErrors: others.slice(0, 3),
    // Jiffies are 1/100 s; cores = busy seconds over elapsed seconds.
    otherCores: Math.round((((cpu1.busy - cpu1.ours) - (cpu0.busy - cpu0.ours)) / 100 / elapsed) * 100) / 100,
    benchCores: Math.round(((cpu1.ours - cpu0.ours) / 100 / elapsed) * 100) / 100,
    loadAverage: `${load0} → ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`,
    serverLoopDelayP99Ms: loop.p99, serverLoopDelayMaxMs: loop.max,
    refusalInServerP50Ms: loop.refusalP50, refusalInServerP99Ms: loop.refusalP99, refusalInServerMaxMs: loop.refusalMax,
    liveProbeP50Ms: percentile(probes, 0.5), liveProbeP99Ms: percentile(probes, 0.99), liveProbeMaxMs: probes.length ? Math.round(probes.at(-1)!) : null,
    benchLoopDelayP99Ms: Math.round(ownLoop.percentile(99) / 1e6), benchLoopDelayMaxMs: Math.round(ownLoop.max / 1e6),
    // What the limiter learnt a request of each kind costs here (seconds of the server's time).
    limiterMeasured: measured,
  }
}

/** Whether the server's schema gives Answer the field `name`. */
async function answerHas(port: number, name: string): Promise<boolean> {
  const response = await fetch(`http://127.0.0.1:${port}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __type(name: "Answer") { fields { name } } }' }) })
  const body = await response.json() as { data?: { __type?: { fields?: { name: string }[] } } }
  return body.data?.__type?.fields?.some((f) => f.name === name) ?? false
}

/** The limiter's measured service times from /metrics: { kind: { mean, deviation } } (none from a build without them). */
async function limiterEstimates(port: number): Promise<Record<string, Record<string, number>>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  const out: Record<string, Record<string, number>> = {}
  for (const m of text.matchAll(/^ambigqa_limiter_service_seconds\{kind="([^"]+)",stat="(\w+)"\} (\S+)$/gm)) {
    (out[m[1]!] ??= {})[m[2]!] = Math.round(Number(m[3]) * 100) / 100
  }
  return out
}

interface ServerTimes { p99: number; max: number; refusalP50: number | null; refusalP99: number | null; refusalMax: number | null }
interface Server { child: ChildProcess; port: number; limits: unknown; loopDelay: () => Promise<ServerTimes> }

async function serve(dist: string, store: string): Promise<Server> {
  const child = fork(import.meta.filename, ['--serve', dist, store], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const message = await new Promise<{ port: number; limits: unknown }>((done, fail) => {
    child.once('message', (m) => done(m as { port: number; limits: unknown }))
    child.once('exit', (code) => fail(new Error(`the server (${dist}) exited with ${code} before it listened`)))
  })
  const loopDelay = () => new Promise<ServerTimes>((done) => {
    child.once('message', (m) => done(m as ServerTimes))
    child.send('loop delay')
  })
  return { child, loopDelay, ...message }
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((done) => child.once('exit', done))
  child.disconnect()
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  await exited
  clearTimeout(timer)
}

async function main() {
  const { values } = parseArgs({ options: { store: { type: 'string', default: 'data/demo' }, seconds: { type: 'string', default: '60' }, clients: { type: 'string', default: '8,32' }, build: { type: 'string' }, peer: { type: 'string' }, 'honor-retry-after': { type: 'boolean', default: false }, selections: { type: 'string', default: 'rewrites,answers' } } })
  const seconds = Number(values.seconds)
  const levels = values.clients.split(',').map(Number)
  const selections = values.selections.split(',') as Selection[]
  if (selections.some((s) => !(s in SELECTIONS))) throw new Error(`--selections takes ${Object.keys(SELECTIONS).join(', ')}`)
  if (!(seconds > 0) || levels.some((c) => !(Number.isInteger(c) && c > 0))) throw new Error('--seconds must be positive and --clients a list of positive integers')
  const builds: [string, string][] = [['build', resolve(values.build ?? resolve(import.meta.dirname, '..'))]]
  if (values.peer) builds.push(['peer', resolve(values.peer)])
  const rows = []
  let limits: unknown
  for (const clients of levels) {
    for (const selection of selections) {
      for (const [build, dist] of builds) {
        const server = await serve(dist, values.store)
        limits = server.limits
        const row = { build, ...await level(server, selection, clients, seconds, values['honor-retry-after']) }
        await stop(server.child)
        console.error(JSON.stringify(row))
        rows.push(row)
      }
    }
  }
  console.log(JSON.stringify({ date: new Date().toISOString(), store: values.store, seconds, honorRetryAfter: values['honor-retry-after'], limits, refusalLimitMs: REFUSAL_LIMIT_MS, builds: Object.fromEntries(builds), rows }, null, 2))
  console.log(`| build | selection | clients | answered | of them rewrites stopped | answered/s | answer p50 / p99 / max ms | 504 | refused (503) | refusal p50 / p99 / max ms | refusals > ${REFUSAL_LIMIT_MS} ms | in the server: refusal p50 / p99 / max ms | /health/live p50 / p99 / max ms | without Retry-After | other errors | server loop delay p99 / max ms | bench loop delay p99 / max ms | limiter's measure, s (mean ± deviation) | other processes' cores | load average |`)
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
  const measure = (m?: Record<string, number>) => (m ? `${m.mean} ± ${m.deviation}` : '—')
  for (const r of rows) {
    console.log(`| ${r.build} | ${r.selection} | ${r.clients} | ${r.answered} | ${r.answeredRewritesStopped ?? '—'} | ${r.answeredPerSecond} | ${r.answerP50Ms} / ${r.answerP99Ms} / ${r.answerMaxMs} | ${r.timeouts504} | ${r.refused} | ${r.refusalP50Ms} / ${r.refusalP99Ms} / ${r.refusalMaxMs} | ${r.refusalsOverLimit} | ${r.refusalInServerP50Ms} / ${r.refusalInServerP99Ms} / ${r.refusalInServerMaxMs} | ${r.liveProbeP50Ms} / ${r.liveProbeP99Ms} / ${r.liveProbeMaxMs} | ${r.withoutRetryAfter} | ${r.otherErrors} | ${r.serverLoopDelayP99Ms} / ${r.serverLoopDelayMaxMs} | ${r.benchLoopDelayP99Ms} / ${r.benchLoopDelayMaxMs} | ${measure(r.limiterMeasured[r.selection === 'rewrites' ? 'ask with rewrites' : 'ask'])} | ${r.otherCores} | ${r.loadAverage} |`)
  }
}

// The child: `overload.js --serve DIST STORE` starts DIST's server on a free port and tells it.
if (process.argv[2] === '--serve') {
  const [dist, store] = [process.argv[3]!, process.argv[4]!]
  const { loadConfig } = await import(resolve(dist, 'core/config.js'))
  const { limitsOf } = await import(resolve(dist, 'src/server/limits.js'))
  const { startServer } = await import(resolve(dist, 'src/server/start.js'))
  const config = loadConfig({ flags: { store, 'log.level': 'warn' } })
  const app = await startServer(config, { host: '127.0.0.1', port: 0, bodyLimit: config.server.bodyLimit, logLevel: 'warn', limits: limitsOf(config.server) })
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  const arrived = new WeakMap<object, number>()
  const refusals: number[] = []
  subscribe('http.server.request.start', (m) => { arrived.set((m as { response: object }).response, performance.now()) })
  subscribe('http.server.response.finish', (m) => {
    const { response } = m as { response: { statusCode: number } }
    const at = arrived.get(response)
    if (at !== undefined && response.statusCode === 503) refusals.push(performance.now() - at)
  })
  process.on('message', () => {
    refusals.sort((a, b) => a - b)
    process.send!({ p99: Math.round(loop.percentile(99) / 1e6), max: Math.round(loop.max / 1e6), refusalP50: percentile(refusals, 0.5), refusalP99: percentile(refusals, 0.99), refusalMax: refusals.length ? Math.round(refusals.at(-1)!) : null })
  })
  process.send!({ port: (app.server.address() as { port: number }).port, limits: limitsOf(config.server) })
  process.on('disconnect', () => { void app.close().then(() => process.exit(0)) })
} else {
  await main()
}
