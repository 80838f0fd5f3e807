// Where values enter a graph: variables, constants and per-step feeds.
import { tensor, Tensor } from '../../tensor/tensor';
import { Feed, Graph, Shape, shapeString, SymbolicTensor } from '../graph';
import { defineOp } from '../op_registry';

defineOp({
  name: 'variable',
  shape: () => {
    throw new Error('variables are added with Graph.variableTensor');
  },
  lower: (node, ctx) => {
    const v = node.output!.graph.variableOf.get(node.id);
    if (!v) throw new Error(`${node.name}: no variable behind this node`);
    ctx.value(node.output!);
  },
});

defineOp({
  name: 'constant',
  shape: (_inputs, attrs) => attrs.shape as number[],
  lower: (node, ctx) => ctx.value(node.output!),
});

/** A float32 constant kept in native memory for the plan's life. */
export function constant(graph: Graph, values: Float32Array | number[], shape: number[], name?: string): SymbolicTensor {
  const array = values instanceof Float32Array ? values : Float32Array.from(values);
  const t: Tensor = tensor(new Float32Array(array), shape, undefined, { device: graph.device });
  return graph.addNode('constant', [], { tensor: t, shape }, shape, name ?? graph.uniqueName('constant')).output as SymbolicTensor;
}

defineOp({
  name: 'placeholder',
  shape: (_inputs, attrs) => attrs.shape as number[],
  lower: (node, ctx) => ctx.value(node.output!),
});

/** A dense float32 input built from each raw batch by `feed.build`. */
export function placeholder(graph: Graph, shape: Shape, feed: Omit<Feed, 'kind'>, name?: string): SymbolicTensor {
  if (shape[0] !== -1 || shape.slice(1).some((d) => !Number.isInteger(d) || d < 0)) {
    throw new Error(`placeholder '${feed.name}': shape ${shapeString(shape)} must be [batch, ...fixed]`);
  }
  const index = graph.addFeed({ ...feed, kind: 'dense' });
  return graph.addNode('placeholder', [], { feed: index, shape: [...shape] }, shape, name ?? graph.uniqueName(feed.name)).output as SymbolicTensor;
}
