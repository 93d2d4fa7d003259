// The ambiguity probability of everyday questions, as the server computes it (the shipped
// calibration's question-only model: the question's e5 embedding and its words), without
// retrieval or reading: P(more than one answer) does not depend on them.
// Usage: node dist/bench/ambiguity.js [--calibration DIR] ["question" ...] (default: the list below)
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { DEFAULT_ENCODERS_DIR, DEFAULT_READER_DIR } from '../core/paths.js'
import { loadCalibration, questionScorer, sigmoid } from '../reader/answer-set-decider.js'
import { DenseEncoder } from '../retriever/dense-encoder.js'

const EVERYDAY = [
  // The README's demo questions.
  'who played in the world series in 1989', 'when did the harry potter movie come out', 'who sang baker street', 'what is the capital of australia',
  // Questions a new user asks: one answer each, or several (the film, the series, the award year).
  'when was harvard founded', 'who wrote pride and prejudice', 'how many planets are in the solar system', 'what is the boiling point of water',
  'who is the president of the united states', 'who won the world cup', 'when did the iphone come out', 'who plays batman',
  'who sings i will always love you', 'when is the next solar eclipse', 'how many episodes are in game of thrones', 'who won the oscar for best actor',
  'what is the tallest building in the world', 'who invented the telephone', 'when did world war 2 end', 'who was the first man on the moon',
]

const { values, positionals } = parseArgs({ options: { calibration: { type: 'string', default: join(DEFAULT_READER_DIR, 'calibration') } }, allowPositionals: true })
const models = loadCalibration(values.calibration!)
const score = questionScorer(models.questionOnly)
const encoder = await DenseEncoder.load(models.questionOnly.encoder, DEFAULT_ENCODERS_DIR, 1)
const questions = positionals.length > 0 ? positionals : EVERYDAY
console.log('| question | ambiguity |\n|---|---|')
for (const q of questions) {
  const [v] = await encoder.encode([q], 'query')
  console.log(`| ${q} | ${sigmoid(score(Array.from(v!), q)).toFixed(2)} |`)
}
await encoder.close()
