// A live Lucene 8 BM25 peer for the retrieval benchmark: the same passages and questions go
// through Lucene's EnglishAnalyzer + BM25Similarity (most_fields over title and text) in a
// JVM, so our own BM25 can be compared against it side by side in one run.
//
// The Java side is bench/lucene/LuceneBm25.java, built by scripts/lucene-peer against
// Debian's liblucene8-java jars in /usr/share/java.

import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createWriteStream, existsSync, readdirSync, statSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { PROJECT_ROOT } from '../core/paths.js'

export interface LucenePeerResult {
  /** Top-k passage ids per question, in question order. */
  hits: string[][]
  /** BM25 scores aligned with `hits`. */
  scores: number[][]
  /** Per-question latency of search() + fetching the stored ids, ms (after a JIT warm-up). */
  latenciesMs: number[]
  p50: number
  p99: number
  /** Wall time of indexing, including the final forceMerge(1). */
  indexSeconds: number
  /** Wall time of indexing up to the first commit, without the forceMerge. */
  indexSecondsWithoutMerge: number
  indexBytes: number
  passages: number
}

export interface PeerPassage {
  id: string
  title: string
  text: string
}

export interface RunLucenePeerOptions {
  passages: AsyncIterable<PeerPassage> | Iterable<PeerPassage>
  questions: string[]
  k: number
  /** BM25 k1 (default 0.9, Anserini's). */
  k1?: number
  /** BM25 b (default 0.4, Anserini's). */
  b?: number
  /** Holds passages.jsonl, questions.txt, the index and the results; created if missing. */
  workDir: string
  /** Count each distinct query term once (default false: like Lucene's QueryBuilder / ES match). */
  dedupeTerms?: boolean
  /** Questions searched once, untimed, before the timed pass (default 50). */
  warmup?: number
}

/** Where Debian puts the jars; LUCENE_JAVA_DIR overrides (the script reads it too). */
function javaDir(): string {
  return process.env.LUCENE_JAVA_DIR ?? '/usr/share/java'
}

function compareVersions(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true })
}

/** The newest lucene-<name>-8*.jar in the Java dir (Debian ships lucene-core-8.7.0.jar for
 * Lucene 8.8.1), else (unless LUCENE_JAVA_DIR is set) Debian's maven-repo 8.x symlink. */
function findJar(name: string): string | undefined {
  const dir = javaDir()
  let names: string[] = []
  try {
    names = readdirSync(dir).filter((f) => f.startsWith(`lucene-${name}-8`) && f.endsWith('.jar'))
  } catch {
    // no such dir
  }
  names.sort(compareVersions)
  const last = names[names.length - 1]
  if (last !== undefined) return path.join(dir, last)
  if (process.env.LUCENE_JAVA_DIR !== undefined) return undefined
  const mvn = `/usr/share/maven-repo/org/apache/lucene/lucene-${name}/8.x/lucene-${name}-8.x.jar`
  return existsSync(mvn) ? mvn : undefined
}

function luceneJars(): string[] | undefined {
  const core = findJar('core')
  const common = findJar('analyzers-common')
  return core !== undefined && common !== undefined ? [core, common] : undefined
}

function buildDir(): string {
  return path.join(PROJECT_ROOT, 'bench', 'lucene', 'build')
}

function buildIsFresh(): boolean {
  const root = PROJECT_ROOT
  const cls = path.join(buildDir(), 'LuceneBm25.class')
  if (!existsSync(cls)) return false
  const t = statSync(cls).mtimeMs
  return (
    statSync(path.join(root, 'bench', 'lucene', 'LuceneBm25.java')).mtimeMs <= t &&
    statSync(path.join(root, 'scripts', 'lucene-peer')).mtimeMs <= t
  )
}

function onPath(cmd: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir !== '' && existsSync(path.join(dir, cmd))) return true
  }
  return false
}

function javaCommand(): string {
  const home = process.env.JAVA_HOME
  if (home !== undefined && home !== '' && existsSync(path.join(home, 'bin', 'java'))) {
    return path.join(home, 'bin', 'java')
  }
  return 'java'
}

/** Whether the peer can run here without installing anything: `java` present, the Lucene 8
 * jars present, and either a fresh build or `javac` to make one. `reason` says what is missing. */
export function lucenePeerAvailability(): { ok: true } | { ok: false; reason: string } {
  if (javaCommand() === 'java' && !onPath('java')) return { ok: false, reason: '`java` is not on PATH' }
  if (luceneJars() === undefined) {
    return {
      ok: false,
      reason: `Lucene 8 jars (lucene-core-8*.jar, lucene-analyzers-common-8*.jar) not in ${javaDir()}; run scripts/lucene-peer (apt-get install liblucene8-java)`,
    }
  }
  if (!buildIsFresh() && !onPath('javac')) return { ok: false, reason: '`javac` is not on PATH and bench/lucene/build is missing or stale' }
  return { ok: true }
}

interface RunResult {
  stdout: string
  stderr: string
}

function run(cmd: string, args: string[], opts: { input?: string; cwd?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'] })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (b: Buffer) => out.push(b))
    child.stderr.on('data', (b: Buffer) => err.push(b))
    child.on('error', (e) => reject(new Error(`lucene-peer: cannot run ${cmd}: ${e.message}`, { cause: e })))
    child.on('close', (code, signal) => {
      const stdout = Buffer.concat(out).toString('utf8')
      const stderr = Buffer.concat(err).toString('utf8')
      if (code === 0) resolve({ stdout, stderr })
      else {
        const why = signal !== null ? `signal ${signal}` : `exit code ${String(code)}`
        reject(new Error(`lucene-peer: ${path.basename(cmd)} ${args.slice(0, 4).join(' ')} … failed (${why}):\n${stderr.trim()}`))
      }
    })
    child.stdin.on('error', () => {
      // the child may exit before reading its stdin; the close handler reports that
    })
    child.stdin.end(opts.input ?? '')
  })
}

