// What a GraphQL query selects below the field being resolved, so that a resolver computes only
// what the client will read (ask skips question disambiguation when no answer's question or
// rewritten is selected). Fragments, inline or named, count as selected; @skip/@include are
// ignored, so a field that may be selected counts as selected.
import type { FieldNode, FragmentDefinitionNode, GraphQLResolveInfo, SelectionSetNode } from 'graphql'

type Fragments = Record<string, FragmentDefinitionNode>

/** The fields named `name` (aliases included) directly in a selection set, through its fragments. */
function fieldsNamed(set: SelectionSetNode | undefined, name: string, fragments: Fragments, seen = new Set<string>()): FieldNode[] {
  if (!set) return []
  return set.selections.flatMap((selection) => {
    if (selection.kind === 'Field') return selection.name.value === name ? [selection] : []
    if (selection.kind === 'InlineFragment') return fieldsNamed(selection.selectionSet, name, fragments, seen)
    const fragment = fragments[selection.name.value]
    // A fragment cycle is refused by validation before resolvers run; `seen` only guards recursion.
    if (!fragment || seen.has(fragment.name.value)) return []
    return fieldsNamed(fragment.selectionSet, name, fragments, new Set([...seen, fragment.name.value]))
  })
}

/** Whether any of `fields` is selected at `path` below the resolved field, e.g.
 * selects(info, ['answers'], ['question', 'rewritten']). */
export function selects(info: Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'>, path: readonly string[], fields: readonly string[]): boolean {
  let nodes: readonly FieldNode[] = info.fieldNodes
  for (const step of path) nodes = nodes.flatMap((node) => fieldsNamed(node.selectionSet, step, info.fragments))
  return nodes.some((node) => fields.some((field) => fieldsNamed(node.selectionSet, field, info.fragments).length > 0))
}

/** Whether an ask (or askMany) query reads its answers' rewritten questions. */
export const selectsRewrites = (info: Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'>): boolean => selects(info, ['answers'], ['question', 'rewritten'])

/**
 * The one decision whether a call runs question disambiguation, made once per request (app.ts)
 * and handed both to the limiter, which counts such a call apart (it costs several times one
 * without), and to the pipeline: when the query reads an answer's question or rewritten, or when
 * there is no query to read (a direct call), which then gets the complete answer.
 */
export const disambiguates = (info: Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'> | undefined): boolean => info === undefined || selectsRewrites(info)
