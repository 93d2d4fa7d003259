// Question disambiguation by the pretrained decoder (Gemma 3 270M + a LoRA adapter, llama-lm.ts):
// all of a question's rewrites in one pass over one prompt (reader/lm-prompt.ts), the evidence,
// question and answer set first, then per answer a forced `Answer:` line and the rewrite it
// writes. Greedy, one proposal per answer, checked like the seq2seq model's (checkedRewrites)
// but for the word-from-nowhere check (LM_IGNORED_FAULTS).
import type { RetrievedPassage } from '../core/retriever.js'
import type { LlamaLm } from './generation/llama-lm.js'
import type { RewriteFault } from './rewrite-check.js'
import { generatedLine, pickEvidence, qdAnswerLine, qdPrefix } from './lm-prompt.js'
import { checkedRewrites, passagesFor, rewriteEach, type DisambiguationItem, type Disambiguator, type ItemRequest, type Rewrite } from './question-disambiguator.js'

/** Tokens a rewrite may take (AmbigNQ's longest rewrites are about 40). */
const MAX_REWRITE_TOKENS = 48

/**
 * The checks this model's rewrites skip. The word-from-nowhere check was made for a model that
 * invented non-words; this one writes English and adds what its annotators added, words the
 * evidence often lacks: 88.6% of the held-out gold rewrites fail that check against their prompt's
 * evidence, and with it the held-out EDIT-F1 returned is 3.2, without it 11.8 (BENCHMARKS.md,
 * "Disambiguation on a pretrained decoder"; chosen there, never on eval-300).
 */
export const LM_IGNORED_FAULTS: readonly RewriteFault[] = ['unsupported-word']

export class LmDisambiguator implements Disambiguator {
  constructor(readonly lm: LlamaLm) {
    lm.expectTask('qd', 'LmDisambiguator')
  }

  /** Each answer's own evidence first, then the passages read (the trainer's order). */
  static evidence(item: DisambiguationItem): RetrievedPassage[] {
    return pickEvidence(item.answers.map((_, j) => passagesFor(item, j))) as RetrievedPassage[]
  }

  /** `requests`: each item's own signal and listener (question-disambiguator.ts, ItemRequest); the
   * listener hears the rewrites checked so far after each line, as the whole set checks them (in
   * answer order, each against those before it), so what it last heard is the set's first ones. */
  async disambiguate(items: readonly DisambiguationItem[], signal?: AbortSignal, requests?: readonly (ItemRequest | undefined)[]): Promise<Rewrite[][]> {
    return rewriteEach(items, signal, requests, async (item, either, written) => {
      const check = (lines: readonly string[]) => checkedRewrites(item, lines.map((l) => [generatedLine(l)]), LM_IGNORED_FAULTS)
      const lines = await this.lm.lines(qdPrefix(item.question, item.answers, LmDisambiguator.evidence(item)), item.answers.map(qdAnswerLine), MAX_REWRITE_TOKENS, either,
        written && ((_line, so) => written(check(so))))
      return check(lines)
    })
  }
}
