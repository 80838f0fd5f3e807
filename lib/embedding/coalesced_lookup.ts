// Sharded lookups of a group of columns coalesced (HybridBackend's embNumGroups): each
// column routes its ids, is gathered on the owner and combined as in a lookup of its own
// (the stages of lib/embedding/sharded_lookup_chain.ts), but the group's ids travel in
// one alltoallv and their rows in one more, every rank's part laid out column by column
// (lib/graph/ops/coalesce.ts), so a step exchanges a few times, not twice per column.
// The backward mirrors it: one reverse exchange for the group's row gradients, scaled by 1/W.
import { SymbolicTensor } from '../graph/graph';
import { packByOwner, packRows, unpackBySource, unpackRows } from '../graph/ops/coalesce';
import { alltoallv, WireDType } from '../graph/ops/exchange';
import type { LookupCombiner } from '../graph/ops/segment_combine';
import type { SymbolicRagged } from '../graph/ragged_feed';
import { combineAnswered, ownedRows, routeIds } from './sharded_lookup_chain';

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
  const routes = lookups.map((l) => routeIds(l.ids, l.combiner, worldSize, l.name));
  const outgoing = packByOwner(routes.map((r) => ({ ids: r.routed.ids, sizes: r.routed.sizes })), `${name}/pack_ids`);
  const requested = alltoallv(outgoing.packed, outgoing.sendCounts, { worldSize, name: `${name}/exchange_ids` });
  const asked = unpackBySource(requested.values, requested.counts, lookups.length, `${name}/unpack_ids`);
  const found = lookups.map((l, i) => ownedRows(l.shard, asked.ids[i], { worldSize, rank, rows: l.rows, maxNorm: l.maxNorm, name: l.name }));
  const answer = packRows(asked.layout, found, `${name}/pack_rows`);
  const answered = alltoallv(answer.packed, answer.sendCounts, { worldSize, wire, gradScale: 1 / worldSize, name: `${name}/exchange_rows` });
  const rowsByOwner = unpackRows(answered.values, outgoing.layout, lookups.map((l) => l.dim), `${name}/unpack_rows`);
  return lookups.map((l, i) => combineAnswered(rowsByOwner[i], routes[i], l.combiner, l.name));
}
