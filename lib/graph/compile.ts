// Lowers the part of a graph that some fetches and effects need to a plan: fusions
// applied (lib/graph/fusion.ts), nodes in order with every update after everything
// else, values numbered, temporaries packed into reused storage slots by liveness,
// variables and constants bound as parameters that persist in native memory. The result
// is a serializable PlanSpec plus the tensors bound to its parameters.
import { KERNEL_REGISTRY_VERSION, KernelAttrValue, NativeTensorHandle } from '../native';
import { Tensor } from '../tensor/tensor';
import { applyFusions, reachable } from './fusion';
import './fusions/embedding_lookup';
import './fusions/lookup_backward_apply';
import './fusions/dense_activation';
import { DYNAMIC, Feed, Graph, Node, SymbolicTensor } from './graph';
import { kernelDef, kernelTensorAt } from './kernels';
import { LowerContext } from './lower_context';
import { opDef } from './op_registry';
import './ops';
import { PlanSpec, PlanStepSpec, PlanValueSpec } from './plan_spec';

export interface CompileOptions {
  /** Default true: fuse chains (the lookup chain into one kernel). false keeps every op as it is. */
  fuse?: boolean;
}

export interface CompiledGraph {
  spec: PlanSpec;
  /** The tensors bound to spec.params, in order. */
  params: NativeTensorHandle[];
  /** The graph feeds the plan reads, in the plan's feed order. */
  feeds: Feed[];
  /** Value ids of the fetches, in the order asked. */
  fetch: number[];
  /** The optimizers whose hyperparameters each run passes, in index order. */
  optimizers: unknown[];
  /** The fusions applied, as `rule: node` lines. */
  fused: string[];
}

