// Penn Treebank tokenization as done by Stanford PTBTokenizer 3.4.1 with `-preserveLines -lowerCase`
// (default options: ptb3Escaping on, americanize off, splitAssimilations on), the tokenizer that
// coco-caption and the official AmbigQA evaluation run on question text.
//
// This is an independent re-implementation of the tokenizer's observable behaviour (no code or
// tables of the GPL-licensed original), checked black-box against the 3.4.1 jar: identical output on
// 141,512 distinct questions (AmbigNQ, NQ-open, SQuAD, ASQA), 6,748 Wikipedia paragraphs and 140,000
// randomly generated lines of tricky fragments. It is a longest-match scanner: at each
// position every rule is tried, the longest match wins (a rule's trailing context counts towards
// its length, as in JFlex), ties go to the earlier rule. Letter cases matter the way they do in the
// original: literal words are case-insensitive, character classes are not.
//
// Only the Basic Multilingual Plane is tokenizable (as in the original, which works on UTF-16 code
// units): astral characters such as emoji are dropped like any other "untokenizable" character.

/** Options of {@link ptbTokenizeLines}. */
export interface PtbOptions {
  /** Lower-case every token (`-lowerCase`). Default true. */
  lowerCase?: boolean
}

type Action = (text: string, ctx: ScanContext) => ActionResult

/** What a rule does with its match: the token to emit (null: none), how much to give back. */
interface ActionResult {
  token: string | null
  /** Characters pushed back to the input (like JFlex `yypushback`). */
  pushback?: number
}

interface ScanContext {
  /** Characters the rule matched including its trailing context. */
  total: number
}

interface Rule {
  name: string
  /** A character the main part of any match must contain (a fast pre-check on the run of
   *  non-space characters at the position; only for rules whose main part has no space). */
  needs?: number
  /** For rules whose alternatives nest (URLs, hyphenated words): the characters a match can hold,
   *  to search for the longest match rather than the first one the regex engine finds. */
  extent?: RegExp
  full?: RegExp[]
  /** One regular expression per top-level alternative: a backtracking engine takes the first
   *  alternative that matches, the original scanner the longest, so each is tried on its own. */
  res: RegExp[]
  act: Action
}

// ---------------------------------------------------------------------------------------------
// Character classes and building blocks (regular-expression source, used with the `u` flag).

/** Case-insensitive literal (the original scanner is caseless for literals, not for classes). */
function ci(word: string): string {
  let out = ''
  for (const ch of word) {
    const lo = ch.toLowerCase()
    const up = ch.toUpperCase()
    if (lo !== up) out += `[${lo}${up}]`
    else out += /[\^$\\.*+?()[\]{}|/]/.test(ch) ? `\\${ch}` : ch
  }
  return out
}
function alt(...parts: string[]): string {
  return `(?:${parts.join('|')})`
}
function ciAlt(words: string): string {
  // Longest first, so that the backtracking engine prefers the longest literal.
  return alt(...words.split('|').sort((a, b) => b.length - a.length).map(ci))
}

/** A letter: Unicode letters, the combining marks of some scripts, soft hyphen, `&eacute;`-style entities. */
const LETTER_CHAR = `[\\p{L}\\u00AD\\u0300-\\u036F\\u0237-\\u024F\\u02C2-\\u02C5\\u02D2-\\u02DF\\u02E5-\\u02FF\\u0370-\\u037D\\u0384\\u0385\\u03CF\\u03F6\\u03FC-\\u03FF\\u0483-\\u0487\\u04CF\\u04F6-\\u04FF\\u0510-\\u0525\\u055A-\\u055F\\u0591-\\u05BD\\u05BF\\u05C1\\u05C2\\u05C4\\u05C5\\u05C7\\u0615-\\u061A\\u063B-\\u063F\\u064B-\\u065E\\u0670\\u06D6-\\u06EF\\u06FA-\\u06FF\\u070F\\u0711\\u0730-\\u074F\\u0750-\\u077F\\u07A6-\\u07B1\\u07CA-\\u07F5\\u07FA\\u0900-\\u0903\\u093C\\u093E-\\u094E\\u0951-\\u0955\\u0962\\u0963\\u0981-\\u0983\\u09BC-\\u09C4\\u09C7\\u09C8\\u09CB-\\u09CD\\u09D7\\u09E2\\u09E3\\u0A01-\\u0A03\\u0A3C\\u0A3E-\\u0A4F\\u0A81-\\u0A83\\u0ABC-\\u0ACF\\u0B82\\u0BBE-\\u0BC2\\u0BC6-\\u0BC8\\u0BCA-\\u0BCD\\u0C01-\\u0C03\\u0C3E-\\u0C56\\u0D3E-\\u0D44\\u0D46-\\u0D48\\u0E30-\\u0E3A\\u0E47-\\u0E4E\\u0EB1-\\u0EBC\\u0EC8-\\u0ECD]`
const SPLET = `&[aeiouAEIOU]${ciAlt('acute|grave|uml')};`
const LETTER = alt(LETTER_CHAR, SPLET)
/** [:letter:] proper (no entities, no extra marks). */
const PLETTER = '\\p{L}'
const DIGIT = '[\\p{Nd}\\u07C0-\\u07C9]'
const ALNUM = alt(PLETTER, DIGIT)