let ensured: Promise<string> | undefined

/** Builds the peer if needed (runs scripts/lucene-peer, which installs liblucene8-java when
 * missing and compiles into bench/lucene/build/) and returns the java classpath. */
export function ensureLucenePeer(): Promise<string> {
  ensured ??= (async () => {
    const jars = luceneJars()
    if (jars !== undefined && buildIsFresh()) return [buildDir(), ...jars].join(path.delimiter)
    const script = path.join(PROJECT_ROOT, 'scripts', 'lucene-peer')
    const { stdout } = await run('bash', [script])
    const lines = stdout.trim().split('\n')
    const cp = lines[lines.length - 1]
    if (cp === undefined || cp === '') throw new Error('lucene-peer: scripts/lucene-peer printed no classpath')
    return cp
  })()
  ensured.catch(() => {
    ensured = undefined // let a later call retry
  })
  return ensured
}

async function java(args: string[], input?: string): Promise<RunResult> {
  const cp = await ensureLucenePeer()
  return run(javaCommand(), ['-Xmx2g', '-cp', cp, 'LuceneBm25', ...args], input === undefined ? {} : { input })
}

function lastJsonLine(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n')
  const last = lines[lines.length - 1] ?? ''
  try {
    return JSON.parse(last) as Record<string, unknown>
  } catch {
    throw new Error(`lucene-peer: expected a JSON summary line, got: ${stdout.slice(0, 500)}`)
  }
}

function num(o: Record<string, unknown>, key: string): number {
  const v = o[key]
  if (typeof v !== 'number') throw new Error(`lucene-peer: summary lacks numeric "${key}": ${JSON.stringify(o)}`)
  return v
}

async function writePassages(file: string, passages: AsyncIterable<PeerPassage> | Iterable<PeerPassage>): Promise<number> {
  const ws = createWriteStream(file, { encoding: 'utf8' })
  const failed = once(ws, 'error').then(([e]) => {
    throw e
  })
  failed.catch(() => undefined)
  let n = 0
  let chunk = ''
  const flush = async (): Promise<void> => {
    if (!ws.write(chunk)) await Promise.race([once(ws, 'drain'), failed])
    chunk = ''
  }
  for await (const p of passages) {
    // JSON.stringify escapes lone surrogates and all control characters, so one object = one line
    chunk += JSON.stringify({ id: String(p.id), title: p.title ?? '', text: p.text ?? '' }) + '\n'
    n++
    if (chunk.length >= 1 << 16) await flush()
  }
  if (chunk !== '') await flush()
  ws.end()
  await Promise.race([once(ws, 'finish'), failed])
  return n
}

/** Indexes the passages with Lucene and runs the questions; results are in question order. */
export async function runLucenePeer(opts: RunLucenePeerOptions): Promise<LucenePeerResult> {
  if (!Number.isInteger(opts.k) || opts.k < 1) throw new Error(`lucene-peer: k must be a positive integer, got ${opts.k}`)
  const workDir = path.resolve(opts.workDir)
  await mkdir(workDir, { recursive: true })
  const passagesFile = path.join(workDir, 'passages.jsonl')
  const questionsFile = path.join(workDir, 'questions.txt')
  const indexDir = path.join(workDir, 'index')
  const outFile = path.join(workDir, 'results.jsonl')

  await writePassages(passagesFile, opts.passages)
  // one question a line: Java's readLine splits on \n, \r and \r\n
  const qs = opts.questions.map((q) => q.replace(/[\r\n]+/g, ' '))
  await writeFile(questionsFile, qs.map((q) => q + '\n').join(''), 'utf8')

  const sim: string[] = []
  if (opts.k1 !== undefined) sim.push('--k1', String(opts.k1))
  if (opts.b !== undefined) sim.push('--b', String(opts.b))

  const idx = lastJsonLine((await java(['index', ...sim, passagesFile, indexDir])).stdout)
  const searchArgs = ['search', ...sim]
  if (opts.dedupeTerms === true) searchArgs.push('--dedupe-terms')
  if (opts.warmup !== undefined) searchArgs.push('--warmup', String(opts.warmup))
  const srch = lastJsonLine((await java([...searchArgs, indexDir, questionsFile, String(opts.k), outFile])).stdout)

  const hits: string[][] = []
  const scores: number[][] = []
  const latenciesMs: number[] = []
  for (const line of (await readFile(outFile, 'utf8')).split('\n')) {
    if (line === '') continue
    const r = JSON.parse(line) as { ids: string[]; scores: number[]; ms: number }
    hits.push(r.ids)
    scores.push(r.scores)
    latenciesMs.push(r.ms)
  }
  if (hits.length !== opts.questions.length) {
    throw new Error(`lucene-peer: ${opts.questions.length} questions but ${hits.length} result lines in ${outFile}`)
  }
  return {
    hits,
    scores,
    latenciesMs,
    p50: num(srch, 'p50'),
    p99: num(srch, 'p99'),
    indexSeconds: num(idx, 'seconds'),
    indexSecondsWithoutMerge: num(idx, 'secondsWithoutMerge'),
    indexBytes: num(idx, 'indexBytes'),
    passages: num(idx, 'passages'),
  }
}

/** Lucene's EnglishAnalyzer tokens for `text` (what both the index and the queries see). */
export async function luceneAnalyze(text: string): Promise<string[]> {
  const { stdout } = await java(['analyze', '-'], text)
  return stdout.split('\n').filter((t) => t !== '')
}
