// Reverse-mode differentiation over a graph: from a scalar loss back to the variables.
// Dense gradients come back as symbolic tensors; an embedding table's gradient stays
// sparse: the lookups that read it and the gradient at each lookup's output.
import { Variable } from '../tensor/variable';
import { Node, shapeString, SymbolicTensor } from './graph';
import { opDef } from './op_registry';
import { add } from './ops/elementwise';
import { constant } from './ops/sources';

export interface SparseGradient {
  lookups: Node[];
  grads: SymbolicTensor[];
}

export interface VariableGradient {
  variable: Variable;
  dense?: SymbolicTensor;
  sparse?: SparseGradient;
}

export function gradients(loss: SymbolicTensor, variables?: Variable[]): VariableGradient[] {
  if (!(loss instanceof SymbolicTensor)) throw new TypeError('minimize: loss must be a symbolic tensor');
  if (loss.shape.length !== 0 && !(loss.shape.length === 1 && loss.shape[0] === 1)) {
    throw new Error(`minimize: the loss must be a scalar, got ${shapeString(loss.shape)} (reduce it, e.g. with hb.math.reduceMean)`);
  }
  const graph = loss.graph;
  // The nodes the loss depends on.
  const needed = new Set<number>();
  const stack = [loss.node];
  while (stack.length) {
    const node = stack.pop() as Node;
    if (needed.has(node.id)) continue;
    needed.add(node.id);
    for (const input of node.inputs) stack.push(input.node);
  }
  const pending = new Map<number, SymbolicTensor[]>();
  const push = (t: SymbolicTensor, g: SymbolicTensor) => {
    if (g.shape.join() !== t.shape.join()) {
      throw new Error(`gradient of '${t.name}' has shape ${shapeString(g.shape)} but the tensor has ${shapeString(t.shape)}`);
    }
    const list = pending.get(t.node.id) ?? [];
    list.push(g);
    pending.set(t.node.id, list);
  };
  push(loss, constant(graph, [1], [...loss.shape], 'gradients/grad_ys'));

  const byVariable = new Map<Variable, VariableGradient>();
  const wanted = variables ? new Set(variables) : undefined;
  const order = [...needed].sort((a, b) => b - a);
  for (const id of order) {
    const node = graph.nodes[id];
    const parts = pending.get(id);
    if (!parts || !node.output) continue;
    const dy = parts.reduce((sum, g) => add(sum, g));
    if (node.op === 'variable') {
      const v = graph.variableOf.get(id) as Variable;
      if (!v.trainable || (wanted && !wanted.has(v))) continue;
      const entry = byVariable.get(v) ?? { variable: v };
      entry.dense = dy;
      byVariable.set(v, entry);
      continue;
    }
    if (node.op === 'embedding_lookup') {
      const v = graph.variableOf.get(node.inputs[0].node.id) as Variable;
      if (!v.trainable || (wanted && !wanted.has(v))) continue;
      const entry = byVariable.get(v) ?? { variable: v };
      entry.sparse = entry.sparse ?? { lookups: [], grads: [] };
      entry.sparse.lookups.push(node);
      entry.sparse.grads.push(dy);
      byVariable.set(v, entry);
      continue;
    }
    const def = opDef(node.op);
    if (!def.grad) continue;
    const grads = def.grad(node, dy);
    grads.forEach((g, i) => {
      if (g) push(node.inputs[i], g);
    });
  }
  // A table read both densely and through lookups is not supported: say so.
  for (const entry of byVariable.values()) {
    if (entry.dense && entry.sparse) {
      throw new Error(`minimize: variable '${entry.variable.name}' is used both as a dense tensor and as an embedding table`);
    }
  }
  return [...byVariable.values()].sort((a, b) => (a.variable.name < b.variable.name ? -1 : 1));
}