const SPACE_CLASS = '[ \\t\\u00A0\\u2000-\\u200A\\u3000]'
const NEWLINE = '(?:\\r\\n|[\\r\\n\\u2028\\u2029\\u000B\\u000C\\u0085])'
const SPACENL = alt(SPACE_CLASS, NEWLINE)
const SPACES = `${SPACE_CLASS}+`

const APOS = alt("['\\u0092\\u2019]", ci('&apos;'))
const APOSETC = alt(APOS, '[`\\u0091\\u2018\\u201B]')
const HYPHEN = '[-_\\u058A\\u2010\\u2011]'

/** A simple SGML/XML tag: `<b>`, `</b>`, `<a href="x">`, `<!-- c -->`, `<?xml …?>` (attribute values quoted). */
const SGML_NAME = '[A-Za-z][A-Za-z0-9_:.\\-]*'
const SGML = `<(?:[!?][A-Za-z\\-][^>\\r\\n]*|${SGML_NAME}(?:[ ]+(?:${SGML_NAME}[ ]*=[ ]*(?:'[^'\\r\\n]*'|"[^"\\r\\n]*")|${SGML_NAME}))*[ ]*\\/?|\\/${SGML_NAME})[ ]*>`
const SPMDASH = alt(`&${ciAlt('MD|mdash|ndash')};`, '[\\u0096\\u0097\\u2013\\u2014\\u2015]')
const SPAMP = ci('&amp;')
const SPPUNC = `&(?:${ciAlt('HT|TL|UR|LR|QC|QL|QR|odq|cdq')}|#[0-9]+);`

const WORD = `${LETTER}(?:${LETTER}|${DIGIT})*(?:[.!?]${LETTER}(?:${LETTER}|${DIGIT})*)*`
const REDAUX = `${APOS}(?:[msdMSD]|${ciAlt('re|ve|ll')})`
const SWORD = '[A-Za-z\\u00AD]*[A-MO-Za-mo-z]\\u00AD*'
const SREDAUX = `[nN]${APOSETC}[tT]`

const DATE = `${DIGIT}{1,2}[\\-\\/]${DIGIT}{1,2}[\\-\\/]${DIGIT}{2,4}`
const NUM = alt(
  `${DIGIT}+(?:[.:,\\u00AD\\u066B\\u066C]${DIGIT}+)*`,
  `${DIGIT}*(?:[.:,\\u00AD\\u066B\\u066C]${DIGIT}+)+`,
)
const NUMBER = `[\\-+]?${NUM}`
const SUBSUPNUM = '[\\u207A\\u207B\\u208A\\u208B]?(?:[\\u2070\\u00B9\\u00B2\\u00B3\\u2074-\\u2079]+|[\\u2080-\\u2089]+)'
const FRAC = `(?:${DIGIT}{1,4}[- \\u00A0])?${DIGIT}{1,4}(?:\\\\?\\/|\\u2044)${DIGIT}{1,4}`
const FRAC2 = '[\\u00BC\\u00BD\\u00BE\\u2153-\\u215E]'
const DOLSIGN = '(?:[A-Z]*\\$|#)'
const DOLSIGN2 = '[\\u00A2\\u00A3\\u00A4\\u00A5\\u0080\\u20A0\\u20AC\\u060B\\u0E3F\\u20A4\\uFFE0\\uFFE1\\uFFE5\\uFFE6]'

