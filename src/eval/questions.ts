// Questions with gold answers, from AmbigNQ light JSON or NQ-open (TSV or JSON Lines), in one
// shape: each annotation is a list of answer clusters, each cluster a list of aliases.
import { readFileSync } from 'node:fs'
import { ERR_QUESTIONS_FILE } from '../../core/errors.js'

export interface EvalQuestion {
  id: string
  question: string
  /** One entry per annotation; each annotation is a list of clusters of aliases. */
  annotations: string[][][]
}

export function loadQuestions(path: string, ids?: ReadonlySet<string>): EvalQuestion[] {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    throw ERR_QUESTIONS_FILE(path, '', 'cannot be read (does it exist?)')
  }
  const trimmed = text.trimStart()
  let questions: EvalQuestion[]
  if (trimmed.startsWith('[')) questions = fromAmbigNq(path, text)
  else if (trimmed.startsWith('{')) questions = fromNqJsonl(path, text)
  else if (text.includes('\t')) questions = fromNqTsv(path, text)
  else throw ERR_QUESTIONS_FILE(path, '', 'is neither JSON, JSON Lines nor TSV')
  if (ids) {
    const byId = new Map(questions.map((q) => [q.id, q]))
    const missing = [...ids].filter((id) => !byId.has(id))
    if (missing.length > 0) throw ERR_QUESTIONS_FILE(path, '', `${missing.length} ids of the id list are not in it (first: ${missing.slice(0, 3).join(', ')})`)
    questions = [...ids].map((id) => byId.get(id)!)
  }
  if (questions.length === 0) throw ERR_QUESTIONS_FILE(path, '', 'holds no questions')
  return questions
}

export function loadIdList(path: string): Set<string> {
  try {
    return new Set(readFileSync(path, 'utf8').split('\n').map((line) => line.trim()).filter(Boolean))
  } catch {
    throw ERR_QUESTIONS_FILE(path, '', 'the id list cannot be read (does it exist?)')
  }
}

interface AmbigNqAnnotation {
  type: string
  answer?: string[]
  qaPairs?: { question: string; answer: string[] }[]
}

function fromAmbigNq(path: string, text: string): EvalQuestion[] {
  let records: { id: string; question: string; annotations: AmbigNqAnnotation[] }[]
  try {
    records = JSON.parse(text)
  } catch (err) {
    throw ERR_QUESTIONS_FILE(path, '', `invalid JSON (${(err as Error).message})`)
  }
  return records.map((r, i) => {
    if (typeof r.question !== 'string' || !Array.isArray(r.annotations)) {
      throw ERR_QUESTIONS_FILE(path, `record ${i}`, "expected AmbigNQ records with 'id', 'question', 'annotations'")
    }
    return {
      id: String(r.id),
      question: r.question,
      annotations: r.annotations.map((a) => (a.type === 'multipleQAs' ? (a.qaPairs ?? []).map((p) => p.answer) : [a.answer ?? []])),
    }
  })
}

function fromNqJsonl(path: string, text: string): EvalQuestion[] {
  return text.split('\n').flatMap((line, i) => {
    if (line.trim() === '') return []
    let r: { question?: unknown; answer?: unknown; answers?: unknown; id?: unknown }
    try {
      r = JSON.parse(line)
    } catch (err) {
      throw ERR_QUESTIONS_FILE(path, `line ${i + 1}`, `invalid JSON (${(err as Error).message})`)
    }
    const answers = r.answer ?? r.answers
    if (typeof r.question !== 'string' || !Array.isArray(answers)) {
      throw ERR_QUESTIONS_FILE(path, `line ${i + 1}`, "expected {question, answer: [...]}")
    }
    return [{ id: r.id !== undefined ? String(r.id) : `line-${i + 1}`, question: r.question, annotations: [[answers.map(String)]] }]
  })
}

function fromNqTsv(path: string, text: string): EvalQuestion[] {
  return text.split('\n').flatMap((line, i) => {
    if (line.trim() === '') return []
    const tab = line.lastIndexOf('\t')
    if (tab === -1) throw ERR_QUESTIONS_FILE(path, `line ${i + 1}`, 'expected question<TAB>answer list')
    let answersField = line.slice(tab + 1).trim()
    // Some rows keep CSV's doubled quotes (['""Uma Thurman""']), some are also quoted whole.
    if (answersField.startsWith('"') && answersField.endsWith('"')) answersField = answersField.slice(1, -1)
    answersField = answersField.replace(/""/g, '"')
    let answers: string[]
    try {
      answers = parsePythonStringList(answersField)
    } catch (err) {
      throw ERR_QUESTIONS_FILE(path, `line ${i + 1}`, `cannot read the answer list: ${(err as Error).message}`)
    }
    return [{ id: `line-${i + 1}`, question: line.slice(0, tab), annotations: [[answers]] }]
  })
}

/** Parses a Python literal list of strings: ['a', "b's", 'c\'d']. */
export function parsePythonStringList(literal: string): string[] {
  const s = literal.trim()
  if (!s.startsWith('[') || !s.endsWith(']')) throw new Error(`expected a list literal, got '${s.slice(0, 40)}'`)
  const out: string[] = []
  let i = 1
  const skipSpace = () => { while (i < s.length && /\s/.test(s[i]!)) i++ }
  skipSpace()
  while (s[i] !== ']') {
    const quote = s[i]
    if (quote !== "'" && quote !== '"') throw new Error(`expected a quoted string at column ${i + 1}`)
    let value = ''
    i++
    while (s[i] !== quote) {
      if (i >= s.length) throw new Error('unterminated string')
      if (s[i] === '\\') {
        const next = s[i + 1]
        value += next === 'n' ? '\n' : next === 't' ? '\t' : (next ?? '')
        i += 2
      } else value += s[i++]
    }
    i++
    out.push(value)
    skipSpace()
    if (s[i] === ',') i++
    skipSpace()
  }
  return out
}
