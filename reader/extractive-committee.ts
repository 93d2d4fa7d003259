// A committee of extractive readers answering as one (the co-trained ensemble of AmbigQA's
// Algorithm 1, train/ambigqa_train/cotrain.py): every member reads the passages, and a span's
// probability is the members' mean, so the candidates are the first member's `candidates` over
// the pooled spans (merged by normalised text); the decider chooses the set, as for one reader.
// A committee folder holds `committee.json` {"members": ["member-0", ...]}, each an extractive
// model folder (relative to the committee folder); `reader.extractive` may name either kind.
import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { ERR_MODEL_INVALID } from '../core/errors.js'
import { ExtractiveReader, type ExtractiveLoadOptions, type ExtractiveOptions, type ScoredSpan } from './extractive-reader.js'
import type { PredictedAnswer, ReadingQuestion } from './types.js'

export const COMMITTEE_FILE = 'committee.json'

export function isCommittee(dir: string): boolean {
  return existsSync(join(dir, COMMITTEE_FILE))
}

/** The member folders a committee folder names, resolved. */
export function committeeMembers(dir: string): string[] {
  const file = join(dir, COMMITTEE_FILE)
  let members: unknown
  try {
    members = (JSON.parse(readFileSync(file, 'utf8')) as { members?: unknown }).members
  } catch (error) {
    throw ERR_MODEL_INVALID.withCause(error, file, 'is not JSON', 'Write {"members": ["<model folder>", ...]} (`ambigqa train cotrain` writes it)')
  }
  if (!Array.isArray(members) || members.length === 0 || !members.every((m) => typeof m === 'string' && m.length > 0)) {
    throw ERR_MODEL_INVALID(file, 'has no "members" list of model folders', 'Write {"members": ["<model folder>", ...]} (`ambigqa train cotrain` writes it)')
  }
  return members.map((m: string) => resolve(dir, m))
}

export class ExtractiveCommittee {
  private constructor(readonly dir: string, readonly members: readonly ExtractiveReader[]) {}

  static async load(dir: string, load: ExtractiveLoadOptions = {}, options: Partial<ExtractiveOptions> = {}): Promise<ExtractiveCommittee> {
    const members: ExtractiveReader[] = []
    try {
      for (const member of committeeMembers(dir)) members.push(await ExtractiveReader.load(member, load, options))
    } catch (error) {
      await Promise.all(members.map((m) => m.close()))
      throw error
    }
    return new ExtractiveCommittee(dir, members)
  }

  get options(): ExtractiveOptions {
    return this.members[0]!.options
  }

  async read(items: readonly ReadingQuestion[], signal?: AbortSignal): Promise<PredictedAnswer[][]> {
    const spans = await this.spans(items, signal)
    return items.map((item, i) => this.members[0]!.candidates(item, spans[i]!))
  }

  /** Every member's spans of each question, each less ln C: summed by text, they give the mean
   * (a span outside a member's five best of a passage counts as 0 for that member). */
  async spans(items: readonly ReadingQuestion[], signal?: AbortSignal): Promise<ScoredSpan[][]> {
    const share = Math.log(this.members.length)
    const pooled: ScoredSpan[][] = items.map(() => [])
    // One member at a time: the two cores are better used by one model's batches than by C at once.
    for (const member of this.members) {
      const spans = await member.spans(items, signal)
      spans.forEach((list, i) => pooled[i]!.push(...list.map((s) => ({ ...s, score: s.score - share }))))
    }
    return pooled.map((list) => list.sort((a, b) => b.score - a.score))
  }

  async close(): Promise<void> {
    await Promise.all(this.members.map((m) => m.close()))
  }
}
