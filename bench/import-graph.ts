// The house at folder level: which folder imports which, counted from every relative import of
// the TypeScript sources (bench/source-imports.ts, as test/architecture.test.ts reads them). Tests and benchmarks are left out: they may import any floor. An arrow is "up"
// when it runs from a lower floor (core, then the libraries, then src/pipeline) to a higher one.
// With --top each top-level folder is one room (src/ whole), and an arrow that has one back is
// marked: two top-level folders that import each other.
// Usage: node dist/bench/import-graph.js [--top]
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { PROJECT_ROOT as ROOT } from '../core/paths.js'
import { importGraph } from './source-imports.js'

const DIRS = ['core', 'src', 'index', 'retriever', 'reader'].filter((d) => existsSync(join(ROOT, d)))

/** src/ splits into its folders (src/core was the ground before it moved out); a library is one room, reader/generation its own. */
const TOP = process.argv.includes('--top')

function folderOf(file: string): string {
  const parts = file.split(/[\\/]/)
  if (TOP) return parts[0]!
  if (parts[0] === 'src' || (parts[0] === 'reader' && parts[1] === 'generation')) return `${parts[0]}/${parts[1]}`
  return parts[0]!
}

/** Lower number = lower floor. */
function floorOf(folder: string): number {
  if (folder === 'core' || folder === 'src/core') return 0
  if (/^(index|retriever|reader)(\/|$)/.test(folder)) return 1
  if (folder === 'src/pipeline') return 2
  return 3
}

const edges = new Map<string, number>()
for (const [file, targets] of importGraph(DIRS)) {
  for (const target of targets) {
    const [from, to] = [folderOf(file), folderOf(target)]
    if (from === to) continue
    edges.set(`${from} -> ${to}`, (edges.get(`${from} -> ${to}`) ?? 0) + 1)
  }
}
let up = 0
for (const [edge, count] of [...edges].sort()) {
  const [from, to] = edge.split(' -> ') as [string, string]
  const isUp = TOP ? edges.has(`${to} -> ${from}`) : floorOf(from) < floorOf(to)
  if (isUp) up += count
  console.log(`${edge.padEnd(40)} ${String(count).padStart(4)}${isUp ? (TOP ? '   BOTH WAYS' : '   UP') : ''}`)
}
console.log(`${edges.size} folder arrows, ${up} imports ${TOP ? 'on arrows that run both ways' : 'running up'}`)
