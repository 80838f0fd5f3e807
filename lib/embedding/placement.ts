// Where an embedding table's rows live. 'local': every row in this process (one worker,
// or a table the planner keeps whole). 'sharded' and 'replicated' are HybridBackend's
// placements across workers: a sharded table's id x lives on rank x floormod W at local
// row x floordiv W; a replicated one is whole on every rank, its gradients gathered from
// every rank. lib/distribute/sharding_planner.ts decides which.
import { shownValue } from '../shown_value';

export type PlacementKind = 'local' | 'sharded' | 'replicated';

export interface TablePlacement {
  kind: PlacementKind;
  /** '' = the model's device (decided when the table is made); 'cpu' keeps the rows in host memory. */
  device: string;
  /** Workers the table is spread over (1 unless sharded). */
  worldSize: number;
  /** This worker's rank. */
  rank: number;
}

export function localPlacement(device: string): TablePlacement {
  return { kind: 'local', device, worldSize: 1, rank: 0 };
}

/** The worker that owns id `id` of a table sharded over `worldSize` workers (floormod, as HybridBackend). */
export function ownerOf(id: bigint, worldSize: number): number {
  const w = BigInt(worldSize);
  return Number(((id % w) + w) % w);
}

/**
 * How many rows of a `rows`-row table rank `rank` holds when sharded over `worldSize`
 * workers: rows floordiv W, and one more on the first rows mod W ranks.
 */
export function shardRows(rows: number, worldSize: number, rank: number): number {
  if (!Number.isSafeInteger(worldSize) || worldSize < 1) {
    const message = `shardRows: worldSize must be an integer >= 1, got ${shownValue(worldSize)}`;
    throw typeof worldSize === 'number' ? new RangeError(message) : new TypeError(message);
  }
  if (!Number.isSafeInteger(rank) || rank < 0 || rank >= worldSize) {
    const message = `shardRows: rank must be in [0, ${worldSize}), got ${shownValue(rank)}`;
    throw typeof rank === 'number' ? new RangeError(message) : new TypeError(message);
  }
  return Math.floor(rows / worldSize) + (rank < rows % worldSize ? 1 : 0);
}
