// The page for people at `/`: assets/page (one HTML file, its script and its style, no framework),
// which asks this server's /graphql. Read once at start, so a running server serves one version;
// only the files named here are served. It goes through the server's hooks like every route
// (the Host check), and its questions through /graphql's limits.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { PROJECT_ROOT } from '../../core/paths.js'

/** Where the page's files are (shipped in the npm package: package.json "files"). */
export const PAGE_DIR = join(PROJECT_ROOT, 'assets', 'page')
export const PAGE_ASSET_PREFIX = '/page/'

const ASSETS: Readonly<Record<string, string>> = {
  'page.js': 'text/javascript; charset=utf-8',
  'page.css': 'text/css; charset=utf-8',
}

// Nothing but this server: its own script, style and /graphql (so the page works offline and an
// injected script could send nothing elsewhere), and no framing (clickjacking).
const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

export async function askPage(app: FastifyInstance): Promise<void> {
  const html = readFileSync(join(PAGE_DIR, 'index.html'))
  const files = new Map(Object.entries(ASSETS).map(([name, type]) => [name, { body: readFileSync(join(PAGE_DIR, name)), type }]))

  app.get('/', async (_request, reply) => reply
    .type('text/html; charset=utf-8')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('x-content-type-options', 'nosniff')
    .send(html))
  app.get<{ Params: { name: string } }>(`${PAGE_ASSET_PREFIX}:name`, async (request, reply) => {
    const asset = files.get(request.params.name)
    if (!asset) return reply.code(404).type('text/plain; charset=utf-8').send(`no page asset ${request.params.name}`)
    // They change with the server's version: a browser asks again (no-cache) rather than keep an old script.
    return reply.type(asset.type).header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff').send(asset.body)
  })
}
