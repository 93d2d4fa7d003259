// The floors of docs/architecture.md, held against the code: every relative import of every
// TypeScript source, read by TypeScript's own pre-processor (type-only and dynamic imports too),
// so a library that reaches up into the app, an app folder that reaches up the chain, or two
// files that import each other, fail here before they tangle the house.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import ts from 'typescript'
import { importGraph } from '../bench/source-imports.js'
import { PROJECT_ROOT as ROOT } from '../core/paths.js'

const SOURCE_DIRS = ['core', 'src', 'index', 'retriever', 'reader', 'test', 'bench']

/** The floors, lowest first: a file may import its own floor's files and those of the floors it
 * names. Every arrow runs down; the app is a chain, not side by side (docs/architecture.md). */
const LIBRARIES = 'core|retriever|reader|index'
const FLOORS: { name: string; holds: RegExp; mayImport: RegExp }[] = [
  { name: 'core', holds: /^core\//, mayImport: /^core\// },
  { name: 'retriever', holds: /^retriever\//, mayImport: /^(core|retriever)\// },
  // The seq2seq engine knows nothing of the readers that drive it.
  { name: 'reader/generation', holds: /^reader\/generation\//, mayImport: /^(core|reader\/generation)\// },
  { name: 'reader', holds: /^reader\//, mayImport: /^(core|reader)\// },
  // Ingestion builds the retriever's stores, so it stands on the retriever; never the reverse.
  // Its rooms (docs/architecture.md): reading sources stands on core alone; BM25, dense vectors
  // and Elasticsearch each stand on the sources, never on each other; index/ itself joins them.
  { name: 'index/sources', holds: /^index\/sources\//, mayImport: /^(core|index\/sources)\// },
  { name: 'index/bm25', holds: /^index\/bm25\//, mayImport: /^(core|retriever|index\/(sources|bm25))\// },
  { name: 'index/dense', holds: /^index\/dense\//, mayImport: /^(core|retriever|index\/(sources|dense))\// },
  { name: 'index/elasticsearch', holds: /^index\/elasticsearch\//, mayImport: /^(core|retriever|index\/(sources|elasticsearch))\// },
  { name: 'index', holds: /^index\/[^/]+$/, mayImport: /^(core|retriever|index)\// },
  { name: 'src/pipeline', holds: /^src\/pipeline\//, mayImport: new RegExp(`^(${LIBRARIES}|src/pipeline)/`) },
  { name: 'src/eval', holds: /^src\/eval\//, mayImport: new RegExp(`^(${LIBRARIES}|src/(pipeline|eval))/`) },
  // Co-training evaluates each round with src/eval.
  { name: 'src/training', holds: /^src\/training\//, mayImport: new RegExp(`^(${LIBRARIES}|src/(pipeline|eval|training))/`) },
  // The server runs training jobs (startCoTraining).
  { name: 'src/server', holds: /^src\/server\//, mayImport: new RegExp(`^(${LIBRARIES}|src/(pipeline|eval|training|server))/`) },
  { name: 'src/cli', holds: /^src\/cli\//, mayImport: new RegExp(`^(${LIBRARIES}|src/(pipeline|eval|training|server|cli))/`) },
]

const graph = importGraph(SOURCE_DIRS)

test('the import graph is read: every floor has files, and the pipeline its stage contracts', () => {
  for (const floor of FLOORS) assert.ok([...graph.keys()].some((f) => floor.holds.test(f)), `no file under ${floor.name}`)
  assert.ok(graph.get('src/pipeline/pipeline.ts')?.includes('core/stages.ts'), 'the pipeline imports its stage contracts from core/')
})

test('every source stands on a floor, and every import runs to its own floor or one beneath it', () => {
  const sources = [...graph.keys()].filter((f) => !/^(test|bench)\//.test(f))
  assert.ok(sources.length > 0)
  const homeless = sources.filter((f) => !FLOORS.some((floor) => floor.holds.test(f)))
  assert.deepEqual(homeless, [], 'sources on no floor of docs/architecture.md')
  const wrong: string[] = []
  for (const file of sources) {
    const floor = FLOORS.find((f) => f.holds.test(file))!
    for (const target of graph.get(file)!) if (!floor.mayImport.test(target)) wrong.push(`${file} (${floor.name}) -> ${target}`)
  }
  assert.deepEqual(wrong, [], `imports that run upward (docs/architecture.md):\n${wrong.join('\n')}`)
})

test('nothing outside test/ imports a test file (benchmarks included)', () => {
  const wrong = [...graph].flatMap(([file, targets]) => (file.startsWith('test/') ? [] : targets.filter((t) => t.startsWith('test/')).map((t) => `${file} -> ${t}`)))
  assert.deepEqual(wrong, [])
})

test('Python is started one way: core/python-process.ts knows the venv, and whoever spawns takes its command', () => {
  const PYTHON_PROCESS = 'core/python-process.ts'
  const spawners = [...graph.keys()].filter((f) => !/^(test|bench)\//.test(f) && ts.preProcessFile(readFileSync(join(ROOT, f), 'utf8'), true, true).importedFiles.some((i) => i.fileName === 'node:child_process'))
  assert.ok(spawners.includes(PYTHON_PROCESS), `${PYTHON_PROCESS} no longer starts processes: update this test and docs/architecture.md`)
  assert.deepEqual(spawners.filter((f) => f !== PYTHON_PROCESS && !graph.get(f)!.includes(PYTHON_PROCESS)), [], 'files that start a process without python-process.ts')
  // The interpreter's path and the training package's PYTHONPATH are python-process.ts's alone.
  const own = [...graph.keys()].filter((f) => !/^(test|bench)\//.test(f) && f !== PYTHON_PROCESS && /bin\/python|PYTHONPATH/.test(readFileSync(join(ROOT, f), 'utf8')))
  assert.deepEqual(own, [], 'files that locate the training Python themselves')
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