const THING_PART = `(?:[dDoOlL]${APOSETC}${ALNUM})?${ALNUM}+`
const THING = `${THING_PART}(?:${HYPHEN}${THING_PART})*`
const THINGA = `[A-Z]+(?:(?:[+&]|${SPAMP})[A-Z]+)+`
const THING3 = '[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\\\?\\/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}'

const ACRO = alt(
  `${ciAlt('Canada|Sino|Korean|EU|Japan|non')}-${ci('U.S')}`,
  `${ci('U.S.-')}${alt(ci('U.K'), ci('U.S.S.R'))}`,
  '[A-Za-z](?:\\.[A-Za-z])*',
)
const ACRO2 = alt(
  `${ciAlt('Canada|Sino|Korean|EU|Japan|non')}-${ci('U.S')}`,
  `${ci('U.S.-')}${alt(ci('U.K'), ci('U.S.S.R'))}`,
  '[A-Za-z](?:\\.[A-Za-z])+',
)
const HTHING = `[A-Za-z0-9][A-Za-z0-9.,\\u00AD]*(?:-(?:${ACRO2}\\.|[A-Za-z0-9\\u00AD]+))+`

const APOWORD = [
  `${APOS}[nN]${APOS}?`,
  `[lLdDjJ]${APOS}`,
  `${ci('Dunkin')}${APOS}`,
  `${ci('somethin')}${APOS}`,
  `${ci('ol')}${APOS}`,
  `${APOS}${ci('em')}`,
  `[A-HJ-XZn]${APOSETC}${PLETTER}{2}${PLETTER}*`,
  `${APOS}[2-9]0[sS]`,
  `${APOS}${ci('till')}`,
  `${APOS}${ci('til')}`,
  `${PLETTER}${PLETTER}*[aeiouyAEIOUY]${APOSETC}[aeiouA-Z]${PLETTER}*`,
  `${APOS}${ci('cause')}`,
  `${ci("cont'd")}\\.?`,
  ciAlt("nor'easter|c'mon|e'er|s'mores|ev'ry|li'l|nat'l"),
  `[oO]${APOSETC}[oO]`,
]

const FULLURL = `${ciAlt('https|http')}:\\/\\/[^ \\t\\n\\f\\r"<>|(){}]+[^ \\t\\n\\f\\r"<>|.!?(){},-]`
const LIKELYURL = `(?:(?:${ci('www')}\\.(?:[^ \\t\\n\\f\\r"<>|.!?(){},]+\\.)+[a-zA-Z]{2,4})|(?:(?:[^ \\t\\n\\f\\r"\`'<>|.!?(){},-_$]+\\.)+${ciAlt('com|net|org|edu')}))(?:\\/[^ \\t\\n\\f\\r"<>|()]+[^ \\t\\n\\f\\r"<>|.!?(){},-])?`
const EMAIL = `(?:${ci('&lt;')}|<)?[a-zA-Z0-9][^ \\t\\n\\f\\r"<>|()\\u00A0{}]*@(?:[^ \\t\\n\\f\\r"<>|(){}.\\u00A0]+\\.)*[^ \\t\\n\\f\\r"<>|(){}.\\u00A0]+(?:${ci('&gt;')}|>)?`
const TWITTER = ['[@\\uFF20][a-zA-Z_][a-zA-Z_0-9]*', `[#\\uFF03]${LETTER}+`]

const ABMONTH = 'Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec'
const ABDAYS = 'Mon|Tue|Tues|Wed|Thu|Thurs|Fri'
const ABSTATE_CI = 'Ala|Ariz|Calif|Colo|Conn|Ct|Dak|Fla|Ga|Ind|Kan|Kans|Ky|Md|Mich|Minn|Mo|Mont|Neb|Nev|Okla|Penn|Tenn|Va|Vt|Wis|Wisc|Wyo'
/** State abbreviations that are also common words: the capital is required. */
const ABSTATE_CS = ['Az', 'Ark', 'Del', 'Ill', 'La', 'Mass', 'Miss', 'Ore', 'Pa', 'Tex', 'Wash']
  .map((w) => `${w.slice(0, 1)}${ci(w.slice(1))}`)
  .join('|')
