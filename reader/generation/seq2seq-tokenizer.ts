// The reader's tokenizer: a model folder's tokenizer.json read offline by @huggingface/tokenizers.
// The JS library ignores the file's truncation settings, so truncation happens here, keeping the
// closing special token the post-processor adds (as Python's `truncation=True` does).
import { readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { Tokenizer } from '@huggingface/tokenizers'

interface TokenizerJson {
  added_tokens?: { id: number; special: boolean }[]
  model?: { type?: string; continuing_subword_prefix?: string; vocab?: Record<string, number> }
}

export class Seq2SeqTokenizer {
  private constructor(
    private readonly tokenizer: Tokenizer,
    private readonly specialIds: ReadonlySet<number>,
    private readonly continuationIds: ReadonlySet<number>,
  ) {}

  static load(dir: string): Seq2SeqTokenizer {
    const json = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as TokenizerJson
    const configPath = join(dir, 'tokenizer_config.json')
    const config = existsSync(configPath) ? JSON.parse(readFileSync(configPath, 'utf8')) as object : {}
    const specialIds = new Set((json.added_tokens ?? []).filter((t) => t.special).map((t) => t.id))
    // Only WordPiece marks pieces inside a word ('##'); BPE and SentencePiece mark word starts
    // instead, and a span may start after punctuation without one, so they get no such set.
    const prefix = json.model?.type === 'WordPiece' ? json.model.continuing_subword_prefix ?? '##' : undefined
    const continuationIds = new Set(prefix === undefined ? [] : Object.entries(json.model?.vocab ?? {}).filter(([token]) => token.startsWith(prefix)).map(([, id]) => id))
    return new Seq2SeqTokenizer(new Tokenizer(json, config), specialIds, continuationIds)
  }

  /** Token ids with the model's special tokens, cut to `maxLength` keeping the last one. */
  encode(text: string, maxLength = Infinity): number[] {
    const ids = this.tokenizer.encode(text).ids
    if (ids.length <= maxLength) return ids
    return [...ids.slice(0, maxLength - 1), ids[ids.length - 1]!]
  }

  /** Token ids of a piece of text without special tokens (an answer prefix, a span). */
  encodePlain(text: string): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: false }).ids
  }

  decode(ids: readonly number[], skipSpecialTokens = true): string {
    if (ids.length === 0) return ''
    // No clean-up of spaces before punctuation: the text is the tokens' own (as Python's
    // decode(..., clean_up_tokenization_spaces=False)), so it matches the passages it came from.
    return this.tokenizer.decode([...ids], { skip_special_tokens: skipSpecialTokens, clean_up_tokenization_spaces: false })
  }

  tokenId(token: string): number | undefined {
    return this.tokenizer.token_to_id(token)
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id)
  }

  /** A word piece that continues the word before it (WordPiece's '##' pieces). */
  continuesWord(id: number): boolean {
    return this.continuationIds.has(id)
  }

  get vocabSize(): number {
    return this.tokenizer.get_vocab(true).size
  }
}
