// The page at `/` as a person meets it: `ambigqa serve` with the shipped readers over the demo
// corpus (BM25), the page opened in Debian's headless Chromium with no host reachable but the
// server, the README's ambiguous question typed and sent with the keyboard. Its two GraphQL
// requests are held at the browser's edge (playwright's routing) so that each state the person
// sees (working, answers with their rewrites still coming, rewrites) is checked for certain,
// whatever the machine's speed. axe-core checks each state for accessibility.
// AMBIGQA_TEST_PAGE_SCREENSHOTS=<folder> also writes page-desktop.png and page-phone.png there
// (scripts/page-screenshot: docs/).
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { join, resolve } from 'node:path'
import { after, before, test } from 'node:test'
import type { ChildProcess } from 'node:child_process'
import type { Browser, Page } from 'playwright-core'
import { defaults } from '../core/config.js'
import { DEFAULT_ENCODERS_DIR, DEFAULT_LM_BASE_DIR } from '../core/paths.js'
import { axeViolations, chromiumMissing, launchChromium, type AxeViolation } from './helpers/chromium.js'
import { buildDemoStore } from './helpers/demo-store.js'
import { prerequisite } from './helpers/prerequisite.js'
import { runCli, type CliResult } from './helpers/run-cli.js'

const DEMO_QUESTION = 'Who played in the world series in 1989?'
const SCREENSHOTS = process.env.AMBIGQA_TEST_PAGE_SCREENSHOTS ? resolve(process.env.AMBIGQA_TEST_PAGE_SCREENSHOTS) : undefined

/** Why the default readers cannot answer here (the shipped models and what they load), or false. */
function modelsMissing(): string | false {
  const { reader, dense } = defaults
  const calibration = join(reader.calibration, 'calibration.json')
  const encoder = existsSync(calibration) ? (JSON.parse(readFileSync(calibration, 'utf8')) as { questionOnly: { encoder: string } }).questionOnly.encoder : dense.model
  const needed: [string, string][] = [
    [join(reader.extractive, 'model_quantized.onnx'), 'the shipped extractive reader (scripts/train-defaults builds it)'],
    [calibration, 'the shipped calibration (scripts/train-defaults builds it)'],
    [join(reader.qd, 'lm.json'), 'the shipped question-disambiguation adapter (assets/models/qd-lm)'],
    [join(DEFAULT_LM_BASE_DIR, 'gemma-3-270m-q4_k_m.gguf'), 'the QD model\'s base: run scripts/assets lm-base'],
    [join(DEFAULT_ENCODERS_DIR, encoder, 'model.onnx'), `the ambiguity detector's encoder: run scripts/assets ${encoder}`],
  ]
  const absent = needed.find(([file]) => !existsSync(file))
  return absent ? `needs ${absent[0]}: ${absent[1]}` : false
}

const serverSkip = prerequisite(modelsMissing())
// Both checked, so that CI reports each that is missing.
const chromiumSkip = prerequisite(chromiumMissing())
const browserSkip = serverSkip || chromiumSkip

let origin = ''
let server: ChildProcess | undefined
let exited: Promise<CliResult> | undefined
let browser: Browser | undefined

before(async () => {
  if (serverSkip) return
  const store = await buildDemoStore('server-page-')
  let listening: (port: number) => void = () => {}
  const port = new Promise<number>((resolve) => { listening = resolve })
  let log = ''
  // The CLI's own serve (runCli: BM25 over the store), on a port of its own.
  // A deadline far past the server's default 30 s: the first rewrite loads the QD model, which
  // took over 30 s on a busy two-core machine; the test is about the page, not the deadline.
  exited = runCli(['serve', '--store', store, '--port', '0', '--timeout-ms', '600000'], {
    env: { AMBIGQA_LOG_LEVEL: 'info' },
    onSpawn: (child) => {
      server = child
      child.stdout!.on('data', (chunk) => {
        log += chunk
        const match = /listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(log)
        if (match) listening(Number(match[1]))
      })
    },
  })
  const ended = exited.then((r) => { throw new Error(`ambigqa serve exited (${r.code ?? r.signal}) before listening:\n${r.stderr.slice(-3000)}${log.slice(-3000)}`) })
  origin = `http://127.0.0.1:${await Promise.race([port, ended])}`
  if (!browserSkip) browser = await launchChromium()
})

