/**
 * Bounds on what one GraphQL document may ask for: nesting depth, number of
 * aliases and number of selected fields (fragments expanded). What is inside
 * introspection (`__schema`, `__type`) is not counted, so an introspection-fed
 * IDE works, but the introspection fields themselves are: at most
 * `maxIntrospection` of them per operation (aliases included; 2,400 aliased
 * `__schema` in 49 kB once asked for 239 MB). The operator listener also
 * bounds the size of any answer (response-limit.ts).
 */
import {
  GraphQLError,
  Kind,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'postgraphile/graphql';

export interface QueryLimits {
  maxDepth: number;
  maxAliases: number;
  maxFields: number;
  /** `__schema` / `__type` selections per operation (the IDE's introspection query uses one). */
  maxIntrospection?: number;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = { maxDepth: 10, maxAliases: 20, maxFields: 500, maxIntrospection: 3 };

interface Measure {
  depth: number;
  aliases: number;
  fields: number;
  introspection: number;
}

const INTROSPECTION_ROOTS = new Set(['__schema', '__type']);

export function queryLimitsRule(limits: QueryLimits = DEFAULT_QUERY_LIMITS): ValidationRule {
  return (context: ValidationContext) => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions) {
      if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
    }
    // Each fragment is measured once (fragment "bombs" stay linear); a cycle
    // counts as nothing here, NoFragmentCyclesRule reports it.
    const measured = new Map<string, Measure>();
    const inProgress = new Set<string>();

    const measureFragment = (name: string): Measure => {
      const known = measured.get(name);
      if (known) return known;
      const fragment = fragments.get(name);
      if (!fragment || inProgress.has(name)) return { depth: 0, aliases: 0, fields: 0, introspection: 0 };
      inProgress.add(name);
      const m = measureSelections(fragment.selectionSet);
      inProgress.delete(name);
      measured.set(name, m);
      return m;
    };

    const measureSelections = (set: SelectionSetNode): Measure => {
      const total: Measure = { depth: 0, aliases: 0, fields: 0, introspection: 0 };
      for (const selection of set.selections) {
        let m: Measure;
        if (selection.kind === Kind.FIELD) {
          if (INTROSPECTION_ROOTS.has(selection.name.value)) {
            total.introspection++;
            continue;
          }
          const inner = selection.selectionSet
            ? measureSelections(selection.selectionSet)
            : { depth: 0, aliases: 0, fields: 0, introspection: 0 };
          m = {
            depth: inner.depth + 1,
            aliases: inner.aliases + (selection.alias ? 1 : 0),
            fields: inner.fields + 1,
            introspection: inner.introspection,
          };
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          m = measureSelections(selection.selectionSet);
        } else {
          m = measureFragment(selection.name.value);
        }
        total.depth = Math.max(total.depth, m.depth);
        total.aliases += m.aliases;
        total.fields += m.fields;
        total.introspection += m.introspection;
      }
      return total;
    };

    return {
      OperationDefinition(node) {
        const m = measureSelections(node.selectionSet);
        const report = (what: string, value: number, max: number) =>
          context.reportError(
            new GraphQLError(`Query ${what} ${value} exceeds the maximum of ${max}`, { nodes: [node] }),
          );
        if (m.depth > limits.maxDepth) report('depth', m.depth, limits.maxDepth);
        if (m.aliases > limits.maxAliases) report('alias count', m.aliases, limits.maxAliases);
        if (m.fields > limits.maxFields) report('field count', m.fields, limits.maxFields);
        const maxIntrospection = limits.maxIntrospection ?? DEFAULT_QUERY_LIMITS.maxIntrospection!;
        if (m.introspection > maxIntrospection)
          report('introspection field count (__schema, __type)', m.introspection, maxIntrospection);
      },
    };
  };
}
