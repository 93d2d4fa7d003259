// Debian's headless Chromium (the `chromium` package), driven by playwright-core for the tests
// that look at a page as a person would. Offline as far as the page can tell: every host name
// but 127.0.0.1 fails to resolve, so anything the page tried to load from elsewhere would be
// missing (and the tests also list what it requested).
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { chromium, type Browser, type Page } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'

/** Why Chromium cannot run here, or false. */
export function chromiumMissing(): string | false {
  return existsSync(CHROMIUM) ? false : `needs ${CHROMIUM}: apt-get install chromium (Debian's package)`
}

/**
 * Headless, no GPU, nothing that phones home; playwright-core gives it a fresh profile
 * (--user-data-dir in a temporary folder) and removes it on close.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    chromiumSandbox: false,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    ],
  })
}

const require = createRequire(import.meta.url)
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')

export interface AxeViolation { id: string; impact: string | null; help: string; nodes: { target: unknown[]; failureSummary?: string }[] }

/**
 * axe-core run inside the page (evaluated through the DevTools protocol, so the page's Content
 * Security Policy does not block it): the WCAG A and AA rules and axe's best practices.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE)
  return page.evaluate(async () => {
    // This runs in the page (no DOM types in this project's lib).
    const { axe, document } = globalThis as unknown as { document: unknown; axe: { run(context: unknown, options: unknown): Promise<{ violations: AxeViolation[] }> } }
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] })
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })) }))
  })
}
