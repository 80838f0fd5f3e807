// The exchanges between the ranks of a job inside a compiled step (native/exec/
// collective_kernels.cc). They are collective ops: kept in creation order, which is the
// same on every rank because every rank builds the same graph, and never fused away.
//
//   stepSync   the step's first exchange: every rank's flags, max-reduced, so ranks agree
//              to stop (an input that ended) or to pause (an evaluation) at the same step
//   alltoallv  rows to each rank by counts; its gradient sends each row's gradient back
//              the way the row came, scaled by gradScale
//   allreduce  tensors summed or averaged in one exchange (dense gradients)
//   allgather  every rank's rows, float32 ones scaled (a replicated table's gradients)
//   shardIds   ids received for a shard as the shard's rows (id floordiv W), checked
import { DYNAMIC, Feed, Graph, shapeString, SymbolicTensor } from '../graph';
import { applyOp, applyOpOutputs, defineOp } from '../op_registry';
import { placeholder } from './sources';
import { shownValue } from '../../shown_value';

export type WireDType = 'float32' | 'float16' | 'bfloat16';

function checkWorldSize(worldSize: unknown, name: string): number {
  if (!Number.isSafeInteger(worldSize) || (worldSize as number) < 1) {
    const message = `${name}: worldSize must be an integer >= 1, got ${shownValue(worldSize)}`;
    throw typeof worldSize === 'number' ? new RangeError(message) : new TypeError(message);
  }
  return worldSize as number;
}

const stepSyncDef = defineOp({
  name: 'step_sync',
  kernel: 'step_sync',
  noGradient: true,
  collective: true,
  shape: ([flags]) => flags.shape,
});

/** How many int32 flags the step's first exchange carries (lib/graph/compiled_step.ts says what each means). */
export const STEP_FLAG_COUNT = 5;

/**
 * The step's first exchange: a fed int32 [STEP_FLAG_COUNT] of this rank's flags (`feed`;
 * a run puts its own in place of what `feed.build` gives), max-reduced over the ranks.
 */
export function stepSync(graph: Graph, worldSize: number): { agreed: SymbolicTensor; feed: Feed } {
  const feed: Feed = { name: 'step_flags', dtype: 'int32', shape: [DYNAMIC], build: () => new Int32Array(STEP_FLAG_COUNT) };
  const fed = placeholder(graph, feed, 'step_sync/flags');
  const agreed = applyOp(stepSyncDef, [fed], { worldSize: checkWorldSize(worldSize, 'step_sync') }, 'step_sync');
  graph.stepSync = { agreed, feed };
  return { agreed, feed };
}

const alltoallvGradDef = defineOp({
  name: 'alltoallv_grad',
  kernels: ['alltoallv'],
  collective: true,
  outputs: ([dy]) => [{ shape: [DYNAMIC, ...dy.shape.slice(1)], dtype: dy.dtype }],
  lower: (node, ctx) => {
    const [dy, counts] = node.inputs;
    // Its recvCounts are the forward's sendCounts again: a scratch value nobody reads.
    const unused = ctx.temp(counts);
    ctx.kernel('alltoallv', [ctx.value(dy), ctx.value(counts)], [ctx.value(node.output!), unused], {
      worldSize: node.attrs.worldSize as number,
      wire: node.attrs.wire as string,
      scale: node.attrs.scale as number,
    });
  },
});

const alltoallvDef = defineOp({
  name: 'alltoallv',
  kernels: ['alltoallv'],
  collective: true,
  outputs: ([values, counts], attrs, name) => {
    const worldSize = checkWorldSize(attrs.worldSize, name);
    if (values.rank < 1) throw new Error(`${name}: values must have a first dimension (rows), got ${shapeString(values.shape)}`);
    if (counts.dtype !== 'int32' || counts.shape.join() !== String(worldSize)) {
      throw new TypeError(`${name}: sendCounts must be int32 [${worldSize}], got ${counts}`);
    }
    if (attrs.wire !== 'float32' && values.dtype !== 'float32') throw new TypeError(`${name}: a ${String(attrs.wire)} wire is for float32 rows, got ${values.dtype}`);
    return [
      { shape: [DYNAMIC, ...values.shape.slice(1)], dtype: values.dtype },
      { shape: [worldSize], dtype: 'int32' },
    ];
  },
  grad: (node, dy) => {
    if (node.inputs[0].dtype !== 'float32') return [null, null];
    const [, recvCounts] = node.outputs;
    const attrs = { worldSize: node.attrs.worldSize, wire: node.attrs.wire, scale: node.attrs.gradScale };
    return [applyOp(alltoallvGradDef, [dy, recvCounts], attrs, `${node.name}/grad`), null];
  },
  lower: (node, ctx) => {
    const [values, counts] = node.inputs;
    ctx.kernel('alltoallv', [ctx.value(values), ctx.value(counts)], node.outputs.map((t) => ctx.value(t)), {
      worldSize: node.attrs.worldSize as number,
      wire: node.attrs.wire as string,
      scale: 1,
    });
  },
});