export function compileGraph(graph: Graph, fetches: SymbolicTensor[], effects: Node[] = [], options: CompileOptions = {}): CompiledGraph {
  const fusion = options.fuse === false
    ? { resolve: (t: SymbolicTensor) => t, effects: [...effects], position: (n: Node) => n.id, applied: [] as string[] }
    : applyFusions(graph, fetches, effects);
  const { resolve } = fusion;
  const roots = [...fetches.map((t) => resolve(t).node), ...fusion.effects];
  // In creation order (a fused node where the node it replaced was), every update after
  // everything else: an update must not run before a step that reads the old value. A
  // check (an effect that writes nothing, like the loss's NaN check) runs as soon as its
  // inputs are there: before the backward's exchanges, so a rank whose loss is not finite
  // fails before it sends anything and tells its peers in the first exchange after it.
  const isStateful = (n: Node) => Boolean(opDef(n.op).stateful);
  const isCheck = (n: Node) => Boolean(opDef(n.op).effect) && !isStateful(n);
  const rank = (n: Node): number =>
    isCheck(n) ? Math.max(-1, ...n.inputs.map((t) => fusion.position(resolve(t).node))) + 0.5 : fusion.position(n);
  const needed = reachable(roots, resolve).sort((a, b) => rank(a) - rank(b));
  const order = [...needed.filter((n) => !isStateful(n)), ...needed.filter(isStateful)];

  const values: PlanValueSpec[] = [];
  const params: NativeTensorHandle[] = [];
  const paramSpecs: PlanSpec['params'] = [];
  const paramValue = new Map<Tensor, number>();
  const feeds: Feed[] = [];
  const feedIndex = new Map<number, number>();
  const steps: PlanStepSpec[] = [];
  const optimizers: unknown[] = [];
  const valueOfTensor = new Map<SymbolicTensor, number>();
  const aliasOf = new Map<number, number>();
  const newValue = (v: PlanValueSpec): number => values.push(v) - 1;

  const param = (t: Tensor, name: string): number => {
    let id = paramValue.get(t);
    if (id === undefined) {
      id = newValue({ kind: 'param', dtype: t.dtype, shape: [...t.shape], index: params.length });
      params.push(t.handle);
      paramSpecs.push({ name, dtype: t.dtype, shape: [...t.shape] });
      paramValue.set(t, id);
    }
    return id;
  };
  const value = (t: SymbolicTensor): number => {
    const r = resolve(t);
    let id = valueOfTensor.get(r);
    if (id === undefined) {
      id = newValue({ kind: r.shape.includes(DYNAMIC) ? 'dynamic' : 'temp', dtype: r.dtype, shape: [...r.shape], index: -1 });
      valueOfTensor.set(r, id);
    }
    return id;
  };
  const bind = (t: SymbolicTensor, id: number) => {
    const r = resolve(t);
    if (valueOfTensor.has(r)) throw new Error(`compile: '${r.name}' is bound twice`);
    valueOfTensor.set(r, id);
  };

  // How a fresh value is sized, once its first writer is known: by the kernel (it sizes
  // that output itself), by the plan when the shape is known before the run, or like an
  // input of the same (run-time) shape, as an elementwise op over unique rows is.
  const written = new Set<number>();
  // A value can be sized like another of the same rank that is dynamic wherever it is.
  const canSizeLike = (v: PlanValueSpec, other: PlanValueSpec) =>
    other.shape.length === v.shape.length && v.shape.every((d, i) => d !== DYNAMIC || other.shape[i] === DYNAMIC);
  const sizeOutput = (id: number, sizedByKernel: boolean, inputs: number[], what: string) => {
    const v = values[id];
    if (v.kind !== 'temp' && v.kind !== 'dynamic') return;
    if (sizedByKernel) {
      Object.assign(v, { kind: 'dynamic', index: -1 });
    } else if (v.kind === 'dynamic' && v.index >= 0) {
      // sized already (sizeLike)
    } else if (!v.shape.includes(DYNAMIC)) {
      Object.assign(v, { kind: 'temp', index: -1 });
    } else {
      const like = inputs.find((i) => i >= 0 && canSizeLike(v, values[i]));
      if (like === undefined) throw new Error(`${what}: its shape [${v.shape}] is known only at run time, and no input has those dimensions to size it by`);
      Object.assign(v, { kind: 'dynamic', index: like });
    }
  };
  let current: Node | undefined;
  const ctx: LowerContext = {
    value,
    temp: (like) => newValue({ kind: like.shape.includes(DYNAMIC) ? 'dynamic' : 'temp', dtype: like.dtype, shape: [...like.shape], index: -1 }),
    sizeLike: (t, like) => {
      const id = value(t);
      if (!canSizeLike(values[id], values[like])) throw new Error(`${t.name}: cannot be sized like a value of shape [${values[like].shape}]`);
      Object.assign(values[id], { kind: 'dynamic', index: like });
    },
    alias: (t, source) => {
      const id = newValue({ kind: 'alias', dtype: t.dtype, shape: [...t.shape], index: source });
      aliasOf.set(id, source);
      bind(t, id);
    },
    bindParam: (t, tensor, name) => {
      const id = param(tensor, name);
      bind(t, id);
      return id;
    },
    param,
    bindFeed: (t, graphFeed) => {
      let index = feedIndex.get(graphFeed);
      if (index === undefined) {
        index = feeds.push(graph.feeds[graphFeed]) - 1;
        feedIndex.set(graphFeed, index);
      }
      bind(t, newValue({ kind: 'feed', dtype: t.dtype, shape: [...t.shape], index }));
    },
    optimizer: (o) => {
      let i = optimizers.indexOf(o);
      if (i < 0) i = optimizers.push(o) - 1;
      return i;
    },
    kernelAttrs: (kernel, attrs) => {
      const out: Record<string, KernelAttrValue> = {};
      for (const a of kernelDef(kernel).attrs) {
        if (attrs[a.name] !== undefined) out[a.name] = attrs[a.name] as KernelAttrValue;
      }
      return out;
    },
    kernel: (kernel, inputs, outputs, attrs = {}, name) => {
      const stepName = name ?? current?.name ?? kernel;
      const def = kernelDef(kernel);
      outputs.forEach((id, i) => {
        if (id >= 0 && !written.has(id)) sizeOutput(id, kernelTensorAt(def.outputs, def.repeatOutputsFrom, i)?.sized ?? false, inputs, `${stepName}: kernel ${kernel} output ${i}`);
        written.add(id);
      });
      const phase = current?.phase ?? 'forward';
      steps.push({ name: stepName, kernel, inputs, outputs, attrs, ...(phase === 'forward' ? {} : { phase }) });
    },
    get nodeName() {
      return current?.name ?? '';
    },
  };
  for (const node of order) {
    current = node;
    opDef(node.op).lower(node, ctx);
  }
  const fetch = fetches.map((t) => value(t));
  const storageCount = assignStorage(values, aliasOf, steps, fetch);
  return {
    spec: {
      version: KERNEL_REGISTRY_VERSION,
      device: graph.device,
      values,
      params: paramSpecs,
      feeds: feeds.map((f) => ({ name: f.name, dtype: f.dtype, shape: [...f.shape] })),
      steps,
      storageCount,
    },
    params,
    feeds,
    fetch,
    optimizers,
    fused: fusion.applied,
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
    if (id < 0) return;
    const r = root(id);
    if (values[r].kind !== 'temp') return;
    if (!first.has(r)) first.set(r, at);
    last.set(r, Math.max(last.get(r) ?? at, at));
  };
  steps.forEach((s, i) => [...s.inputs, ...s.outputs].forEach((id) => touch(id, i)));
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
