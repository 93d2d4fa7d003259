// What the pretrained decoder (Gemma 3 270M + a LoRA adapter) reads and writes, one place for
// training (src/training/lm-pack.ts tokenizes these texts for the trainer) and serving.
//
// Question disambiguation writes all of a question's rewrites in one pass: the context the answers
// share (evidence, prompt, the answer set) comes first, so its KV cache serves every answer, then
// for each answer a forced line naming it and the rewrite the model writes, ended by a newline:
//
//   Evidence: title: text            (at most LM_EVIDENCE_PASSAGES lines, none when there is none)
//   Question: who plays lord beric in game of thrones?
//   Answers: Richard Dormer | David Michael Scott
//   Answer: Richard Dormer           ┐ forced
//   Specific question:               ┘
//    who plays lord beric in game of thrones from season 3 on?\n   ← generated
//   Answer: David Michael Scott ...
//
// Each segment is tokenized on its own and the ids concatenated, as serving feeds them, so that
// training and serving see the same token boundaries. SpanSeqGen reads the same evidence and
// question and writes the answer set on one line, answers joined by ` | `.
import type { Passage } from '../core/passage.js'

/** Passages of evidence a prompt holds (about 130 tokens each at 100 words). */
export const LM_EVIDENCE_PASSAGES = 3
/** Words kept of each evidence line, its title included (DPR's 100-word unit and a title). */
export const LM_PASSAGE_WORDS = 110
/** Between answers on the `Answers:` line and in SpanSeqGen's output. */
export const LM_ANSWER_SEPARATOR = ' | '

type Evidence = Pick<Passage, 'title' | 'text'>

function oneLine(s: string): string {
  return s.split(/\s+/u).filter((w) => w !== '').join(' ')
}

// Training data keeps a passage as one `title: text` string (data.py's rendering), serving has the
// two apart: both are cut as that one string, so the two see the same words.
function evidenceLine(p: Evidence): string {
  const words = oneLine(p.title ? `${p.title}: ${p.text}` : p.text).split(' ').slice(0, LM_PASSAGE_WORDS).join(' ')
  return `Evidence: ${words}\n`
}

/**
 * The evidence a question's prompt holds: each answer's own passage first (the first of each
 * list, then the second of each, ...), each passage once, at most LM_EVIDENCE_PASSAGES.
 */
export function pickEvidence(perAnswer: readonly (readonly Evidence[])[]): Evidence[] {
  const out: Evidence[] = []
  const seen = new Set<string>()
  const depth = Math.max(0, ...perAnswer.map((l) => l.length))
  for (let d = 0; d < depth && out.length < LM_EVIDENCE_PASSAGES; d++) {
    for (const list of perAnswer) {
      const p = list[d]
      if (p === undefined || out.length >= LM_EVIDENCE_PASSAGES) continue
      const key = `${p.title}\u0000${oneLine(p.text)}`
      if (seen.has(key)) continue
      seen.add(key)
      out.push(p)
    }
  }
  return out
}

/** The shared prefix of question disambiguation (the tokenizer adds BOS before it). */
export function qdPrefix(question: string, answers: readonly string[], evidence: readonly Evidence[]): string {
  return `${evidence.map(evidenceLine).join('')}Question: ${oneLine(question)}\nAnswers: ${answers.map(oneLine).join(LM_ANSWER_SEPARATOR)}\n`
}

/** The forced segment before one answer's rewrite. */
export function qdAnswerLine(answer: string): string {
  return `Answer: ${oneLine(answer)}\nSpecific question:`
}

/** What the model is trained to write after qdAnswerLine: the rewrite and its newline. */
export function qdTarget(rewrite: string): string {
  return ` ${oneLine(rewrite)}\n`
}

/** SpanSeqGen's prompt. */
export function spanPrefix(question: string, evidence: readonly Evidence[]): string {
  return `${evidence.map(evidenceLine).join('')}Question: ${oneLine(question)}\nAnswers:`
}

/** SpanSeqGen's target: every answer on one line. */
export function spanTarget(answers: readonly string[]): string {
  return ` ${answers.map(oneLine).join(LM_ANSWER_SEPARATOR)}\n`
}

/** A generated line back to text: everything before the first newline, trimmed. */
export function generatedLine(text: string): string {
  return oneLine(text.split('\n')[0] ?? '')
}
