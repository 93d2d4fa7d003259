// The unit everything downstream works on. Ids are strings: DPR ids stay as DPR wrote them.
export interface Passage {
  id: string
  title: string
  text: string
}
