// HybridBackend's embSegmentRank: with ids of rank R (batch, segment levels..., values),
// the combiner reduces each (example, segment, ...) prefix of length rank + 1 instead
// of each example, so the lookup gives prod(shape[0..rank]) rows. Segments missing in
// an example give empty rows (zeros), as HB's padded segment reduction does.
import { FeatureInput, Features } from './feature_input';

function depthOf(value: unknown): number {
  let depth = 0;
  let level: unknown[] = [value];
  while (level.length > 0 && level.every((v) => Array.isArray(v))) {
    depth++;
    level = (level as unknown[][]).flat();
  }
  return depth;
}

/** Each dimension's extent over the nested rows (TF's dense_shape of the ids). */
function extents(rows: unknown[], levels: number): number[] {
  const out: number[] = [rows.length];
  let level: unknown[] = rows;
  for (let l = 1; l <= levels; l++) {
    let extent = 0;
    for (const v of level) extent = Math.max(extent, (v as unknown[]).length);
    out.push(extent);
    level = (level as unknown[][]).flat();
  }
  return out;
}

function flattenToBags(rows: unknown[], shape: number[], rank: number): unknown[][] {
  const bags: unknown[][] = [];
  const walk = (node: unknown[] | undefined, level: number): void => {
    if (level === rank + 1) {
      bags.push(node === undefined ? [] : (node as unknown[]).flat(Infinity));
      return;
    }
    for (let i = 0; i < shape[level]; i++) walk(node === undefined ? undefined : (node[i] as unknown[] | undefined), level + 1);
  };
  walk(rows, 0);
  return bags;
}

/** The features with each of `keys` regrouped into bags of the segment rank. */
export function segmentFeatures(features: Features, keys: readonly string[], rank: number, column: string): Features {
  const out: Record<string, FeatureInput> = { ...features };
  let rows = -1;
  for (const key of keys) {
    const input = features[key];
    if (!Array.isArray(input)) {
      throw new TypeError(`feature column '${column}': embSegmentRank ${rank} needs feature '${key}' as nested arrays (example, segments..., values)`);
    }
    const depth = depthOf(input);
    if (rank > depth - 2) {
      throw new RangeError(`feature column '${column}': invalid embSegmentRank ${rank} for feature '${key}' of rank ${depth}; it must be within [0, ${depth - 1})`);
    }
    const shape = extents(input as unknown[], rank);
    const bags = flattenToBags(input as unknown[], shape, rank);
    if (rows >= 0 && bags.length !== rows) throw new RangeError(`feature column '${column}': features ${keys.join(', ')} have different segment shapes`);
    rows = bags.length;
    out[key] = bags as FeatureInput;
  }
  return out;
}
