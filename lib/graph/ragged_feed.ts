// A ragged per-step input (ids, row splits, optional weights) as three placeholders
// built from one transform of each raw batch (a feature column's ids).
import type { Batch } from '../data/batch';
import { Ragged } from '../tensor/ragged';
import { DYNAMIC, Graph, SymbolicTensor } from './graph';
import { placeholder } from './ops/sources';

export interface SymbolicRagged {
  /** [?] int64 or int32 ids. */
  ids: SymbolicTensor;
  /** [?] int32: batch + 1 offsets into ids. */
  rowSplits: SymbolicTensor;
  /** [?] float32, one per id. */
  weights?: SymbolicTensor;
}

/**
 * `transform(batch)` fed as a ragged value. `example` (the first batch's) fixes whether
 * there are weights and the ids' dtype for the graph's life.
 */
export function raggedFeed(graph: Graph, name: string, transform: (batch: Batch) => Ragged, example: Ragged, column?: unknown): SymbolicRagged {
  // One transform per step feeds all three arrays.
  let cache: { batch: Batch; ragged: Ragged } | undefined;
  const ragged = (batch: Batch): Ragged => {
    if (cache?.batch !== batch) cache = { batch, ragged: transform(batch) };
    return cache.ragged;
  };
  const idsDtype = example.values instanceof Int32Array ? 'int32' : 'int64';
  // `column` (a lookup column) makes the feeds exportable: each part's recipe names it.
  const recipe = (part: 'ids' | 'row_splits' | 'weights') => (column === undefined ? {} : { recipe: { kind: 'column_ids' as const, part, column } });
  const ids = placeholder(graph, { name, dtype: idsDtype, shape: [DYNAMIC], build: (b) => ragged(b).values, ...recipe('ids') }, `${name}/ids`);
  const rowSplits = placeholder(graph, { name, dtype: 'int32', shape: [DYNAMIC], build: (b) => ragged(b).rowSplits, empty: () => Int32Array.of(0), ...recipe('row_splits') }, `${name}/row_splits`);
  if (example.weights === undefined) return { ids, rowSplits };
  const weights = placeholder(
    graph,
    {
      name,
      dtype: 'float32',
      shape: [DYNAMIC],
      build: (b) => {
        const w = ragged(b).weights;
        if (!w) throw new Error(`feature column '${name}': this batch has no weights, but the first one had`);
        return w;
      },
      ...recipe('weights'),
    },
    `${name}/weights`,
  );
  return { ids, rowSplits, weights };
}
