// A depth limit on GraphQL operations, in place of mercurius's, which counts every level of the
// introspection query GraphiQL sends (15 deep: `ofType` nested seven times) and so refused it,
// leaving GraphiQL without its schema. Here the depth is the number of fields on the deepest
// path; fragments (spread or inline) add no level; inside introspection (`__schema`, `__type`)
// the `type` and `ofType` fields add none either: each is one object, so they cannot multiply
// the response, while the list fields (`types`, `fields`, `interfaces`...) still count.
import { GraphQLError, Kind, type FragmentDefinitionNode, type SelectionSetNode, type ValidationRule } from 'graphql'
import { ERR_QUERY_TOO_DEEP } from '../../core/errors.js'

const INTROSPECTION_WRAPPERS = new Set(['type', 'ofType'])

export function queryDepthRule(maxDepth: number): ValidationRule {
  return (context) => {
    const fragments = new Map<string, FragmentDefinitionNode>()
    for (const d of context.getDocument().definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d)

    const depthOf = (set: SelectionSetNode | undefined, introspection: boolean, expanding: ReadonlySet<string>): number => {
      let deepest = 0
      for (const s of set?.selections ?? []) {
        let depth: number
        if (s.kind === Kind.FIELD) {
          const name = s.name.value
          const inside = introspection || name.startsWith('__')
          const own = inside && INTROSPECTION_WRAPPERS.has(name) ? 0 : 1
          depth = own + depthOf(s.selectionSet, inside, expanding)
        } else if (s.kind === Kind.INLINE_FRAGMENT) {
          depth = depthOf(s.selectionSet, introspection, expanding)
        } else {
          const name = s.name.value
          // A cycle is reported by graphql's own NoFragmentCycles rule; just stop here.
          depth = expanding.has(name) ? 0 : depthOf(fragments.get(name)?.selectionSet, introspection, new Set([...expanding, name]))
        }
        deepest = Math.max(deepest, depth)
        if (deepest > maxDepth) return deepest
      }
      return deepest
    }

    return {
      OperationDefinition(node) {
        const depth = depthOf(node.selectionSet, false, new Set())
        if (depth > maxDepth) {
          const error = ERR_QUERY_TOO_DEEP(depth, maxDepth)
          context.reportError(new GraphQLError(error.message, { nodes: [node], extensions: { code: error.code } }))
        }
      },
    }
  }
}