after(async () => {
  await browser?.close()
  server?.kill('SIGTERM')
  await exited
})

/** GET with a Host header of the test's choice (fetch sets its own). */
function get(path: string, host?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((done, fail) => {
    const req = httpRequest(`${origin}${path}`, { headers: host ? { host } : {} }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (c) => (body += c)).on('end', () => done({ status: res.statusCode!, headers: res.headers, body }))
    })
    req.on('error', fail).end()
  })
}

test('ambigqa serve serves the page at / and its two files, nothing else, under the Host check', { skip: serverSkip }, async () => {
  const page = await get('/')
  assert.equal(page.status, 200)
  assert.match(String(page.headers['content-type']), /^text\/html/)
  assert.match(String(page.headers['content-security-policy']), /default-src 'none'.*connect-src 'self'/)
  assert.doesNotMatch(page.body, /https?:\/\//, 'no absolute URL: the page loads nothing from elsewhere')
  const urls = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!).filter((u) => !u.startsWith('data:') && !u.startsWith('#'))
  assert.deepEqual(urls.filter((u) => u.startsWith('/page/')).sort(), ['/page/page.css', '/page/page.js'])
  for (const [path, type] of [['/page/page.js', /^text\/javascript/], ['/page/page.css', /^text\/css/]] as const) {
    const asset = await get(path)
    assert.equal(asset.status, 200, path)
    assert.match(String(asset.headers['content-type']), type, path)
    assert.ok(asset.body.length > 1000, path)
  }
  assert.equal((await get('/page/../package.json')).status, 404)
  assert.equal((await get('/page/index.html')).status, 404)
  assert.equal((await get('/graphiql')).status, 200, 'GraphiQL stays where it was')
  // A page elsewhere whose name was made to resolve here (DNS rebinding) gets no page.
  const foreign = await get('/', 'attacker.example')
  assert.equal(foreign.status, 421)
  assert.equal((JSON.parse(foreign.body) as { code: string }).code, 'AMBIGQA_ERR_HOST_NOT_ALLOWED')
})

/** A request held until released: `arrived` when the page sent it, `release` lets it through. */
function gate() {
  let arrive = () => {}
  let release = () => {}
  const arrived = new Promise<void>((r) => { arrive = r })
  const released = new Promise<void>((r) => { release = r })
  return { arrive, arrived, release, released }
}

/** Holds the page's GraphQL requests by operation name until released, and keeps what each answered. */
function holdGraphql(page: Page) {
  const gates = { Answers: gate(), Rewrites: gate() }
  const sent: { operation: string; query: string }[] = []
  // What the server answered each, once it has (a response event may reach the test after the page drew it).
  const replies = { Answers: gate(), Rewrites: gate() }
  const bodies: Record<string, any> = {}
  const answered = { Answers: replies.Answers.arrived.then(() => bodies.Answers), Rewrites: replies.Rewrites.arrived.then(() => bodies.Rewrites) }
  const operationOf = (query: string) => /query (\w+)/.exec(query)?.[1] ?? ''
  void page.route('**/graphql', async (route) => {
    const { query } = route.request().postDataJSON() as { query: string }
    sent.push({ operation: operationOf(query), query })
    const held = gates[operationOf(query) as keyof typeof gates]
    held?.arrive()
    await held?.released
    await route.continue()
  })
  page.on('response', (response) => {
    if (!response.url().endsWith('/graphql')) return
    const { query } = response.request().postDataJSON() as { query: string }
    const operation = operationOf(query)
    void response.json().then((body) => { bodies[operation] = body; replies[operation as keyof typeof replies]?.arrive() })
  })
  return { gates, sent, answered }
}

