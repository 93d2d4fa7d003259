// The benchmark corpus eval-300, defined once: every passage file of the shared corpus folder
// plus the SQuAD train and dev paragraphs; its questions are the AmbigNQ dev ids in
// splits/eval-300.txt. Benchmarks and `ambigqa bench corpus` both read this definition.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import type { SourceSpec } from '../../index/sources/resume.js'
import { requireSharedFile } from '../../core/paths.js'

export const EVAL_300_STORE = 'data/eval-300'
/** eval-300's corpus plus the ASQA knowledge snippets of the ASQA dev questions outside eval-300:
 * the store of the tuning set asqa-tune and the second evaluation set asqa-second. */
export const EVAL_ASQA_STORE = 'data/eval-asqa'

export function eval300Sources(dataDir: string): SourceSpec[] {
  const file = (relative: string) => requireSharedFile(dataDir, relative, 'the eval-300 corpus')
  return [
    { path: file('corpus/dpr-asqa300.tsv'), format: 'dpr-tsv' },
    { path: file('corpus/dpr-haystack751.tsv'), format: 'dpr-tsv' },
    // Its ids were renumbered from 0 and would collide with DPR's.
    { path: file('corpus/flashrag-1000.jsonl'), format: 'jsonl', idPrefix: 'flashrag:' },
    { path: file('corpus/nq-open-test-gold.jsonl.gz'), format: 'jsonl' },
    { path: file('corpus/qa-feedback-ambignq-train500.json'), format: 'qa-feedback' },
    { path: file('corpus/wikitext'), format: 'wikitext-dir' },
    { path: file('squad/train-v1.1.json.gz'), format: 'squad' },
    { path: file('squad/dev-v1.1.json'), format: 'squad' },
  ]
}

export function eval300Questions(dataDir: string): { questions: string; ids: string } {
  return {
    questions: requireSharedFile(dataDir, 'ambignq/dev_light.json', 'the eval-300 questions'),
    ids: requireSharedFile(dataDir, 'splits/eval-300.txt', 'the eval-300 questions'),
  }
}

/**
 * The ASQA dev knowledge snippets of the questions outside eval-300, as JSON Lines {id, title, text}
 * at `out` (written once: the store's build fingerprints the file, so it is never rewritten). Their
 * questions are AmbigNQ dev questions: train/splits/asqa-tune.txt and asqa-second.txt split them.
 * eval-300's own snippets stay out, so eval-300 reads the same corpus in either store.
 */
export function asqaKnowledgeSource(dataDir: string, out: string): SourceSpec {
  if (!existsSync(out)) {
    const eval300 = new Set(readFileSync(requireSharedFile(dataDir, 'splits/eval-300.txt', 'the eval-300 questions'), 'utf8').split(/\s+/).filter(Boolean))
    const asqa = JSON.parse(readFileSync(requireSharedFile(dataDir, 'asqa/asqa_dev.json', 'the ASQA knowledge snippets'), 'utf8')) as { id: string; annotations: { knowledge: { content: string | null; wikipage: string | null }[] }[] }[]
    const lines: string[] = []
    for (const record of asqa) {
      if (eval300.has(record.id)) continue
      // A few snippets have no text (content null): nothing to index.
      record.annotations.flatMap((a) => a.knowledge).forEach((k, i) => {
        if (typeof k.content === 'string' && k.content.trim() !== '') lines.push(JSON.stringify({ id: `asqa:${record.id}:${i}`, title: k.wikipage ?? '', text: k.content }))
      })
    }
    writeFileSync(`${out}.tmp`, `${lines.join('\n')}\n`)
    renameSync(`${out}.tmp`, out)
  }
  return { path: out, format: 'jsonl' }
}
