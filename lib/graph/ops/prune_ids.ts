// prune_ids: the first step of tf.nn.safe_embedding_lookup_sparse. Drops ids < 0 and,
// with weights and a combiner other than 'sum', entries whose weight is not > 0.
import { DYNAMIC, SymbolicTensor } from '../graph';
import { applyOpOutputs, defineOp } from '../op_registry';
import type { LookupCombiner } from './segment_combine';

const pruneIdsDef = defineOp({
  name: 'prune_ids',
  kernels: ['prune_ids'],
  noGradient: true,
  outputs: ([ids, , weights]) => [
    { shape: [DYNAMIC], dtype: ids.dtype },
    { shape: [DYNAMIC], dtype: 'int32' },
    ...(weights ? [{ shape: [DYNAMIC], dtype: 'float32' as const }] : []),
  ],
  lower: (node, ctx) => {
    const [ids, splits, weights] = node.inputs;
    const [outIds, outSplits, outWeights] = node.outputs;
    ctx.kernel('prune_ids', [ctx.value(ids), ctx.value(splits), weights ? ctx.value(weights) : -1], [ctx.value(outIds), ctx.value(outSplits), outWeights ? ctx.value(outWeights) : -1], {
      combiner: node.attrs.combiner as string,
      keepNegative: Boolean(node.attrs.keepNegative),
    });
  },
});

export interface PrunedIds {
  ids: SymbolicTensor;
  rowSplits: SymbolicTensor;
  weights?: SymbolicTensor;
}

/** `keepNegative`: ids are a dynamic table's (any int64), not rows; only weights prune. */
export function pruneIds(ids: SymbolicTensor, rowSplits: SymbolicTensor, weights: SymbolicTensor | undefined, combiner: LookupCombiner, name?: string, keepNegative = false): PrunedIds {
  const out = applyOpOutputs(pruneIdsDef, weights ? [ids, rowSplits, weights] : [ids, rowSplits], { combiner, keepNegative }, name);
  return { ids: out[0], rowSplits: out[1], weights: out[2] };
}
