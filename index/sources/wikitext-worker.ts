// Worker entry (dist/index/wikitext-worker.js): converts pages in the order they arrive.
import { serveJobs } from '../../core/worker-pool.js'
import { convertPage } from './wikitext-page.js'

serveJobs(convertPage)
