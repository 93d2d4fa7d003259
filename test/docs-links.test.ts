// Every relative link of the documents a reader follows (README.md, BENCHMARKS.md, docs/ and its
// history) leads somewhere: the file exists, and a #fragment names a heading of the linked Markdown
// file as GitHub makes its anchors. The documents link into one another (the summary into the dated
// history, the README into the guides), so a heading renamed or a file moved would otherwise leave
// a dead link that nothing notices.
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { test } from 'node:test'
import { PROJECT_ROOT } from '../core/paths.js'

/** The Markdown files checked: the two at the root and every one under docs/. */
function documents(): string[] {
  const found = ['README.md', 'BENCHMARKS.md'].map((f) => join(PROJECT_ROOT, f))
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name)
      if (e.isDirectory()) walk(path)
      else if (e.name.endsWith('.md')) found.push(path)
    }
  }
  walk(join(PROJECT_ROOT, 'docs'))
  return found
}

/** The text without fenced code blocks and inline code, where brackets are not links. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '')
}

/** GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces to -. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-')
}

/** The anchors of a Markdown file's headings, a repeated one numbered as GitHub numbers it. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const line of markdown.replace(/^```[\s\S]*?^```/gm, '').split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!m) continue
    const base = slug(m[1]!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

/** Each relative link target of a Markdown text: inline links and images, reference definitions. */
function links(markdown: string): string[] {
  const text = prose(markdown)
  const found: string[] = []
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) found.push(m[1]!)
  for (const m of text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)) found.push(m[1]!)
  return found.filter((href) => !/^[a-z][a-z0-9+.-]*:/i.test(href))
}

test('the slug is GitHub\'s', () => {
  assert.equal(slug('Retrieval on eval-300 — BM25, ours against Lucene 8'), 'retrieval-on-eval-300--bm25-ours-against-lucene-8')
  assert.equal(slug('An answer that holds a better one: `reader.dropContaining` (2026-11-25, later)'), 'an-answer-that-holds-a-better-one-readerdropcontaining-2026-11-25-later')
  assert.equal(slug('AMBIGQA_ERR_ANN_INDEX'), 'ambigqa_err_ann_index')
})

test('every relative link in README.md, BENCHMARKS.md and docs/ resolves, its #anchor too', () => {
  const files = documents()
  assert.ok(files.length >= 3, `found only ${files.length} documents`)
  const cache = new Map<string, Set<string>>()
  let checked = 0
  const broken: string[] = []
  for (const file of files) {
    const from = relative(PROJECT_ROOT, file)
    for (const href of links(readFileSync(file, 'utf8'))) {
      checked++
      const [pathPart, fragment] = href.split('#', 2) as [string, string | undefined]
      const target = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart))
      if (!existsSync(target)) {
        broken.push(`${from}: ${href} (no such file)`)
        continue
      }
      if (relative(PROJECT_ROOT, target).startsWith('..')) {
        broken.push(`${from}: ${href} (outside the repository)`)
        continue
      }
      if (fragment === undefined || fragment === '') continue
      if (!target.endsWith('.md') || statSync(target).isDirectory()) {
        broken.push(`${from}: ${href} (an anchor into a file that is not Markdown)`)
        continue
      }
      if (!cache.has(target)) cache.set(target, anchors(readFileSync(target, 'utf8')))
      if (!cache.get(target)!.has(decodeURIComponent(fragment).toLowerCase())) broken.push(`${from}: ${href} (no heading with that anchor)`)
    }
  }
  assert.ok(checked > 0, 'no relative links found: the reader of links is broken')
  assert.deepEqual(broken, [], `broken links:\n${broken.join('\n')}`)
})
