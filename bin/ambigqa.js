#!/usr/bin/env node
// The CLI is written in TypeScript and compiled to dist/ by `npm install` (the prepare script).
let cli
try {
  cli = await import('../dist/src/cli/main.js')
} catch (err) {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/src/cli')) {
    console.error('ambigqa: the compiled CLI is missing (dist/). Run `npm install` or `npm run build` first.')
    process.exit(1)
  }
  throw err
}
process.exitCode = await cli.main(process.argv)
