// The benchmark corpus eval-300, defined once: every passage file of the shared corpus folder
// plus the SQuAD train and dev paragraphs; its questions are the AmbigNQ dev ids in
// splits/eval-300.txt. Benchmarks and `ambigqa bench corpus` both read this definition.
import type { SourceSpec } from '../../index/build-index.js'
import { requireSharedFile } from '../core/paths.js'

export const EVAL_300_STORE = 'data/eval-300'

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
