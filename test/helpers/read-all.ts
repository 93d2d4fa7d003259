import type { Passage } from '../../core/passage.js'
import type { PassageReader, ResumePoint } from '../../index/sources/passage.js'

export async function readAll(reader: PassageReader, from: ResumePoint = { records: 0 }): Promise<{ passages: Passage[]; bad: Error[]; last: ResumePoint }> {
  const passages: Passage[] = []
  const bad: Error[] = []
  let last = from
  for await (const item of reader.read(from)) {
    if (item.kind === 'passage') passages.push(item.passage)
    else bad.push(item.error)
    last = item.next
  }
  return { passages, bad, last }
}
