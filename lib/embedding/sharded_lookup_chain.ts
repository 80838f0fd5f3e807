// A lookup of a table sharded over the ranks of a job, HybridBackend's pipeline as graph
// ops: prune invalid ids, unique, partition the distinct ids by owner (id floormod W),
// send each owner its ids (alltoallv), gather them from the local shard (id floordiv W),
// send the rows back (alltoallv, on the wire dtype), put them back in the ids' order and
// combine each example's entries. Autodiff mirrors it: the combiner's gradient per
// distinct id goes back to the owners by the reverse exchange, and the owner's sparse
// update sums what every rank sent for a row.
//
// Gradient scale: each rank's loss is the mean over its own batch b, so the owner would
// add W such means. The reverse exchange scales by 1/W (HybridBackend 0.7's choice, as
// the dense gradients' mean all-reduce does), so W ranks of batch b train the same
// tables as one process with batch W * b.
import { SymbolicTensor } from '../graph/graph';
import { alltoallv, shardIds, WireDType } from '../graph/ops/exchange';
import { gatherRows } from '../graph/ops/gather_rows';
import { partitionByOwner } from '../graph/ops/partition_by_owner';
import { pruneIds } from '../graph/ops/prune_ids';
import { restoreOrder } from '../graph/ops/restore_order';
import { LookupCombiner, segmentCombine } from '../graph/ops/segment_combine';
import { unique } from '../graph/ops/unique';
import type { SymbolicRagged } from '../graph/ragged_feed';

export interface ShardedLookupOptions {
  combiner: LookupCombiner;
  maxNorm?: number;
  name: string;
  worldSize: number;
  rank: number;
  /** The whole table's rows (ids must be below it). */
  rows: number;
  wire: WireDType;
}

/** A column's ids readied for the exchange: pruned, unique, grouped by owner. */
export interface RoutedIds {
  pruned: ReturnType<typeof pruneIds>;
  distinct: ReturnType<typeof unique>;
  routed: ReturnType<typeof partitionByOwner>;
}

export function routeIds(ids: SymbolicRagged, combiner: LookupCombiner, worldSize: number, name: string): RoutedIds {
  const pruned = pruneIds(ids.ids, ids.rowSplits, ids.weights, combiner, `${name}/prune_ids`);
  const distinct = unique(pruned.ids, `${name}/unique`);
  const routed = partitionByOwner(distinct.ids, worldSize, `${name}/partition_by_owner`);
  return { pruned, distinct, routed };
}

/** The owner's side: the rows of the ids other ranks asked this shard for. */
export function ownedRows(shard: SymbolicTensor, asked: SymbolicTensor, options: { worldSize: number; rank: number; rows: number; maxNorm?: number; name: string }): SymbolicTensor {
  const { worldSize, rank, rows, name } = options;
  const local = shardIds(asked, { worldSize, rank, rows, name: `${name}/shard_ids` });
  return gatherRows(shard, local, { maxNorm: options.maxNorm ?? 0, name: `${name}/gather_rows` });
}

/** The rows that came back grouped by owner, in the ids' order and combined per example. */
export function combineAnswered(rowsByOwner: SymbolicTensor, route: RoutedIds, combiner: LookupCombiner, name: string): SymbolicTensor {
  const { pruned, distinct, routed } = route;
  const ordered = restoreOrder(rowsByOwner, routed.restore, `${name}/restore_order`);
  return segmentCombine(ordered, pruned.rowSplits, { idx: distinct.inverse, weights: pruned.weights, rowIds: distinct.ids, combiner, name });
}

export function shardedLookupChain(shard: SymbolicTensor, ids: SymbolicRagged, options: ShardedLookupOptions): SymbolicTensor {
  const { name, combiner, worldSize } = options;
  const route = routeIds(ids, combiner, worldSize, name);
  const requested = alltoallv(route.routed.ids, route.routed.sizes, { worldSize, name: `${name}/exchange_ids` });
  const found = ownedRows(shard, requested.values, options);
  const answered = alltoallv(found, requested.counts, { worldSize, wire: options.wire, gradScale: 1 / worldSize, name: `${name}/exchange_rows` });
  return combineAnswered(answered.values, route, combiner, name);
}