const ABCOMP = 'Inc|Co|Cos|Corp|Pty|Ptys|Pte|Ptes|Ppty|Pptys|Ppte|Pptes|Ltd|Plc|Rt|Bancorp|Bhd|Assn|Univ|Intl|Sys'
const ABNUM = 'tel|est|ext|sq'
const ABPTIT = 'Jr|Sr|Bros|Ed.D|Ph.D|Esq'
const ABBREV1 = `${alt(ciAlt(`${ABMONTH}|${ABDAYS}|${ABSTATE_CI}|${ABCOMP}|${ABNUM}|${ABPTIT}|etc|al|seq|Bldg`), ABSTATE_CS)}\\.`
const ABTITLE = `${ciAlt('Mr|Mrs|Ms|Dr|Drs|Prof|Profs|Sen|Sens|Rep|Reps|Atty|Attys|Lt|Col|Gen|Messrs|Gov|Govs|Adm|Rev|Maj|Sgt|Cpl|Pvt|Capt|St|Ste|Ave|Pres|Lieut|Rt|Hon|Brig|Cmdr|Comdr|Pfc|Spc|Supt|Supts|Det|Mt|Ft|Adj|Adv|Asst|Assoc|Ens|Insp|Mlle|Mme|Msgr|Sfc|Sr')}|M${ci('iss')}`
const ABCOMP2 = ciAlt('Invt|Elec|Natl|Mfg|Mtg|Dept|Blvd|Rd')
const ABBREV4 = [ABTITLE, ciAlt('vs|Alex|Wm|Jos|Cie|cf|TREAS|Ph'), ci('a.k.a'), ACRO, ABCOMP2]
const ABBREV2 = ABBREV4.map((a) => `(?:${a})\\.`)
const ACRONYM = `${ACRO}\\.`
const ABBREV3 = `${ciAlt('ca|fig|figs|prop|no|nos|art|bldg|pp|op')}\\.`

/** Words that start a sentence after an acronym: first letter case-sensitive, the rest not. */
const ACRONYM_FOLLOW = alt(
  ...[
    'About', 'According', 'Additionally', 'After', 'An', 'A', 'As', 'At', 'But', 'Earlier', 'He', 'Her', 'Here',
    'However', 'If', 'In', 'It', 'Last', 'Many', 'More', 'Mr.', 'Ms.', 'Now', 'Once', 'One', 'Other', 'Our',
    'She', 'Since', 'So', 'Some', 'Such', 'That', 'The', 'Their', 'Then', 'There', 'These', 'They', 'This', 'We', 'When',
    'While', 'What', 'Yet', 'You',
  ]
    .sort((a, b) => b.length - a.length)
    .map((w) => `${w.slice(0, 1)}${ci(w.slice(1))}`),
  SGML,
)

