// A static cost limit on GraphQL operations: depth alone lets one request hold a hundred
// aliased `ask`s. Each field costs 1, except the ones that run the models or scan the index;
// askMany costs per question: a literal list by its length here; a list given as a variable
// (not visible to a cached validation rule) as one question here and by its real length when
// the resolver runs (askManyCost).
// Fragments are expanded, so a fragment repeated under aliases is counted every time.
import { GraphQLError, Kind, type FragmentDefinitionNode, type SelectionSetNode, type ValidationRule } from 'graphql'
import { ASK_COST_PER_QUESTION } from '../../core/config.js'
import { ERR_QUERY_TOO_COSTLY } from '../../core/errors.js'

export const FIELD_COSTS: Readonly<Record<string, number>> = { ask: ASK_COST_PER_QUESTION, askMany: ASK_COST_PER_QUESTION, search: 5, startIndexing: 50, startEvaluation: 50 }

export function askManyCost(questions: number): number {
  return FIELD_COSTS.askMany! * questions
}

export function queryCostRule(maxCost: number): ValidationRule {
  return (context) => {
    const fragments = new Map<string, FragmentDefinitionNode>()
    for (const d of context.getDocument().definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d)

    const costOf = (set: SelectionSetNode | undefined, expanding: ReadonlySet<string>): number => {
      let cost = 0
      for (const s of set?.selections ?? []) {
        if (s.kind === Kind.FIELD) {
          let own = FIELD_COSTS[s.name.value] ?? 1
          if (s.name.value === 'askMany') {
            const list = s.arguments?.find((a) => a.name.value === 'questions')?.value
            if (list?.kind === Kind.LIST) own *= list.values.length
          }
          cost += own + costOf(s.selectionSet, expanding)
        } else if (s.kind === Kind.INLINE_FRAGMENT) {
          cost += costOf(s.selectionSet, expanding)
        } else {
          const name = s.name.value
          // A cycle is reported by graphql's own NoFragmentCycles rule; just stop here.
          if (!expanding.has(name)) cost += costOf(fragments.get(name)?.selectionSet, new Set([...expanding, name]))
        }
        if (cost > maxCost) return cost
      }
      return cost
    }

    return {
      OperationDefinition(node) {
        const cost = costOf(node.selectionSet, new Set())
        if (cost > maxCost) {
          const error = ERR_QUERY_TOO_COSTLY(cost, maxCost)
          context.reportError(new GraphQLError(error.message, { nodes: [node], extensions: { code: error.code } }))
        }
      },
    }
  }
}
