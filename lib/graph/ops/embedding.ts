// The embedding lookup inside a graph: a ragged feed of ids combined per example from
// a table. Its gradient is sparse (rows seen only): autodiff hands it to the optimizer,
// which lowers it to one fused backward + sparse update step per table.
import { Ragged } from '../../tensor/ragged';
import { Variable } from '../../tensor/variable';
import { Graph, RawBatch, SymbolicTensor } from '../graph';
import { defineOp } from '../op_registry';

const COMBINERS = { sum: 0, mean: 1, sqrtn: 2 } as const;
export type GraphCombiner = keyof typeof COMBINERS;

export interface RaggedFeedIndices {
  ids: number;
  rowSplits: number;
  weights: number; // -1: none
}

defineOp({
  name: 'embedding_lookup',
  shape: ([table]) => [-1, table.shape[1]],
  lower: (node, ctx) => {
    const feeds = node.attrs.feeds as RaggedFeedIndices;
    const table = node.output!.graph.variableOf.get(node.inputs[0].node.id) as Variable;
    ctx.step({
      kind: 'lookup',
      name: node.name,
      table: ctx.param(table),
      ids: feeds.ids,
      rowSplits: feeds.rowSplits,
      weights: feeds.weights,
      output: ctx.produced(node.output!),
      combiner: COMBINERS[node.attrs.combiner as GraphCombiner],
      maxNorm: (node.attrs.maxNorm as number) ?? 0,
    });
  },
});

/**
 * Adds the ragged feed `transform(batch)` and a lookup of it in `table`: [batch, dim].
 * `weighted` says whether the ragged ids carry weights (fixed for the graph's life).
 */
export function embeddingLookupNode(
  graph: Graph,
  table: Variable,
  transform: (batch: RawBatch) => Ragged,
  options: { name: string; combiner: GraphCombiner; maxNorm?: number; weighted: boolean },
): SymbolicTensor {
  if (!(options.combiner in COMBINERS)) throw new TypeError(`${options.name}: combiner must be 'sum', 'mean' or 'sqrtn'`);
  // One transform per step feeds all three arrays.
  let cache: { batch: RawBatch; ragged: Ragged } | undefined;
  const ragged = (batch: RawBatch): Ragged => {
    if (cache?.batch !== batch) cache = { batch, ragged: transform(batch) };
    return cache.ragged;
  };
  const feeds: RaggedFeedIndices = {
    ids: graph.addFeed({ name: options.name, kind: 'ids', build: (b) => ragged(b).values }),
    rowSplits: graph.addFeed({ name: options.name, kind: 'rowSplits', build: (b) => ragged(b).rowSplits }),
    weights: -1,
  };
  if (options.weighted) {
    feeds.weights = graph.addFeed({
      name: options.name,
      kind: 'weights',
      build: (b) => {
        const w = ragged(b).weights;
        if (!w) throw new Error(`feature column '${options.name}': this batch has no weights, but the first one had`);
        return w;
      },
    });
  }
  const tableTensor = graph.variableTensor(table);
  return graph.addNode('embedding_lookup', [tableTensor], { feeds, combiner: options.combiner, maxNorm: options.maxNorm ?? 0 }, [-1, table.shape[1]], options.name)
    .output as SymbolicTensor;
}
