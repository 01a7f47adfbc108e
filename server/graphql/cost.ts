/**
 * The cost of a query, as GitHub counts it (decisions.md v1.2), from the
 * document alone, before anything runs:
 *
 * - node limit: each connection's `first` multiplied by the `first` of every
 *   connection above it, summed over the connections (at most 10,000);
 * - connections requested: each connection field counted as many times as it
 *   will be fetched (its parents' multiplicity), summed;
 * - points: max(1, ceil(connections requested / 100)).
 *
 * Both are linear in a fragment's multiplicity, so each fragment is measured
 * once and scaled (a fragment repeated many times costs no repeated work).
 */
import {
  getNamedType,
  isObjectType,
  Kind,
  valueFromAST,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'postgraphile/graphql';
import { MAX_FIRST } from './connection';

export const NODE_LIMIT = 10_000;

export interface Cost {
  nodes: number;
  connections: number;
  points: number;
  /** Some `first` came from a variable (else the cost is the document's own, the same every time). */
  variable: boolean;
}

/** A bound the document breaks (reported before execution, charging nothing for the node limit). */
export class CostError extends Error {
  constructor(
    message: string,
    readonly code: 'MAX_NODE_LIMIT_EXCEEDED' | 'BAD_USER_INPUT',
  ) {
    super(message);
  }
}

const isConnection = (type: GraphQLObjectType) => type.name.endsWith('Connection');
/** Fields of a connection whose items are its nodes (multiplied by first). */
const ITEM_FIELDS = new Set(['edges', 'nodes']);

export function queryCost(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: Record<string, FragmentDefinitionNode>,
  variables: Record<string, unknown>,
): Cost {
  type Measure = { nodes: number; connections: number };
  let variable = false;
  const fragmentCost = new Map<string, Measure>();
  const inProgress = new Set<string>();

  /** `first` items of a connection: its edges / nodes selections run once per item, the rest once. */
  const measure = (set: SelectionSetNode, parent: GraphQLObjectType, first?: number): Measure => {
    let nodes = 0;
    let connections = 0;
    const add = (m: Measure, times = 1) => {
      nodes += m.nodes * times;
      connections += m.connections * times;
    };
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const def = parent.getFields()[selection.name.value];
        if (!def || !selection.selectionSet) continue; // leaves, __typename, introspection
        const type = getNamedType(def.type);
        if (!isObjectType(type)) continue;
        const times = first !== undefined && ITEM_FIELDS.has(selection.name.value) ? first : 1;
        if (isConnection(type)) {
          const arg = selection.arguments?.find((a) => a.name.value === 'first');
          const argDef = def.args.find((a) => a.name === 'first');
          if (arg?.value.kind === Kind.VARIABLE) variable = true;
          const n = arg && argDef ? (valueFromAST(arg.value, argDef.type, variables) as unknown) : undefined;
          if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_FIRST)
            throw new CostError(
              `first is required on ${selection.name.value} and must be between 1 and ${MAX_FIRST} (got ${String(n)})`,
              'BAD_USER_INPUT',
            );
          add({ nodes: n, connections: 1 }, times);
          add(measure(selection.selectionSet, type, n), times);
        } else {
          add(measure(selection.selectionSet, type), times);
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parent;
        if (isObjectType(type)) add(measure(selection.selectionSet, type, first));
      } else {
        const name = selection.name.value;
        const key = `${name}@${first ?? 0}`;
        let m = fragmentCost.get(key);
        if (!m) {
          const fragment = fragments[name];
          const type = fragment ? schema.getType(fragment.typeCondition.name.value) : undefined;
          if (!fragment || inProgress.has(key) || !isObjectType(type)) continue; // validation reports these
          inProgress.add(key);
          m = measure(fragment.selectionSet, type, first);
          inProgress.delete(key);
          fragmentCost.set(key, m);
        }
        add(m);
      }
    }
    return { nodes, connections };
  };

  const root = schema.getQueryType()!;
  const { nodes, connections } = measure(operation.selectionSet, root);
  if (nodes > NODE_LIMIT)
    throw new CostError(
      `This query requests up to ${nodes} nodes, which exceeds the node limit of ${NODE_LIMIT}; lower the first arguments`,
      'MAX_NODE_LIMIT_EXCEEDED',
    );
  return { nodes, connections, points: Math.max(1, Math.ceil(connections / 100)), variable };
}
