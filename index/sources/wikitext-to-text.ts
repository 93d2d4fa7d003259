// MediaWiki wikitext to the plain text a passage keeps. wtf_wikipedia does the parsing (templates,
// refs, tables, images, categories, bold/italic, link text); section headings are DROPPED, as its
// text() does, so a passage reads as running prose. Two small passes around it cover what the
// parser leaves: interlanguage links it would keep as text, and the residue of broken markup
// (unbalanced braces, unclosed tables, double-escaped <ref>s) that real articles do contain.
import wtf from 'wtf_wikipedia'

export function wikitextToText(wikitext: string): string {
  const doc = wtf(stripInterlanguageLinks(wikitext))
  if (doc.isRedirect()) return ''
  return scrubResidue(decodeEntities(doc.text()))
}

// [[de:Foo]] is a link to another language's article, not text; wtf renders it as "Foo".
// A leading colon ([[:de:Foo]]) makes it an inline link whose text shows, so those stay.
const INTERLANGUAGE_LINK = /\[\[(?:[a-z]{2,3}(?:-[a-z0-9]+)*|simple):[^[\]\n]*\]\]/g

function stripInterlanguageLinks(wikitext: string): string {
  return wikitext.replace(INTERLANGUAGE_LINK, '')
}

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', ensp: ' ', emsp: ' ', thinsp: ' ',
  ndash: '–', mdash: '—', minus: '−', hellip: '…', laquo: '«', raquo: '»', lsquo: '‘', rsquo: '’',
  ldquo: '“', rdquo: '”', bull: '•', middot: '·', times: '×', deg: '°', shy: '', zwj: '', zwnj: '',
}

// wtf decodes only a few entities; the rest (&#8211;, &lt;) would otherwise reach the index as
// words. One pass only: "&amp;lt;" is the text "&lt;", not "<".
function decodeEntities(text: string): string {
  return text.replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});/g, (whole, name: string) => {
    if (name.startsWith('#')) {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10)
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
    }
    return NAMED_ENTITIES[name] ?? whole
  })
}

/** Removes innermost matches of `pattern` until none is left (nested templates and tables). */
function removeNested(text: string, pattern: RegExp): string {
  for (let round = 0; round < 50; round++) {
    const next = text.replace(pattern, ' ')
    if (next === text) break
    text = next
  }
  return text
}

const LINK_NAMESPACE = /^\s*:?\s*(?:file|image|datei|bild|category|kategorie|media)\s*:/i

/** [[target|label]] → label, [[target]] → target, innermost first; files and categories go. */
function unwrapLinks(text: string): string {
  for (let round = 0; round < 50; round++) {
    const next = text.replace(/\[\[([^[\]]*)\]\]/g, (_whole, inner: string) => {
      if (LINK_NAMESPACE.test(inner)) return ' '
      const bar = inner.lastIndexOf('|')
      return bar === -1 ? inner : inner.slice(bar + 1)
    })
    if (next === text) break
    text = next
  }
  return text
}

function scrubResidue(text: string): string {
  text = text.replace(/<!--[\s\S]*?(?:-->|$)/g, ' ')
  text = text.replace(/<ref\b[^<>]*\/>/gi, ' ')
  text = text.replace(/<ref\b[^<>]*>(?:(?!<ref\b)[\s\S])*?<\/ref\s*>/gi, ' ')
  text = removeNested(text, /\{\{[^{}]*\}\}/g)
  text = removeNested(text, /\{\|(?:(?!\{\|)[\s\S])*?\|\}/g)
  // A table left unclosed is broken markup whose rows would read as noise: drop its paragraph.
  text = text.replace(/\{\|[\s\S]*?(?:\n\s*\n|$)/g, '\n\n')
  text = unwrapLinks(text)
  text = text.replace(/\{\{|\}\}|\{\||\|\}|\[\[|\]\]/g, ' ')
  text = text.replace(/<\/?[a-zA-Z][^<>]*>/g, ' ')
  text = text.replace(/^ \* /gm, '')
  // Bold/italic quote runs wtf leaves when a run spans lines or holds odd punctuation.
  text = text.replace(/'{2,}/g, '')
  return text
    .replace(/[ \t\u00a0]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}
