// Where each embedding table goes in a job of several ranks, by HybridBackend's rules:
// sharded over the ranks (id x on rank x floormod W) unless embSharded is false or the
// table is small (v1.0: numBuckets <= worldSize, or <= the batchSize hint of hb.scope),
// in which case every rank holds it whole and its gradients are gathered from all ranks.
// A world of one keeps every table local.
import type { TablePlacement } from '../embedding/placement';

export interface PlacementRequest {
  /** The table's rows (numBuckets). */
  rows: number;
  /** '' = the model's device; 'cpu' keeps the rows in host memory. */
  device: string;
  embSharded: boolean;
  /** hb.scope's batchSize hint, if given. */
  batchSize?: number;
}

export function planTablePlacement(request: PlacementRequest, world: { size: number; rank: number }): TablePlacement {
  const { size, rank } = world;
  const { device } = request;
  if (size <= 1) return { kind: 'local', device, worldSize: 1, rank: 0 };
  const small = request.rows <= size || (request.batchSize !== undefined && request.rows <= request.batchSize);
  if (!request.embSharded || small) return { kind: 'replicated', device, worldSize: size, rank };
  return { kind: 'sharded', device, worldSize: size, rank };
}
