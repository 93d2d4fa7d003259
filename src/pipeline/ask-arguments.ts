// The checks every way of asking shares (the GraphQL server, `ambigqa ask`, `ambigqa search`), so
// a question or a count the server refuses is refused the same way on the command line.
import { ERR_ARGUMENT_INVALID, ERR_QUESTION_INVALID } from '../../core/errors.js'

/** The question without surrounding blanks; empty or longer than `maxLength` is refused. */
export function checkQuestion(question: string, maxLength: number): string {
  const trimmed = question.trim()
  if (trimmed.length === 0) throw ERR_QUESTION_INVALID('is empty')
  if (trimmed.length > maxLength) throw ERR_QUESTION_INVALID(`has ${trimmed.length} characters, more than ${maxLength}`)
  return trimmed
}

/** A count of passages (k, retrieve, read): an integer in [1, max]; `key` names the limit's setting. */
export function checkCount(name: string, value: number, max: number, key: string): number {
  if (!Number.isInteger(value) || value < 1 || value > max) throw ERR_ARGUMENT_INVALID(name, value, max, key)
  return value
}
