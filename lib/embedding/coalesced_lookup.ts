// Sharded lookups of a group of columns coalesced (HybridBackend's embNumGroups): each
// column prunes, uniques and partitions its ids by owner as in a lookup of its own
// (lib/embedding/sharded_lookup_chain.ts), but the group's ids travel in one alltoallv
// and their rows in one more, every rank's part laid out column by column (lib/graph/
// ops/coalesce.ts), so a step exchanges a few times, not twice per column. The backward
// mirrors it: one reverse exchange for the group's row gradients, scaled by 1/W.
import { SymbolicTensor } from '../graph/graph';
import { packByOwner, packRows, unpackBySource, unpackRows } from '../graph/ops/coalesce';
import { alltoallv, shardIds, WireDType } from '../graph/ops/exchange';
import { gatherRows } from '../graph/ops/gather_rows';
import { partitionByOwner } from '../graph/ops/partition_by_owner';
import { pruneIds } from '../graph/ops/prune_ids';
import { restoreOrder } from '../graph/ops/restore_order';
import { LookupCombiner, segmentCombine } from '../graph/ops/segment_combine';
import { unique } from '../graph/ops/unique';
import type { SymbolicRagged } from '../graph/ragged_feed';

export interface GroupedLookup {
  /** The shard of the column's table, as a graph tensor. */
  shard: SymbolicTensor;
  ids: SymbolicRagged;
  combiner: LookupCombiner;
  maxNorm?: number;
  /** The column's name (names its ops). */
  name: string;
  /** The whole table's rows. */
  rows: number;
  dim: number;
}

export function coalescedShardedLookup(
  lookups: GroupedLookup[],
  options: { worldSize: number; rank: number; wire: WireDType; name: string },
): SymbolicTensor[] {
  const { worldSize, rank, wire, name } = options;
  const mine = lookups.map((l) => {
    const pruned = pruneIds(l.ids.ids, l.ids.rowSplits, l.ids.weights, l.combiner, `${l.name}/prune_ids`);
    const distinct = unique(pruned.ids, `${l.name}/unique`);
    const routed = partitionByOwner(distinct.ids, worldSize, `${l.name}/partition_by_owner`);
    return { pruned, distinct, routed };
  });
  const outgoing = packByOwner(mine.map((m) => ({ ids: m.routed.ids, sizes: m.routed.sizes })), `${name}/pack_ids`);
  const requested = alltoallv(outgoing.packed, outgoing.sendCounts, { worldSize, name: `${name}/exchange_ids` });
  const asked = unpackBySource(requested.values, requested.counts, lookups.length, `${name}/unpack_ids`);
  const found = lookups.map((l, i) => {
    const local = shardIds(asked.ids[i], { worldSize, rank, rows: l.rows, name: `${l.name}/shard_ids` });
    return gatherRows(l.shard, local, { maxNorm: l.maxNorm ?? 0, name: `${l.name}/gather_rows` });
  });
  const answer = packRows(asked.layout, found, `${name}/pack_rows`);
  const answered = alltoallv(answer.packed, answer.sendCounts, { worldSize, wire, gradScale: 1 / worldSize, name: `${name}/exchange_rows` });
  const rowsByOwner = unpackRows(answered.values, outgoing.layout, lookups.map((l) => l.dim), `${name}/unpack_rows`);
  return lookups.map((l, i) => {
    const { pruned, distinct, routed } = mine[i];
    const ordered = restoreOrder(rowsByOwner[i], routed.restore, `${l.name}/restore_order`);
    return segmentCombine(ordered, pruned.rowSplits, { idx: distinct.inverse, weights: pruned.weights, rowIds: distinct.ids, combiner: l.combiner, name: l.name });
  });
}