const PHONE = '(?:\\([0-9]{2,3}\\)[ \\u00A0]?|(?:\\+\\+?)?(?:[0-9]{2,4}[\\- \\u00A0])?[0-9]{2,4}[\\- \\u00A0])[0-9]{3,4}[\\- \\u00A0]?[0-9]{3,5}'
const ASIAN_EYE = "[\\-^x=~<>']"
const ASIANSMILEY = [
  `${ASIAN_EYE}_${ASIAN_EYE}`,
  `\\(${ASIAN_EYE}[_.]?${ASIAN_EYE}\\)`,
  "\\([\\^x=~<>']-[\\^x=~<>'`]\\)",
]
const SMILEY = "[<>]?[:;=][\\-o*']?[()DPdpO\\\\{@|[\\]]"
const FILENAME_EXT = ciAlt('bat|bmp|c|class|cgi|cpp|dll|doc|docx|exe|gif|gz|h|htm|html|jar|java|jpeg|jpg|mov|mp3|pdf|php|pl|png|ppt|ps|py|sql|tar|txt|wav|x|xml|zip')
const FILENAME = `(?:${LETTER}|${DIGIT})+(?:\\.(?:${LETTER}|${DIGIT})+)*\\.${FILENAME_EXT}`
const DBLQUOT = alt('"', ci('&quot;'))
const QUOTES = ["''", APOS, '[`\\u2018\\u2019\\u201A\\u201B\\u201C\\u201D\\u0091\\u0092\\u0093\\u0094\\u201E\\u201F\\u2039\\u203A\\u00AB\\u00BB]{1,2}']
const TBSPEC = alt(
  `-${ciAlt('RRB|LRB|RCB|LCB|RSB|LSB')}-`,
  ci('C.D.s'),
  ci('pro-'),
  ci('anti-'),
  `[sS](?:&|${ci('&amp;')})[pP]-500`,
  `[sS](?:&|${ci('&amp;')})[lL][sS]`,
  `${ci('Cap')}${APOS}[nN]`,
  `[cC]${APOS}${ci('est')}`,
)
const TBSPEC2 = `${APOS}[0-9][0-9]`
const LDOTS = alt('\\.{3,5}', '(?:\\.[ \\u00A0]){2,4}\\.', '[\\u0085\\u2026]')
const INSENTP = '[,;:]'
const MISCSYMBOL = '[¦\\u00A7¨\\u00A9\\u00AC\\u00AE¯\\u00B0-\\u00B3\\u00B4-\\u00BA\\u00D7\\u00F7\\u0387\\u05BE\\u05C0\\u05C3\\u05C6\\u05F3\\u05F4\\u0600-\\u0603\\u0606-\\u060A\\u060C\\u0614\\u061B\\u061E\\u066A\\u066D\\u0703-\\u070D\\u07F6\\u07F7\\u07F8\\u0964\\u0965\\u0E4F\\u2016\\u2017\\u2020-\\u2025\\u2030-\\u2038\\u203B\\u203C\\u2043\\u203E-\\u2042\\u2044\\u207A-\\u207F\\u208A-\\u208E\\u2100-\\u214F\\u2190-\\u21FF\\u2200-\\u2BFF\\u3012\\u30FB\\uFF01-\\uFF0F\\uFF1A-\\uFF20\\uFF3B-\\uFF40\\uFF5B-\\uFF65]'

// ---------------------------------------------------------------------------------------------
// Token normalizations (ptb3Escaping defaults).

