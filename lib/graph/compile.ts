// Lowers the part of a graph that some fetches and effects need to a native plan:
// steps in order, values numbered, temporaries packed into reused storage slots by
// liveness, variables and constants bound as parameters that persist in native memory.
import { NativeTensorHandle } from '../native';
import { Tensor } from '../tensor/tensor';
import { Variable } from '../tensor/variable';
import { Feed, Graph, Node, Shape, SymbolicTensor } from './graph';
import { LowerContext, PlanStepSpec } from './lower_context';
import { opDef } from './op_registry';
import './ops/sources';
import './ops/embedding';

export interface PlanValueSpec {
  kind: 'temp' | 'param' | 'feed' | 'produced' | 'alias';
  dtype: 'float32';
  shape: number[];
  index: number;
}

export interface PlanSpec {
  /** Where the plan runs: the graph's device. */
  device: string;
  values: PlanValueSpec[];
  params: NativeTensorHandle[];
  feeds: Array<{ name: string; kind: string }>;
  steps: PlanStepSpec[];
  storageCount: number;
}

export interface CompiledGraph {
  spec: PlanSpec;
  /** The graph feeds the plan reads, in the plan's feed order. */
  feeds: Feed[];
  /** Value ids of the fetches, in the order asked. */
  fetch: number[];
  /** The optimizers whose hyperparameters each run passes, in index order. */
  optimizers: unknown[];
}

const APPLY_OPS = new Set(['dense_apply', 'sparse_apply']);

export function compileGraph(graph: Graph, fetches: SymbolicTensor[], effects: Node[] = []): CompiledGraph {
  // The nodes needed, in creation order, with every update after everything else: an
  // update must not run before a forward or backward op that reads the old value.
  const needed = new Set<number>();
  const stack: Node[] = [...fetches.map((t) => t.node), ...effects];
  while (stack.length) {
    const node = stack.pop() as Node;
    if (needed.has(node.id)) continue;
    needed.add(node.id);
    node.inputs.forEach((x) => stack.push(x.node));
    const lookups = (node.attrs.lookups as Node[] | undefined) ?? [];
    lookups.forEach((l) => stack.push(l));
  }
  const ordered = [...needed].sort((a, b) => a - b).map((id) => graph.nodes[id]);
  const order = [...ordered.filter((n) => !APPLY_OPS.has(n.op)), ...ordered.filter((n) => APPLY_OPS.has(n.op))];

  const values: PlanValueSpec[] = [];
  const aliasOf = new Map<number, number>();
  const valueOfNode = new Map<number, number>();
  const params: NativeTensorHandle[] = [];
  const paramIndex = new Map<Tensor, number>();
  const feeds: Feed[] = [];
  const feedIndex = new Map<number, number>();
  const steps: PlanStepSpec[] = [];
  const lookupStepOfNode = new Map<number, number>();
  const optimizers: unknown[] = [];
  const paramValues = new Map<Variable, number>();

  const param = (t: Tensor): number => {
    let i = paramIndex.get(t);
    if (i === undefined) {
      i = params.length;
      params.push(t.handle);
      paramIndex.set(t, i);
    }
    return i;
  };
  const feed = (graphIndex: number): number => {
    if (graphIndex < 0) return -1;
    let i = feedIndex.get(graphIndex);
    if (i === undefined) {
      i = feeds.length;
      feeds.push(graph.feeds[graphIndex]);
      feedIndex.set(graphIndex, i);
    }
    return i;
  };
  const newValue = (v: PlanValueSpec): number => values.push(v) - 1;
  const shapeOf = (s: Shape) => [...s];

  const valueOf = (t: SymbolicTensor): number => {
    const existing = valueOfNode.get(t.node.id);
    if (existing !== undefined) return existing;
    const node = t.node;
    let id: number;
    if (node.op === 'variable') {
      const v = graph.variableOf.get(node.id) as Variable;
      id = newValue({ kind: 'param', dtype: 'float32', shape: shapeOf(v.shape), index: param(v) });
    } else if (node.op === 'constant') {
      const c = node.attrs.tensor as Tensor;
      id = newValue({ kind: 'param', dtype: 'float32', shape: shapeOf(c.shape), index: param(c) });
    } else if (node.op === 'placeholder') {
      id = newValue({ kind: 'feed', dtype: 'float32', shape: shapeOf(t.shape), index: feed(node.attrs.feed as number) });
    } else {
      id = newValue({ kind: 'temp', dtype: 'float32', shape: shapeOf(t.shape), index: -1 });
    }
    valueOfNode.set(node.id, id);
    return id;
  };

  let current: Node | undefined;
  const ctx: LowerContext = {
    value: valueOf,
    alias: (t, source) => {
      const id = newValue({ kind: 'alias', dtype: 'float32', shape: shapeOf(t.shape), index: source });
      aliasOf.set(id, source);
      valueOfNode.set(t.node.id, id);
    },
    produced: (t) => {
      const id = newValue({ kind: 'produced', dtype: 'float32', shape: shapeOf(t.shape), index: -1 });
      valueOfNode.set(t.node.id, id);
      return id;
    },
    param: (v) => param(v),
    paramValue: (v) => {
      const key = paramValues.get(v);
      if (key !== undefined) return key;
      const id = newValue({ kind: 'param', dtype: 'float32', shape: shapeOf(v.shape), index: param(v) });
      paramValues.set(v, id);
      return id;
    },
    lookupStep: (nodeId) => {
      const s = lookupStepOfNode.get(nodeId);
      if (s === undefined) throw new Error(`compile: lookup node ${nodeId} has not been lowered`);
      return s;
    },
    optimizer: (o) => {
      let i = optimizers.indexOf(o);
      if (i < 0) i = optimizers.push(o) - 1;
      return i;
    },
    kernel: (kernel, inputs, outputs, attrs = [], name) =>
      void steps.push({ kind: 'kernel', name: name ?? current?.name ?? kernel, kernel, inputs, outputs, attrs }),
    step: (s) => {
      if (s.kind === 'lookup') {
        s = { ...s, ids: feed(s.ids), rowSplits: feed(s.rowSplits), weights: feed(s.weights) };
        lookupStepOfNode.set(current!.id, steps.length);
      }
      return steps.push(s) - 1;
    },
    get nodeName() {
      return current?.name ?? '';
    },
  };
  for (const node of order) {
    current = node;
    opDef(node.op).lower(node, ctx);
  }
  const fetch = fetches.map((t) => valueOf(t));
  const storageCount = assignStorage(values, aliasOf, steps, fetch);
  return {
    spec: { device: graph.device, values, params, feeds: feeds.map((f) => ({ name: f.name, kind: f.kind })), steps, storageCount },
    feeds,
    fetch,
    optimizers,
  };
}

