// The pages of a MediaWiki XML export (Special:Export, dumps.wikimedia.org *-pages-articles*),
// streamed with saxes, a strict SAX parser: any well-formedness error stops the read with its
// line, since past a broken tag nothing downstream can be trusted.
import { SaxesParser } from 'saxes'
import { ERR_SOURCE_EMPTY, ERR_SOURCE_MALFORMED, ERR_SOURCE_TRUNCATED, isAmbigqaError } from '../../core/errors.js'
import type { DumpInput } from './dump-input.js'

export interface RawPage {
  /** The page's own <id>, not its revision's; '' when absent. */
  id: string
  title: string
  /** 0 is the main (article) namespace; exports without <ns> count as 0. */
  ns: number
  redirect: boolean
  /** Wikitext of the last <revision> in the page. */
  text: string
  /** Line of the <page> tag in the (decompressed) XML, for error messages. */
  line: number
}

type Field = 'title' | 'ns' | 'id' | 'text'

export async function* readMediaWikiPages(path: string, input: DumpInput): AsyncGenerator<RawPage> {
  const parser = new SaxesParser()
  const stack: string[] = []
  const done: RawPage[] = []
  let page: { line: number; title: string; ns: string; id: string; redirect: boolean; text: string[] } | undefined
  let field: Field | undefined
  let sawRoot = false

  parser.on('opentag', (tag) => {
    const parent = stack[stack.length - 1]
    stack.push(tag.name)
    sawRoot = true
    if (tag.name === 'page') {
      page = { line: parser.line, title: '', ns: '', id: '', redirect: false, text: [] }
      return
    }
    if (page === undefined) return
    if (parent === 'page') {
      if (tag.name === 'title' || tag.name === 'ns' || tag.name === 'id') field = tag.name
      else if (tag.name === 'redirect') page.redirect = true
    } else if (parent === 'revision' && tag.name === 'text') {
      page.text = []
      field = 'text'
    }
  })
  const onText = (text: string): void => {
    if (page === undefined || field === undefined) return
    if (field === 'text') page.text.push(text)
    else page[field] += text
  }
  parser.on('text', onText)
  parser.on('cdata', onText)
  parser.on('closetag', (tag) => {
    stack.pop()
    field = undefined
    if (tag.name === 'page' && page !== undefined) {
      const ns = page.ns.trim()
      done.push({
        id: page.id.trim(),
        title: page.title.trim(),
        ns: ns === '' ? 0 : Number(ns),
        redirect: page.redirect,
        text: page.text.join(''),
        line: page.line,
      })
      page = undefined
    }
  })

  const where = (): string => `line ${parser.line}${input.compressed ? ' of the decompressed XML' : ''}`
  const parse = (step: () => void): void => {
    try {
      step()
    } catch (err) {
      if (isAmbigqaError(err)) throw err
      throw ERR_SOURCE_MALFORMED.withCause(err, path, where(), `invalid XML (${xmlProblem(err)})`)
    }
  }

  for await (const chunk of input.text()) {
    parse(() => parser.write(chunk))
    yield* done.splice(0)
  }
  if (!sawRoot) throw ERR_SOURCE_EMPTY(path)
  if (stack.length > 0) {
    throw ERR_SOURCE_TRUNCATED(
      path,
      `byte ${input.bytesRead()}`,
      `the XML ends inside <${stack.join('><')}> at ${where()}`,
    )
  }
  parse(() => parser.close())
  yield* done.splice(0)
}

/** saxes prefixes its messages with "line:column: "; we say the line ourselves. */
function xmlProblem(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  return message.replace(/^(?:[^:]*:)?\d+:\d+: /, '')
}
