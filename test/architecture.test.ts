// The floors of docs/architecture.md, held against the code: every relative import of every
// TypeScript source, read by TypeScript's own pre-processor (type-only and dynamic imports too),
// so a library that reaches up into the app, or two files that import each other, fail here
// before they tangle the house.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { test } from 'node:test'
import ts from 'typescript'
import { PROJECT_ROOT as ROOT } from '../core/paths.js'

const SOURCE_DIRS = ['core', 'src', 'index', 'retriever', 'reader', 'test', 'bench']

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

/** Each source file (relative to the root, `/`-separated) and the source files it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of SOURCE_DIRS.flatMap(sources)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true)
    const targets = importedFiles
      .map((f) => f.fileName)
      .filter((s) => s.startsWith('./') || s.startsWith('../'))
      // The code imports the compiled name (x.js); the source is x.ts.
      .map((s) => relative(ROOT, resolve(ROOT, dirname(file), s)).replace(/\.js$/, '.ts'))
    graph.set(file.split('\\').join('/'), targets.map((t) => t.split('\\').join('/')))
  }
  return graph
}

/** The floor a file stands on, and the floors it may import from (its own included). */
const FLOORS: { name: string; holds: RegExp; mayImport: RegExp }[] = [
  { name: 'core', holds: /^core\//, mayImport: /^core\// },
  { name: 'retriever', holds: /^retriever\//, mayImport: /^(core|retriever)\// },
  { name: 'reader', holds: /^reader\//, mayImport: /^(core|reader)\// },
  // Ingestion builds the retriever's stores, so it stands on the retriever; never the reverse.
  { name: 'index', holds: /^index\//, mayImport: /^(core|retriever|index)\// },
]

const graph = importGraph()

test('the import graph is read: every library floor has files and imports', () => {
  for (const floor of FLOORS) assert.ok([...graph.keys()].some((f) => floor.holds.test(f)), `no file under ${floor.name}`)
  assert.ok(graph.get('src/pipeline/pipeline.ts')?.includes('core/stages.ts'), 'the pipeline imports its stage contracts from core/')
})

test('no library imports the app: core, index, retriever and reader import only what lies beneath them', () => {
  const wrong: string[] = []
  for (const [file, targets] of graph) {
    const floor = FLOORS.find((f) => f.holds.test(file))
    if (!floor) continue
    for (const target of targets) if (!floor.mayImport.test(target)) wrong.push(`${file} -> ${target}`)
  }
  assert.deepEqual(wrong, [], `imports that run upward (docs/architecture.md):\n${wrong.join('\n')}`)
})

test('nothing but the app imports src/cli, src/server, src/pipeline, src/eval or src/training', () => {
  const app = /^src\/(cli|server|pipeline|eval|training)\//
  const wrong = [...graph].flatMap(([file, targets]) => (/^(core|index|retriever|reader)\//.test(file) ? targets.filter((t) => app.test(t)).map((t) => `${file} -> ${t}`) : []))
  assert.deepEqual(wrong, [])
})

test('no import cycle between files', () => {
  // Tarjan's strongly connected components: any component of more than one file (or a file
  // importing itself) is a cycle.
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const cycles: string[][] = []
  let next = 0
  const visit = (v: string): void => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || graph.get(v)?.includes(v)) cycles.push(component.sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  assert.deepEqual(cycles, [], `files that import each other:\n${cycles.map((c) => c.join(' <-> ')).join('\n')}`)
})