/** Packs temporaries into slots: two values share one when their lives do not overlap. */
function assignStorage(values: PlanValueSpec[], aliasOf: Map<number, number>, steps: PlanStepSpec[], fetch: number[]): number {
  const root = (id: number): number => {
    let r = id;
    while (aliasOf.has(r)) r = aliasOf.get(r) as number;
    return r;
  };
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  const touch = (id: number, at: number) => {
    const r = root(id);
    if (values[r].kind !== 'temp') return;
    if (!first.has(r)) first.set(r, at);
    last.set(r, Math.max(last.get(r) ?? at, at));
  };
  steps.forEach((s, i) => {
    if (s.kind === 'kernel') [...s.inputs, ...s.outputs].forEach((id) => touch(id, i));
    else if (s.kind === 'sparseApply' || s.kind === 'denseApply') s.grads.forEach((id) => touch(id, i));
  });
  fetch.forEach((id) => touch(id, Number.POSITIVE_INFINITY));
  const temps = [...first.keys()].sort((a, b) => (first.get(a) as number) - (first.get(b) as number));
  const free: number[] = [];
  const active: Array<{ id: number; slot: number }> = [];
  let slots = 0;
  for (const id of temps) {
    const start = first.get(id) as number;
    for (let i = active.length - 1; i >= 0; i--) {
      if ((last.get(active[i].id) as number) < start) {
        free.push(active[i].slot);
        active.splice(i, 1);
      }
    }
    const slot = free.length ? (free.pop() as number) : slots++;
    values[id].index = slot;
    active.push({ id, slot });
  }
  // Temporaries no step touches (none should exist) still need a slot to be valid.
  values.forEach((v) => {
    if (v.kind === 'temp' && v.index < 0) v.index = slots++;
  });
  return slots;
}
