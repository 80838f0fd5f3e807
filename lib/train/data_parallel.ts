// Gradients under a job of W ranks, each training on its own batch b (data parallel):
// combined so that one step equals one process's step on the W * b examples together.
//   dense variables (replicated): all-reduced with the mean, all in one exchange
//   replicated tables: every rank's IndexedSlices gathered, values scaled by 1/W (the
//     sparse update sums duplicates: the mean of the ranks' gradients), so every rank
//     applies the same update and the replicas stay equal
//   sharded tables: as they come (their lookup's reverse exchange already scaled them
//     by 1/W on the way to the owner; lib/embedding/sharded_lookup_chain.ts)
import { VariableGradient } from '../graph/autodiff';
import { GraphWorld, SymbolicTensor } from '../graph/graph';
import { allgather, allreduce } from '../graph/ops/exchange';
import { SparseGradient } from '../graph/op_registry';

export function dataParallelGradients(grads: VariableGradient[], world: GraphWorld, scope: string): VariableGradient[] {
  const W = world.size;
  if (W <= 1) return grads;
  const dense = grads.filter((g) => g.dense !== undefined);
  const reduced = allreduce(dense.map((g) => g.dense as SymbolicTensor), { worldSize: W, op: 'mean', name: `${scope}/allreduce_gradients` });
  const meanOf = new Map(dense.map((g, i) => [g, reduced[i]]));
  return grads.map((g) => {
    if (g.dense !== undefined) return { ...g, dense: meanOf.get(g) };
    if (g.variable.slotOwner?.placement?.kind !== 'replicated') return g;
    const sparse = (g.sparse ?? []).map((s, i) => {
      const at = `${scope}/allgather_${g.variable.name}${i ? `_${i}` : ''}`;
      return new SparseGradient(
        allgather(s.indices, { worldSize: W, name: `${at}/indices` }),
        allgather(s.values, { worldSize: W, scale: 1 / W, name: `${at}/values` }),
      );
    });
    return { ...g, sparse };
  });
}