/**
 * sendCounts[p] rows of `values` (in order) to rank p; the rows received in rank order
 * and how many came from each. Float32 rows travel as `wire`; their gradient comes back
 * the same way, multiplied by `gradScale`.
 */
export function alltoallv(
  values: SymbolicTensor,
  sendCounts: SymbolicTensor,
  options: { worldSize: number; wire?: WireDType; gradScale?: number; name?: string },
): { values: SymbolicTensor; counts: SymbolicTensor } {
  const attrs = { worldSize: options.worldSize, wire: options.wire ?? 'float32', gradScale: options.gradScale ?? 1 };
  const [received, counts] = applyOpOutputs(alltoallvDef, [values, sendCounts], attrs, options.name);
  return { values: received, counts };
}

const allreduceDef = defineOp({
  name: 'allreduce',
  kernels: ['allreduce'],
  noGradient: true,
  collective: true,
  outputs: (inputs, attrs, name) => {
    checkWorldSize(attrs.worldSize, name);
    return inputs.map((x) => {
      if (x.dtype !== 'float32' || x.shape.some((d) => d < 0)) throw new TypeError(`${name}: allreduce takes float32 tensors of fixed shape, got ${x}`);
      return { shape: [...x.shape], dtype: 'float32' as const };
    });
  },
  lower: (node, ctx) =>
    ctx.kernel('allreduce', node.inputs.map((x) => ctx.value(x)), node.outputs.map((t) => ctx.value(t)), {
      worldSize: node.attrs.worldSize as number,
      op: node.attrs.op as string,
    }),
});

/** Each tensor summed ('sum') or averaged ('mean') over the ranks, all in one exchange. */
export function allreduce(tensors: SymbolicTensor[], options: { worldSize: number; op: 'sum' | 'mean'; name?: string }): readonly SymbolicTensor[] {
  if (tensors.length === 0) return [];
  return applyOpOutputs(allreduceDef, tensors, { worldSize: options.worldSize, op: options.op }, options.name);
}

const allgatherDef = defineOp({
  name: 'allgather',
  kernel: 'allgather',
  noGradient: true,
  collective: true,
  outputs: ([values], attrs, name) => {
    checkWorldSize(attrs.worldSize, name);
    if (values.rank < 1) throw new Error(`${name}: values must have a first dimension (rows), got ${shapeString(values.shape)}`);
    return [{ shape: [DYNAMIC, ...values.shape.slice(1)], dtype: values.dtype }];
  },
});

/** Every rank's rows of `values`, in rank order; float32 values multiplied by `scale`. */
export function allgather(values: SymbolicTensor, options: { worldSize: number; scale?: number; name?: string }): SymbolicTensor {
  return applyOp(allgatherDef, [values], { worldSize: options.worldSize, scale: options.scale ?? 1 }, options.name);
}

const shardIdsDef = defineOp({
  name: 'shard_ids',
  kernel: 'shard_ids',
  noGradient: true,
  outputs: ([ids], _attrs, name) => {
    if ((ids.dtype !== 'int32' && ids.dtype !== 'int64') || ids.rank !== 1) throw new TypeError(`${name}: ids must be 1-D int32 or int64, got ${ids}`);
    return [{ shape: [DYNAMIC], dtype: ids.dtype }];
  },
});

/** Ids of a table of `rows` rows sharded over `worldSize` ranks, received by `rank`, as rows of its shard. */
export function shardIds(ids: SymbolicTensor, options: { worldSize: number; rank: number; rows: number; name?: string }): SymbolicTensor {
  return applyOp(shardIdsDef, [ids], { worldSize: options.worldSize, rank: options.rank, rows: options.rows }, options.name);
}
