// Decoding settings, named and defaulted as transformers' GenerationConfig names them, so a
// model folder's generation_config.json means the same here as in Python.
export interface GenerationOptions {
  /** 1 is greedy search. */
  numBeams: number
  /** Length of the whole decoder sequence, start token and forced prefix included (transformers' max_length). */
  maxLength: number
  /** When set, the limit is the prefix length plus this (transformers' max_new_tokens). */
  maxNewTokens?: number
  /** EOS is forbidden while the sequence (start token included) is shorter than this. */
  minLength: number
  /** Finished beams score sum(log p) / generated_length ** lengthPenalty. */
  lengthPenalty: number
  noRepeatNgramSize: number
  /** true: stop once numBeams hypotheses are finished; false: transformers' heuristic; 'never': canonical beam search. */
  earlyStopping: boolean | 'never'
  numReturnSequences: number
  forcedBosTokenId?: number
  forcedEosTokenId?: number
}

export const builtinGenerationDefaults: GenerationOptions = {
  numBeams: 1, maxLength: 20, minLength: 0, lengthPenalty: 1, noRepeatNgramSize: 0, earlyStopping: false, numReturnSequences: 1,
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined
}

/** generation_config.json first, then config.json (older exports keep the settings there). Of the
 * model only its EOS ids are read, so this module need not import seq2seq-model (which imports it). */
export function generationDefaultsFrom(generation: Record<string, unknown>, config: Record<string, unknown>, model: { eosTokenIds: readonly number[] }): GenerationOptions {
  const pick = (key: string): unknown => generation[key] ?? config[key]
  const early = pick('early_stopping')
  const options: GenerationOptions = {
    numBeams: num(pick('num_beams')) ?? builtinGenerationDefaults.numBeams,
    maxLength: num(pick('max_length')) ?? builtinGenerationDefaults.maxLength,
    minLength: num(pick('min_length')) ?? builtinGenerationDefaults.minLength,
    lengthPenalty: num(pick('length_penalty')) ?? builtinGenerationDefaults.lengthPenalty,
    noRepeatNgramSize: num(pick('no_repeat_ngram_size')) ?? builtinGenerationDefaults.noRepeatNgramSize,
    earlyStopping: early === true || early === 'never' ? early : false,
    numReturnSequences: num(pick('num_return_sequences')) ?? 1,
  }
  const maxNew = num(pick('max_new_tokens'))
  if (maxNew !== undefined) options.maxNewTokens = maxNew
  const forcedBos = num(pick('forced_bos_token_id'))
  if (forcedBos !== undefined) options.forcedBosTokenId = forcedBos
  const forcedEos = num(pick('forced_eos_token_id'))
  if (forcedEos !== undefined && model.eosTokenIds.includes(forcedEos)) options.forcedEosTokenId = forcedEos
  return options
}
