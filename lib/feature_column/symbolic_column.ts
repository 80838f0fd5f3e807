// A dense column inside a modelFn: an embedding column becomes a ragged feed of its ids
// plus a lookup node on its table; any other dense column a [batch, dimension] feed of
// the values it computes from each raw batch (its transform, run natively per step).
import { BATCH, Graph, SymbolicTensor } from '../graph/graph';
import { placeholder } from '../graph/ops/sources';
import { raggedFeed } from '../graph/ragged_feed';
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

export function symbolicColumn(column: DenseColumn, source: SymbolicFeatureSource): SymbolicTensor {
  const graph: Graph = source.graph;
  if (column instanceof LookupColumn) {
    if (column.options.embSegmentRank !== 0) {
      throw new Error(`feature column '${column.name}': embSegmentRank inside a modelFn is not supported yet (it is in eager DenseFeatures)`);
    }
    const example = column.lookupIds(source.example.features as Features);
    const ids = raggedFeed(graph, column.name, (b) => column.lookupIds(b.features as Features), example);
    // In host memory (embDevice: 'cpu') or on the graph's device; the plan moves lookup
    // outputs and gradients between them.
    try {
      return column.embeddingTable.lookupGraph(graph, ids, { combiner: column.combiner, maxNorm: column.maxNorm, name: column.name, wire: column.options.embWireDtype });
    } catch (error) {
      if (error instanceof Error) error.message = `feature column '${column.name}': ${error.message}`;
      throw error;
    }
  }
  return placeholder(graph, {
    name: column.name,
    dtype: 'float32',
    shape: [BATCH, column.dimension],
    build: async (b) => (await column.denseValues(await readFeatures(b.features as Features))).values,
  }, column.name);
}
