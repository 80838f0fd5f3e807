// A dense column inside a modelFn: an embedding column becomes a ragged feed of its ids
// plus a lookup node on its table; any other dense column a [batch, dimension] feed of
// the values it computes from each raw batch (its transform, run natively per step).
// Under a job, the lookups of sharded tables are coalesced in groups (embNumGroups):
// one exchange of ids and one of rows per group.
import { DynamicEmbeddingTable } from '../embedding/dynamic_table';
import { coalescedShardedLookup } from '../embedding/coalesced_lookup';
import { BATCH, Graph, SymbolicTensor } from '../graph/graph';
import { placeholder } from '../graph/ops/sources';
import { raggedFeed, SymbolicRagged } from '../graph/ragged_feed';
import { SymbolicFeatureSource } from '../graph/symbolic_features';
import { DenseColumn } from './column';
import { LookupColumn } from './embedding';
import { Features, readTensorFeatures } from './feature_input';

// Tensor features read once per batch, however many dense columns use them.
const readOnce = new WeakMap<object, Promise<Features>>();
function readFeatures(features: Features): Promise<Features> {
  let read = readOnce.get(features);
  if (!read) {
    read = readTensorFeatures(features);
    readOnce.set(features, read);
  }
  return read;
}

/** A lookup column's ids, fed from each raw batch (its transform, natively). */
function idsFeed(column: LookupColumn, source: SymbolicFeatureSource): SymbolicRagged {
  if (column.options.embSegmentRank !== 0) {
    throw new Error(`feature column '${column.name}': embSegmentRank inside a modelFn is not supported yet (it is in eager DenseFeatures)`);
  }
  const example = column.lookupIds(source.example.features as Features);
  return raggedFeed(source.graph, column.name, (b) => column.lookupIds(b.features as Features), example, column);
}

function namingColumn<T>(column: DenseColumn, make: () => T): T {
  try {
    return make();
  } catch (error) {
    if (error instanceof Error) error.message = `feature column '${column.name}': ${error.message}`;
    throw error;
  }
}

/**
 * Each column's [batch, dimension] tensor, in order. The sharded lookups are coalesced
 * into `numGroups` groups of columns next to each other in order (split further by wire
 * dtype, which a group shares); a group of one is a lookup of its own.
 */
export function symbolicColumns(columns: readonly DenseColumn[], source: SymbolicFeatureSource, numGroups: number): SymbolicTensor[] {
  const graph = source.graph;
  // Dynamic tables look up on their own (their owners find rows by id, not by row).
  const sharded = columns.filter((c): c is LookupColumn => c instanceof LookupColumn && c.embeddingTable.isSharded && !(c.embeddingTable instanceof DynamicEmbeddingTable));
  const out = new Map<DenseColumn, SymbolicTensor>();
  const groups = Math.min(numGroups, sharded.length);
  for (let g = 0; g < groups; g++) {
    const chunk = sharded.slice(Math.floor((g * sharded.length) / groups), Math.floor(((g + 1) * sharded.length) / groups));
    for (const wire of [...new Set(chunk.map((c) => c.options.embWireDtype))]) {
      const group = chunk.filter((c) => c.options.embWireDtype === wire);
      if (group.length === 1) continue;
      const lookups = group.map((c) =>
        namingColumn(c, () => ({
          shard: c.embeddingTable.graphVariable(graph),
          ids: idsFeed(c, source),
          combiner: c.combiner,
          maxNorm: c.maxNorm,
          name: c.name,
          rows: c.embeddingTable.spec.rows,
          dim: c.dimension,
        })),
      );
      const { worldSize, rank } = group[0].embeddingTable.placement;
      const results = coalescedShardedLookup(lookups, { worldSize, rank, wire, name: `embedding_group_${g}${wire === 'float32' ? '' : `_${wire}`}` });
      group.forEach((c, i) => out.set(c, results[i]));
    }
  }
  return columns.map((c) => out.get(c) ?? symbolicColumn(c, source));
}

export function symbolicColumn(column: DenseColumn, source: SymbolicFeatureSource): SymbolicTensor {
  const graph: Graph = source.graph;
  if (column instanceof LookupColumn) {
    const ids = idsFeed(column, source);
    // In host memory (embDevice: 'cpu') or on the graph's device; the plan moves lookup
    // outputs and gradients between them.
    return namingColumn(column, () =>
      column.embeddingTable.lookupGraph(graph, ids, { combiner: column.combiner, maxNorm: column.maxNorm, name: column.name, wire: column.options.embWireDtype }),
    );
  }
  return placeholder(graph, {
    name: column.name,
    dtype: 'float32',
    shape: [BATCH, column.dimension],
    build: async (b) => (await column.denseValues(await readFeatures(b.features as Features))).values,
    recipe: { kind: 'column_dense', column },
  }, column.name);
}