/** Soft hyphens only mark where a word may break; a token that is nothing but one becomes a hyphen. */
function removeSoftHyphens(s: string): string {
  const out = s.replace(/\u00AD/g, '')
  return out.length === 0 && s.length > 0 ? '-' : out
}
function normalizeAmp(s: string): string {
  return s.replace(/&amp;/gi, '&')
}
function latexQuotes(s: string, probablyLeft: boolean): string {
  let out = s
  if (probablyLeft) {
    out = out.replace(/&apos;|'/g, '`').replace(/"|&quot;/g, '``')
  } else {
    out = out.replace(/&apos;|'/g, "'").replace(/"|&quot;/g, "''")
  }
  return out
    .replace(/[\u0091\u2018\u201B\u2039]/g, '`')
    .replace(/[\u0092\u2019\u203A]/g, "'")
    .replace(/[\u0093\u201C\u00AB]/g, '``')
    .replace(/[\u0094\u201D\u00BB]/g, "''")
}
function normalizeCurrency(s: string): string {
  return s.replace(/\u00A2/g, 'cents').replace(/\u00A3/g, '#').replace(/[\u0080\u00A4\u20A0\u20AC]/g, '$')
}
function normalizeFractions(s: string): string {
  return s
    .replace(/\u00BC/g, '1/4')
    .replace(/\u00BD/g, '1/2')
    .replace(/\u00BE/g, '3/4')
    .replace(/\u2153/g, '1/3')
    .replace(/\u2154/g, '2/3')
}
const nbsp = (s: string): string => s.replace(/ /g, '\u00A0')

const keep: Action = (t) => ({ token: t })
const parens: Action = (t) => ({ token: t.replace(/\(/g, '-LRB-').replace(/\)/g, '-RRB-') })
const skip: Action = () => ({ token: null })
const quotes = (probablyLeft: boolean): Action => (t) => ({ token: latexQuotes(t, probablyLeft) })
const soft: Action = (t) => ({ token: removeSoftHyphens(t) })

/** An abbreviation before a sentence end: the token keeps its period and the period is also returned. */
const abbrevSentenceEnd: Action = (t) => ({ token: t, pushback: 1 })
/** An acronym before a sentence-starting word. One letter ("I.") gives the letter and then the period. */
const acronymSentenceEnd: Action = (t) => (t.length === 2 ? { token: t.slice(0, 1), pushback: 1 } : { token: t, pushback: 1 })

function rule(name: string, source: string | string[], act: Action, trail?: string): Rule {
  const sources = typeof source === 'string' ? [source] : source
  const res = sources.map((src) =>
    trail === undefined ? new RegExp(`(${src})`, 'uy') : new RegExp(`(${src})(?:${trail})`, 'uy'),
  )
  return { name, res, act }
}

/** The same rule, skipped unless the run of non-space characters at the position has a `chars` character. */
function needing(chars: string, r: Rule): Rule {
  let index = NEEDS.findIndex((re) => re.source === `[${chars}]`)
  if (index < 0) index = NEEDS.push(new RegExp(`[${chars}]`)) - 1
  return { ...r, needs: index }
}
/** The distinct pre-check classes, tested once per position. */
const NEEDS: RegExp[] = []
const APOSTROPHES = "'`\\u0091\\u0092\\u2018\\u2019\\u201B&"

/** A rule (without trailing context) whose longest match is searched for within `extent`. */
function longestRule(name: string, source: string, act: Action, extent: string): Rule {
  return {
    ...rule(name, source, act),
    extent: new RegExp(`${extent}+`, 'uy'),
    full: [new RegExp(`^(?:${source})$`, 'u')],
  }
}

/** The longest match of `r` at `pos`, given a first match of length `first`. */
function extendMatch(r: Rule, text: string, pos: number, first: number): number {
  if (!r.extent || !r.full) return first
  r.extent.lastIndex = pos
  if (!r.extent.test(text)) return first
  const full = r.full[0]
  if (!full) return first
  for (let end = r.extent.lastIndex; end > pos + first; end--) {
    if (full.test(text.slice(pos, end))) return end - pos
  }
  return first
}

// The rules in priority order (earlier wins a tie in length).
const RULES: Rule[] = [
  rule('PROG_LANGS', alt('[cC]\\+\\+', '[cCfF]#'), keep),
  rule('ASSIMILATIONS3', alt(ci('cannot'), `'${ci('twas')}`), (t) => ({ token: t.slice(0, -3), pushback: 3 })),
  rule('ASSIMILATIONS2', alt(`'${ci('tis')}`, ciAlt('gonna|gotta|lemme|gimme|wanna')), (t) => ({ token: t.slice(0, -2), pushback: 2 })),
  rule('SGML', SGML, (t) => ({ token: nbsp(t) })),
  rule('SPMDASH', SPMDASH, () => ({ token: '--' })),
  rule('SPAMP', SPAMP, (t) => ({ token: normalizeAmp(t) })),
  rule('SPPUNC', SPPUNC, keep),
  needing(APOSTROPHES, rule('WORD/REDAUX', WORD, soft, REDAUX)),
  needing(APOSTROPHES, rule('SWORD/SREDAUX', SWORD, soft, SREDAUX)),
  rule('WORD', WORD, soft),
  needing(APOSTROPHES, rule('APOWORD', APOWORD, keep)),
  needing(APOSTROPHES, rule('APOWORD2', `[yY]${APOS}`, keep, PLETTER)),
  needing(':', rule('FULLURL', FULLURL, keep)),
  needing('.', longestRule('LIKELYURL', LIKELYURL, keep, '[^ \\t\\n\\f\\r"<>|]')),
  needing('@', rule('EMAIL', EMAIL, keep)),
  rule('TWITTER', TWITTER, keep),
  needing(APOSTROPHES, rule('REDAUX/nonletter', REDAUX, quotes(false), '[^A-Za-z]')),
  needing(APOSTROPHES, rule('SREDAUX', SREDAUX, quotes(false))),
  rule('DATE', DATE, keep),
  rule('NUMBER', NUMBER, soft),
  rule('SUBSUPNUM', SUBSUPNUM, keep),
  rule('FRAC', FRAC, (t) => ({ token: nbsp(t) })),
  rule('FRAC2', FRAC2, (t) => ({ token: normalizeFractions(t) })),
  rule('TBSPEC', TBSPEC, (t) => ({ token: normalizeAmp(t) })),
  needing('/', rule('THING3', THING3, keep)),
  rule('DOLSIGN', DOLSIGN, keep),
  rule('DOLSIGN2', DOLSIGN2, (t) => ({ token: normalizeCurrency(t) })),
  needing('.', rule('ACRONYM/sentence', ACRONYM, acronymSentenceEnd, `${SPACENL}+${ACRONYM_FOLLOW}${SPACENL}`)),
  needing('.', rule('ABBREV3/digit', ABBREV3, keep, `${SPACENL}?${DIGIT}`)),
  needing('.', rule('PTY/LTD', `(?:[pP][tT][eyEY]|[cC][oO])\\.`, keep, `${SPACE_CLASS}${ciAlt('ltd|lim')}`)),
  needing('.', rule('ABBREV1/sentend', ABBREV1, abbrevSentenceEnd, `${SPACENL}(?:${SPACENL}|\\p{Uppercase}|${SGML})`)),
  needing('.', rule('ABBREV1/any2', ABBREV1, keep, '[\\s\\S]{2}')),
  // Only at the end of the input: taken as a sentence end.
  needing('.', rule('ABBREV1', ABBREV1, abbrevSentenceEnd)),
  needing('.', rule('ABBREV2', ABBREV2, keep)),
  rule('ABBREV4/space', ABBREV4, keep, SPACE_CLASS),
  rule('ACRO/spacenl', ACRO, keep, SPACENL),
  rule('TBSPEC2/spacenl', TBSPEC2, keep, SPACENL),
  needing('.', rule('FILENAME', FILENAME, keep, `${SPACENL}|[.?!,]`)),
  needing('.', rule('WORD./insentp', `${WORD}\\.`, soft, INSENTP)),
  rule('PHONE', PHONE, (t) => ({ token: nbsp(t).replace(/\(/g, '-LRB-').replace(/\)/g, '-RRB-') })),
  rule('DBLQUOT/left', DBLQUOT, quotes(true), `[A-Za-z0-9$]`),
  rule('DBLQUOT', DBLQUOT, quotes(false)),
  rule('PLUS', '\\+', keep),
  rule('PERCENT', '[%&\\u2030\\u2031]', keep),
  rule('TILDE', '[~^]', keep),
  rule('BAR', '[|\\\\]', keep),
  rule('DEL', '\\u007F', skip),
  rule('FAKEDUCKFEET', '<<|>>', keep),
  rule('LESSTHAN', alt('<', ci('&lt;')), () => ({ token: '<' })),
  rule('GREATERTHAN', alt('>', ci('&gt;')), () => ({ token: '>' })),
  rule('SMILEY', SMILEY, parens, '[^A-Za-z0-9]'),
  rule('ASIANSMILEY', ASIANSMILEY, parens),
  rule('LCB', '\\{', () => ({ token: '-LCB-' })),
  rule('RCB', '\\}', () => ({ token: '-RCB-' })),
  rule('LSB', '\\[', () => ({ token: '-LSB-' })),
  rule('RSB', '\\]', () => ({ token: '-RSB-' })),
  rule('LRB', '\\(', () => ({ token: '-LRB-' })),
  rule('RRB', '\\)', () => ({ token: '-RRB-' })),
  rule('HYPHENS', '-+', (t) => ({ token: t.length >= 3 && t.length <= 4 ? '--' : t })),
  rule('LDOTS', LDOTS, () => ({ token: '...' })),
  rule('FNMARKS', alt('@+', '#+', '_+'), keep),
  rule('ASTS', alt('\\*+', '(?:\\\\\\*){1,3}'), keep),
  rule('INSENTP', INSENTP, keep),
  rule('QEXCL', '[?!]+', keep),
  rule('PERIOD', '[.¡¿\\u037E\\u0589\\u061F\\u06D4\\u0700-\\u0702\\u07FA]', keep),
  rule('EQUALS', '=', keep),
  rule('SLASH', '\\/', keep),
  needing('.', rule('HTHING./insentp', `${HTHING}\\.`, soft, INSENTP)),
  needing('-', longestRule('HTHING', HTHING, soft, '[A-Za-z0-9.,\\u00AD\\-]')),
  needing('.', rule('THING./insentp', `${THING}\\.`, keep, INSENTP)),
  rule('THING', THING, keep),
  needing('.', rule('THINGA./insentp', `${THINGA}\\.`, (t) => ({ token: normalizeAmp(t) }), INSENTP)),
  rule('THINGA', THINGA, (t) => ({ token: normalizeAmp(t) })),
  rule('QUOTE/left', "'", quotes(true), '[A-Za-z][^ \\t\\n\\r\\u00A0]'),
  rule('REDAUX', REDAUX, quotes(false)),
  rule('QUOTES', QUOTES, quotes(false)),
  rule('MISCSYMBOL', MISCSYMBOL, keep),
  rule('SPACES', alt('\\u0000', SPACES, '[\\u200B\\u200E\\u200F\\uFEFF]'), skip),
  rule('NBSP', ci('&nbsp;'), skip),
]

const NEWLINE_RE = new RegExp(NEWLINE, 'uy')
const NONSPACE_RUN = /[^ \t\n\r\f]*/y

/**
 * Tokenizes lines the way `PTBTokenizer -preserveLines` tokenizes a file of them: one token list per
 * line. The lines are scanned as one stream joined by newlines (so a look-ahead may see the start of
 * the next line, as in the original), but a line's own newline characters count as spaces and no
 * token spans two lines.
 */
export function ptbTokenizeLines(lines: readonly string[], options: PtbOptions = {}): string[][] {
  const lowerCase = options.lowerCase ?? true
  const cleaned = lines.map((l) => l.replace(/\r\n|[\r\n\u2028\u2029\u000B\u000C\u0085]/g, ' '))
  // Astral characters are two UTF-16 units that no rule accepts: each unit is dropped on its own.
  const text = cleaned.join('\n').replace(/[\u{10000}-\u{10FFFF}]/gu, '\uE000\uE000')
  const out: string[][] = [[]]
  let pos = 0
  while (pos < text.length) {
    NEWLINE_RE.lastIndex = pos
    if (NEWLINE_RE.test(text)) {
      pos = NEWLINE_RE.lastIndex
      out.push([])
      continue
    }
    let best: Rule | undefined
    let bestTotal = 0
    let bestText = ''
    NONSPACE_RUN.lastIndex = pos
    const run = NONSPACE_RUN.exec(text)?.[0] ?? ''
    const has = NEEDS.map((re) => re.test(run))
    for (const r of RULES) {
      if (r.needs !== undefined && !has[r.needs]) continue
      for (const re of r.res) {
        re.lastIndex = pos
        const m = re.exec(text)
        if (!m) continue
        let total = m[0].length
        let matched = m[1] ?? ''
        if (r.extent) {
          total = extendMatch(r, text, pos, total)
          matched = text.slice(pos, pos + total)
        }
        if (total > bestTotal) {
          best = r
          bestTotal = total
          bestText = matched
        }
      }
    }
    if (!best || bestText.length === 0) {
      // Untokenizable character (deleted, as with the default `untokenizable=firstDelete`).
      pos += 1
      continue
    }
    const result = best.act(bestText, { total: bestTotal })
    const consumed = bestText.length - (result.pushback ?? 0)
    if (result.token !== null) {
      const token = lowerCase ? result.token.toLowerCase() : result.token
      out[out.length - 1]?.push(token)
    }
    pos += consumed > 0 ? consumed : 1
  }
  while (out.length < lines.length) out.push([])
  return out.slice(0, Math.max(lines.length, 0))
}

/** Tokenizes one line (as a middle line of a file, i.e. followed by a newline). */
export function ptbTokenize(text: string, options: PtbOptions = {}): string[] {
  return ptbTokenizeLines([text, ''], options)[0] ?? []
}

/**
 * The tokens coco-caption's PTBTokenizer wrapper drops after tokenizing. The bracket escapes are
 * matched case-insensitively: with `-lowerCase` the jar prints `-lrb-`, which the wrapper's
 * upper-case list misses (leaving a word `lrb` after normalization); the AmbigQA evaluation
 * specification and its golden outputs drop them, and so do we.
 */
export const COCO_PUNCTUATIONS: ReadonlySet<string> = new Set([
  "''", "'", '``', '`', '-lrb-', '-rrb-', '-lcb-', '-rcb-', '.', '?', '!', ',', ':', '-', '--', '...', ';',
])

/** Tokenizes lines as coco-caption does for evaluation: PTB tokens, lower-cased, punctuation dropped,
 *  joined by single spaces. */
export function cocoTokenizeLines(lines: readonly string[]): string[] {
  return ptbTokenizeLines(lines).map((tokens) =>
    tokens.filter((t) => !COCO_PUNCTUATIONS.has(t.toLowerCase())).join(' '),
  )
}
