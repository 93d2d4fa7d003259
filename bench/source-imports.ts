// The project's import graph as its sources write it: every relative import of every TypeScript
// source, read by TypeScript's own pre-processor (type-only and dynamic imports too). Read by
// test/architecture.test.ts, which holds the floors against it, and bench/import-graph.ts, which
// draws it folder by folder.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'
import { PROJECT_ROOT as ROOT } from '../core/paths.js'

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

/** Each source file under `dirs` (relative to the root, `/`-separated) and the source files it imports. */
export function importGraph(dirs: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of dirs.flatMap(sources)) {
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