const words = (s: string) => (s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w, i, all) => !(i === 0 && all.length > 1 && ['a', 'an', 'the'].includes(w))).join(' ')
const serious = (violations: AxeViolation[]) => violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
/** The lesser violations are reported (node:test's diagnostics), not failed on. */
const axeNote = (state: string, violations: AxeViolation[]) => `axe-core on ${state}: ${violations.length} violations${violations.length ? ` (${violations.map((v) => `${v.impact} ${v.id}`).join(', ')})` : ''}`
const describeViolations = (violations: AxeViolation[]) => violations.map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`).join('\n')

test('the page asks the demo question: answers first, then each answer\'s rewritten question, its confidence and its evidence marked; keyboard only; no serious axe violation; nothing from the network', { skip: browserSkip, timeout: 600_000 }, async (t) => {
  const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } })
  // The first ask loads the readers and the QD model: minutes on a busy two-core machine.
  page.setDefaultTimeout(300_000)
  const requested: string[] = []
  page.on('request', (r) => requested.push(r.url()))
  const { gates, sent, answered } = holdGraphql(page)
  await page.goto(`${origin}/`)
  assert.equal(await page.title(), 'ambigqa · ask a question')

  // Keyboard alone: the first Tab lands in the question box, Enter asks.
  await page.keyboard.press('Tab')
  assert.equal(await page.evaluate('document.activeElement.id'), 'question')
  assert.equal(await page.getByLabel('Your question').count(), 1, 'the text box has a label')
  await page.keyboard.type(DEMO_QUESTION)
  await page.keyboard.press('Enter')

  // Working: said in the status (a live region), the spinner turning, no answers yet.
  await gates.Answers.arrived
  await page.locator('#status', { hasText: 'Finding answers' }).waitFor()
  assert.equal(await page.locator('#spinner').isVisible(), true)
  assert.equal(await page.locator('#results').isVisible(), false)
  gates.Answers.release()

  // The answers, while the rewrites are still on their way (held).
  await gates.Rewrites.arrived
  const cards = page.locator('#answers > li.answer')
  await cards.first().waitFor()
  const set = (await answered.Answers).data.ask as { ambiguous: boolean; ambiguity: number | null; answers: { answer: string; confidence: number }[]; passages: unknown[] }
  assert.ok(set.answers.length >= 2, `the demo question has two answers or more, got ${JSON.stringify(set.answers.map((a) => a.answer))}`)
  assert.equal(await cards.count(), set.answers.length)
  assert.equal(await page.locator('.reading.pending').count(), set.answers.length, 'every reading says it is being rewritten')
  assert.match(await page.locator('#status').innerText(), new RegExp(`${set.answers.length} answers found\\. Rewriting`))
  // The first request left the rewrites out (the server computes them only when selected).
  assert.deepEqual(sent.map((s) => s.operation), ['Answers', 'Rewrites'])
  assert.doesNotMatch(sent[0]!.query, /rewritten/)
  assert.match(sent[1]!.query, /answers \{ answer question rewritten rewriteStopped \}/)
  assert.equal('question' in set.answers[0]!, false)
  // An ambiguous question says it has several readings.
  assert.match(await page.locator('#summary').innerText(), set.ambiguous ? /ambiguous: it has several readings/ : /answers\. The question looks unambiguous/)
  gates.Rewrites.release()

  await page.locator('#spinner').waitFor({ state: 'hidden' })
  assert.equal(await page.locator('#error').isVisible(), false, `the rewrites failed: ${await page.locator('#error').innerText()}`)
  assert.match(await page.locator('#status').innerText(), /Each shows the question it answers/)
  const rewrites = (await answered.Rewrites).data.ask.answers as { answer: string; question: string; rewritten: boolean }[]
  let rewritten = 0
  for (const [i, a] of set.answers.entries()) {
    const card = cards.nth(i)
    assert.equal(await card.locator('h3').innerText(), a.answer)
    const reading = await card.locator('.reading-text').innerText()
    const mine = rewrites.find((r) => r.answer === a.answer)
    if (mine?.rewritten) {
      rewritten++
      assert.equal(reading, mine.question)
      assert.notEqual(words(reading), words(DEMO_QUESTION), 'a rewrite differs from the prompt')
      assert.equal(await card.locator('.reading.rewritten').count(), 1)
    } else {
      assert.equal(reading, DEMO_QUESTION, 'an answer not rewritten shows the prompt')
    }
    assert.equal(await card.locator('.confidence .value').innerText(), `${Math.round(100 * a.confidence)}%`)
    // The evidence: its title and text, the answer marked in it.
    const evidence = card.locator('.evidence > blockquote.passage')
    assert.equal(await evidence.count(), 1)
    assert.ok((await evidence.locator('.passage-text').innerText()).length > 50)
    const marks = await evidence.locator('mark').allInnerTexts()
    assert.ok(marks.length > 0, `'${a.answer}' is marked in its evidence`)
    for (const m of marks) assert.equal(words(m), words(a.answer))
  }
  assert.ok(rewritten >= 2, `two answers or more carry a rewritten question, got ${rewritten}`)
  assert.equal(await page.locator('#error').isVisible(), false)

  if (SCREENSHOTS) {
    mkdirSync(SCREENSHOTS, { recursive: true })
    await page.screenshot({ path: join(SCREENSHOTS, 'page-desktop.png'), fullPage: true })
    await page.setViewportSize({ width: 390, height: 844 })
    await page.screenshot({ path: join(SCREENSHOTS, 'page-phone.png') })
    await page.setViewportSize({ width: 1280, height: 900 })
  }
  // At a phone's width nothing runs off the side.
  await page.setViewportSize({ width: 360, height: 740 })
  assert.ok(Number(await page.evaluate('document.documentElement.scrollWidth')) <= 360, 'no horizontal scrolling at 360 px')
  await page.setViewportSize({ width: 1280, height: 900 })

  // The other passages retrieved, opened from an answer with the keyboard.
  await cards.first().locator('a.see-passages').focus()
  await page.keyboard.press('Enter')
  assert.equal(await page.locator('#passages').getAttribute('open'), '')
  assert.equal(await page.evaluate('document.activeElement.id'), 'passages-summary')
  assert.equal(await page.locator('#passage-list > li').count(), set.passages.length)
  assert.ok(set.passages.length > set.answers.length)

  const violations = await axeViolations(page)
  t.diagnostic(axeNote('the answers, rewrites and passages', violations))
  assert.deepEqual(serious(violations), [], describeViolations(serious(violations)))
  // Everything the page loaded came from the server; nothing was asked of any other host.
  assert.deepEqual(requested.filter((u) => !u.startsWith(`${origin}/`)), [])
  await page.close()
})

test('an error from the server is shown as its coded message, and the page stays usable', { skip: browserSkip, timeout: 120_000 }, async (t) => {
  const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } })
  await page.goto(`${origin}/`)
  const tooLong = 'why '.repeat(Math.ceil((defaults.server.maxQuestionLength + 1) / 4))
  await page.getByLabel('Your question').fill(tooLong)
  await page.getByRole('button', { name: 'Ask' }).click()
  const alert = page.getByRole('alert')
  await alert.waitFor()
  const text = await alert.innerText()
  assert.match(text, new RegExp(`AMBIGQA_ERR_QUESTION_INVALID: question has \\d+ characters, more than ${defaults.server.maxQuestionLength}`))
  assert.equal(await page.locator('#results').isVisible(), false)
  assert.equal(await page.locator('#spinner').isVisible(), false)
  assert.equal(await page.locator('#status').innerText(), 'The question was not answered.')
  // The question stays in the box to be corrected, and the box and button still work.
  assert.equal(await page.getByLabel('Your question').inputValue(), tooLong)
  assert.equal(await page.getByRole('button', { name: 'Ask' }).isEnabled(), true)
  const violations = await axeViolations(page)
  t.diagnostic(axeNote('the error', violations))
  assert.deepEqual(serious(violations), [], describeViolations(serious(violations)))
  await page.close()
})
