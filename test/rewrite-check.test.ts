import assert from 'node:assert/strict'
import test from 'node:test'
import { rewriteFaults, rewriteWords, supportedWords } from '../reader/rewrite-check.js'

const prompt = 'When did the Harry Potter movie come out?'
const supported = supportedWords([prompt, '4 November 2001', 'Harry Potter: The first film premiered in London on 4 November 2001.'])

test('rewrite words ignore case, accents and punctuation', () => {
  assert.deepEqual(rewriteWords('Pokémon: "Gotta", catch \'em!'), ['pokemon', 'gotta', 'catch', 'em'])
})

test('a rewrite that adds words from the evidence, an inflection or a function word has no fault', () => {
  assert.deepEqual(rewriteFaults(prompt, 'When did the Harry Potter movie premiere in London?', supported), [])
  assert.deepEqual(rewriteFaults(prompt, 'Which Harry Potter movie premiered in London, and when did it come out?', supported), [])
})

test('each fault the server refuses is named', () => {
  assert.deepEqual(rewriteFaults(prompt, 'when did the harry potter movie come out', supported), ['identical'])
  assert.deepEqual(rewriteFaults(prompt, 'when did the harry potter in london the harry potter in london come out', supported), ['repetition'])
  assert.deepEqual(rewriteFaults(prompt, 'When did the Harry Potter movie movie come out?', supported), ['repetition'])
  assert.deepEqual(rewriteFaults(prompt, 'When did the Harry Potter movie desdodo come out?', supported), ['unsupported-word'])
  const first = 'When did the Harry Potter movie premiere in London?'
  assert.deepEqual(rewriteFaults(prompt, 'when did the harry potter movie premiere in london', supported, [first]), ['duplicate'])
  assert.deepEqual(rewriteFaults(prompt, 'when did the first film premiere in london', supported), ['not-minimal'])
  assert.deepEqual(rewriteFaults(prompt, 'when did the harry potter movie come out in london on 4 november 2001 the first film premiered', supported), ['not-minimal'])
  // A number of the prompt gone asks another question, though most words stay.
  const series = 'Who played in the world series in 1989?'
  const seriesWords = supportedWords([series, 'Oakland Athletics', 'The 1989 World Series was played by the Oakland Athletics.'])
  assert.deepEqual(rewriteFaults(series, 'who played in the world series?', seriesWords), ['not-minimal'])
  assert.deepEqual(rewriteFaults(series, 'who won the 1989 world series?', seriesWords), ['unsupported-word'])
  assert.deepEqual(rewriteFaults(series, 'who played in the 1989 world series for oakland?', seriesWords), [])
})
