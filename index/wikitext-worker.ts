// Worker entry (compiled to dist/index/wikitext-worker.js): converts pages in the order they
// arrive, so each reply answers the oldest job this worker holds.
import { parentPort } from 'node:worker_threads'
import { convertPage, type PageJob } from './wikitext-page.js'

if (parentPort === null) throw new Error('wikitext-worker.js must be started as a worker thread')
const port = parentPort
port.on('message', (job: PageJob) => {
  port.postMessage(convertPage(job))
})
