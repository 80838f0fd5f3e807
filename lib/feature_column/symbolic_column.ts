// A dense column inside a modelFn: an embedding column becomes a ragged feed of its ids
// plus a lookup node on its table; any other dense column a [batch, dimension] feed of
// the values it computes from each raw batch (its transform, run natively per step).
import { Graph, SymbolicTensor } from '../graph/graph';
import { embeddingLookupNode } from '../graph/ops/embedding';
import { placeholder } from '../graph/ops/sources';
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
    const table = graph.store.adopt(column.tableName, () => column.variable);
    // In host memory (embDevice: 'cpu') or on the graph's device; the plan moves lookup
    // outputs and gradients between them.
    if (table.device !== 'cpu' && table.device !== graph.device) {
      throw new Error(`feature column '${column.name}': its table is on ${table.device} but the model runs on ${graph.device}; use embDevice: 'cpu' or '${graph.device}'`);
    }
    const example = column.lookupIds(source.example.features as Features);
    return embeddingLookupNode(graph, table, (b) => column.lookupIds(b.features as Features), {
      name: column.name,
      combiner: column.combiner,
      maxNorm: column.maxNorm,
      weighted: example.weights !== undefined,
    });
  }
  return placeholder(graph, [-1, column.dimension], {
    name: column.name,
    build: async (b) => (await column.denseValues(await readFeatures(b.features as Features))).values,
  }, column.name);
}
