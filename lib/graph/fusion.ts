// Fusion: after autodiff, before lowering, the compiler replaces chains of ops with one
// op whose kernel does their work in a single pass (the lookup chain with the fused
// embedding_lookup, a table's backward chain and update with lookup_backward_apply, a
// dense layer's bias add and activation, and their gradients).
// Each rule (lib/graph/fusions/) looks at nodes of one op, its root, and returns a new
// node that stands for the root's outputs (or replaces it as an effect), or undefined
// when the pattern does not match. Nodes the rewrite leaves unread are dropped. A
// fusion never absorbs a collective op: every worker must run it, in the same order.
import { Graph, Node, SymbolicTensor } from './graph';
import { opDef } from './op_registry';

export interface FusionContext {
  readonly graph: Graph;
  /** What `t` stands for after the fusions made so far. */
  resolve(t: SymbolicTensor): SymbolicTensor;
  /** The node computing `t` (after resolve). */
  producer(t: SymbolicTensor): Node;
  /**
   * The nodes that read `t` (after resolve): among the nodes the step needed before fusion
   * and the fused nodes made since, those not replaced. May list a node that nothing reads
   * any more: a rule that needs `t` to have no other reader then leaves it unfused, which
   * is only a missed fusion.
   */
  readers(t: SymbolicTensor): Node[];
  /** Whether the step fetches `t` (after resolve): a reader readers() does not list. */
  fetched(t: SymbolicTensor): boolean;
  /**
   * Has the fused node also stand for `t`, an output of another node the rule absorbs
   * (taken only if the fusion is): that node's other readers then read `by`. The node must
   * come after the root, be no effect, and have every output replaced; else the fusion is
   * not made (its readers could run before the fused node, or it would still run).
   */
  replace(t: SymbolicTensor, by: SymbolicTensor): void;
}

export interface FusionRule {
  readonly name: string;
  /** The op whose nodes the rule looks at. */
  readonly root: string;
  fuse(node: Node, ctx: FusionContext): Node | undefined;
}

const rules: FusionRule[] = [];

export function defineFusion(rule: FusionRule): FusionRule {
  if (rules.some((r) => r.name === rule.name)) throw new Error(`fusion '${rule.name}' is defined twice`);
  rules.push(rule);
  return rule;
}

export interface FusionResult {
  resolve(t: SymbolicTensor): SymbolicTensor;
  /** The effects, fused ones replaced. */
  effects: Node[];
  /** Where a fused node goes in the step order: where the node it replaces was. */
  position(node: Node): number;
  /** What was fused, as `rule: node` lines (for tests and plan dumps). */
  applied: string[];
}

/** Nodes reachable from `roots` through (resolved) inputs. */
export function reachable(roots: readonly Node[], resolve: (t: SymbolicTensor) => SymbolicTensor): Node[] {
  const seen = new Set<Node>();
  const stack = [...roots];
  while (stack.length) {
    const node = stack.pop() as Node;
    if (seen.has(node)) continue;
    seen.add(node);
    for (const input of node.inputs) stack.push(resolve(input).node);
  }
  return [...seen];
}

/** Whether replacing `root` by `fused` would drop a collective op `fused` no longer reads through. */
function absorbsCollective(root: Node, fused: Node, resolve: (t: SymbolicTensor) => SymbolicTensor): boolean {
  const kept = new Set(reachable(fused.inputs.map((t) => resolve(t).node), resolve));
  return reachable([root], resolve).some((n) => !kept.has(n) && Boolean(opDef(n.op).collective));
}

export function applyFusions(graph: Graph, fetches: readonly SymbolicTensor[], effects: readonly Node[]): FusionResult {
  const substitute = new Map<SymbolicTensor, SymbolicTensor>();
  const positions = new Map<Node, number>();
  const resolve = (t: SymbolicTensor): SymbolicTensor => {
    let r = t;
    while (substitute.has(r)) r = substitute.get(r) as SymbolicTensor;
    return r;
  };
  const position = (node: Node): number => positions.get(node) ?? node.id;
  let current = [...effects];
  const applied: string[] = [];
  const candidates = reachable([...fetches.map((t) => t.node), ...effects], resolve).sort((a, b) => a.id - b.id);
  // Nodes that may still read something: the candidates and the fused nodes, less those
  // whose outputs now stand elsewhere.
  const live = new Set(candidates);
  let pending: Array<[SymbolicTensor, SymbolicTensor]> = [];
  const ctx: FusionContext = {
    graph,
    resolve,
    producer: (t) => resolve(t).node,
    readers: (t) => {
      const r = resolve(t);
      return [...live].filter((n) => n.inputs.some((input) => resolve(input) === r));
    },
    fetched: (t) => {
      const r = resolve(t);
      return fetches.some((f) => resolve(f) === r);
    },
    replace: (t, by) => void pending.push([resolve(t), by]),
  };
  // What replace() may absorb besides the root (see FusionContext.replace).
  const absorbable = (root: Node, replaced: ReadonlyArray<[SymbolicTensor, SymbolicTensor]>) =>
    replaced.every(([t]) => {
      const n = t.node;
      return n !== root && live.has(n) && position(n) > position(root) && !opDef(n.op).effect &&
        n.outputs.every((o) => replaced.some(([r]) => r === o));
    });
  // The collective check walks the graph for each match: only worth it where there is one.
  const hasCollective = candidates.some((n) => Boolean(opDef(n.op).collective));
  for (const node of candidates) {
    if (!live.has(node)) continue;
    for (const rule of rules) {
      if (rule.root !== node.op) continue;
      pending = [];
      const fused = graph.inPhase(node.phase, () => rule.fuse(node, ctx)); // a fused node is in its root's phase
      const absorbed = [node, ...pending.map(([t]) => t.node)];
      if (!fused || !absorbable(node, pending)) continue;
      if (hasCollective && absorbed.some((n) => absorbsCollective(n, fused, resolve))) continue;
      node.outputs.forEach((t, i) => substitute.set(t, fused.outputs[i]));
      for (const [t, by] of pending) substitute.set(t, by);
      for (const n of absorbed) {
        if (n.outputs.every((t) => substitute.has(t))) live.delete(n);
      }
      live.add(fused);
      current = current.map((e) => (e === node ? fused : e));
      positions.set(fused, position(node));
      applied.push(`${rule.name}: ${node.name}`);
      break;
    }
  }
  return { resolve, effects: current, position, applied };
}
