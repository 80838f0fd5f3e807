// Every graph op is defined once, with its shape rule, its gradient rule and its
// lowering to native plan steps side by side (see lib/graph/ops/).
import { currentGraph, Graph, Node, Shape, SymbolicTensor } from './graph';
import type { LowerContext } from './lower_context';

export interface OpDef {
  readonly name: string;
  /** The output's shape; throws an Error naming `name` (the node) when inputs do not fit. */
  shape(inputs: readonly SymbolicTensor[], attrs: Record<string, unknown>, name: string): Shape;
  /** Gradients for each input given the output's (null: none flows there). */
  grad?(node: Node, dy: SymbolicTensor): Array<SymbolicTensor | null>;
  lower(node: Node, ctx: LowerContext): void;
}

const registry = new Map<string, OpDef>();

export function defineOp(def: OpDef): OpDef {
  if (registry.has(def.name)) throw new Error(`op '${def.name}' is defined twice`);
  registry.set(def.name, def);
  return def;
}

export function opDef(name: string): OpDef {
  const def = registry.get(name);
  if (!def) throw new Error(`no op named '${name}'`);
  return def;
}

function graphOf(inputs: readonly unknown[], what: string): Graph {
  const symbolic = inputs.find((x): x is SymbolicTensor => x instanceof SymbolicTensor);
  return symbolic ? symbolic.graph : currentGraph(what);
}

/** Adds a node of `def` and returns its output. */
export function applyOp(def: OpDef, inputs: SymbolicTensor[], attrs: Record<string, unknown> = {}, name?: string): SymbolicTensor {
  const graph = graphOf(inputs, name ?? def.name);
  inputs.forEach((x, i) => {
    if (!(x instanceof SymbolicTensor)) {
      throw new TypeError(`${name ?? def.name}: input ${i} must be a symbolic tensor (inside a modelFn), got ${describe(x)}`);
    }
  });
  const nodeName = name ?? graph.uniqueName(def.name);
  const shape = def.shape(inputs, attrs, nodeName);
  return graph.addNode(def.name, inputs, attrs, shape, nodeName).output as SymbolicTensor;
}

/** Adds a node run for its effect only (updates, metric accumulators, checks). */
export function applyEffect(def: OpDef, inputs: SymbolicTensor[], attrs: Record<string, unknown>, name?: string): Node {
  const graph = graphOf(inputs, name ?? def.name);
  const nodeName = name ?? graph.uniqueName(def.name);
  def.shape(inputs, attrs, nodeName);
  return graph.addNode(def.name, inputs, attrs, undefined, nodeName);
}

function describe(x: unknown): string {
  if (x === null || x === undefined) return String(x);
  if (typeof x === 'object') return (x as object).constructor?.name ?? 'an object';
  return typeof x;
}
