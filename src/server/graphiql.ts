// GraphiQL served from the installed packages (graphiql, react, react-dom), not from a CDN:
// mercurius's own page loads them from unpkg.com, so it is blank on a machine without the
// internet. Only the files listed here are served, read once at start.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { FastifyInstance } from 'fastify'

const require = createRequire(import.meta.url)

/** URL name → the package file it is and its content type. Versions pinned in package.json. */
const ASSETS: Readonly<Record<string, { pkg: string; file: string; type: string }>> = {
  'react.production.min.js': { pkg: 'react', file: 'umd/react.production.min.js', type: 'text/javascript; charset=utf-8' },
  'react-dom.production.min.js': { pkg: 'react-dom', file: 'umd/react-dom.production.min.js', type: 'text/javascript; charset=utf-8' },
  'graphiql.min.js': { pkg: 'graphiql', file: 'graphiql.min.js', type: 'text/javascript; charset=utf-8' },
  'graphiql.min.css': { pkg: 'graphiql', file: 'graphiql.min.css', type: 'text/css; charset=utf-8' },
}

// React's "exports" map hides its UMD folder from require.resolve; its package.json is exported.
const packageFile = (pkg: string, file: string) => join(dirname(require.resolve(`${pkg}/package.json`)), file)

export const GRAPHIQL_ASSET_PREFIX = '/graphiql/assets/'

const EXAMPLE_QUERY = `# Ctrl-Enter runs the query
{
  ask(question: "when did the harry potter movie come out") {
    ambiguous ambiguity
    answers { answer question rewritten confidence evidence { title } }
  }
}
`

// Plain script tags (the packages' UMD builds) and one small start script: no bundler, no module
// loader, nothing fetched from anywhere but this server.
function page(): string {
  const script = (name: string) => `<script src="${GRAPHIQL_ASSET_PREFIX}${name}"></script>`
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ambigqa · GraphiQL</title>
<link rel="stylesheet" href="${GRAPHIQL_ASSET_PREFIX}graphiql.min.css">
<style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
<div id="graphiql">Loading GraphiQL…</div>
${script('react.production.min.js')}
${script('react-dom.production.min.js')}
${script('graphiql.min.js')}
${script('start.js')}
</body>
</html>
`
}

function startScript(): string {
  return `'use strict';
(function () {
  var fetcher = GraphiQL.createFetcher({ url: new URL('/graphql', window.location.href).href });
  var root = ReactDOM.createRoot(document.getElementById('graphiql'));
  root.render(React.createElement(GraphiQL, { fetcher: fetcher, defaultQuery: ${JSON.stringify(EXAMPLE_QUERY)} }));
})();
`
}

export async function graphiqlPage(app: FastifyInstance): Promise<void> {
  const files = new Map<string, { body: Buffer; type: string }>()
  for (const [name, { pkg, file, type }] of Object.entries(ASSETS)) files.set(name, { body: readFileSync(packageFile(pkg, file)), type })
  files.set('start.js', { body: Buffer.from(startScript()), type: 'text/javascript; charset=utf-8' })
  const html = page()

  app.get('/graphiql', async (_request, reply) => reply.type('text/html; charset=utf-8').send(html))
  app.get<{ Params: { name: string } }>(`${GRAPHIQL_ASSET_PREFIX}:name`, async (request, reply) => {
    const asset = files.get(request.params.name)
    if (!asset) return reply.code(404).type('text/plain; charset=utf-8').send(`no GraphiQL asset ${request.params.name}`)
    // The files change only with package versions; a day's caching keeps reloads cheap.
    return reply.type(asset.type).header('cache-control', 'public, max-age=86400').send(asset.body)
  })
}
