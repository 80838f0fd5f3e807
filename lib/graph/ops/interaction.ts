// DLRM's dot interaction: pairwise dot products of the feature vectors of each example.
import { shapeString, SymbolicTensor } from '../graph';
import { applyOp, applyOpOutputs, defineOp } from '../op_registry';

// The F feature vectors go to the kernel as F inputs of [batch, d], as the bottom MLP and
// the lookups made them: no [batch, F * d] concatenation forward and no split of its
// gradient backward (in a DLRM step those two were 28 MB written and read each way).
// With `prefix` the kernel writes the bottom MLP's output before the pairs, as DLRM's top
// MLP reads them: no concatenation of [batch, d] and the pairs, and no split of its gradient.
const dotInteractionDef = defineOp({
  name: 'dot_interaction',
  kernel: 'dot_interaction',
  shape: (inputs, attrs) => {
    const f = attrs.features as number;
    // D: the width of each of F inputs, or a single [batch, F * D] input's over F.
    const d = inputs.length === 1 ? inputs[0].shape[1] / f : inputs[0].shape[1];
    return [inputs[0].shape[0], (attrs.prefix ? d : 0) + (f * (f - 1)) / 2];
  },
  grad: (node, dy) => [
    ...applyOpOutputs(dotInteractionGradDef, [dy, ...node.inputs], { features: node.attrs.features, prefix: Boolean(node.attrs.prefix) }, `${node.name}/grad`),
  ],
});

// One gradient per feature input.
const dotInteractionGradDef = defineOp({
  name: 'dot_interaction_grad',
  kernel: 'dot_interaction_grad',
  outputs: (inputs) => inputs.slice(1).map((x) => ({ shape: x.shape, dtype: 'float32' as const })),
});

/**
 * DLRM's interaction: with the bottom MLP's output x [batch, d] and F-1 embeddings
 * [batch, d], the F(F-1)/2 dot products of distinct pairs (i > j, row by row), after x:
 * [batch, d + F(F-1)/2].
 */
export function dotInteraction(bottomMlpOut: SymbolicTensor, embeddings: SymbolicTensor[], name = 'dot_interaction'): SymbolicTensor {
  if (!Array.isArray(embeddings)) throw new TypeError(`${name}: embeddings must be a non-empty array`);
  if (embeddings.length === 0) throw new Error(`${name}: embeddings must be a non-empty array`);
  const d = bottomMlpOut.shape[1];
  [bottomMlpOut, ...embeddings].forEach((t, i) => {
    // Checked here since no concat checks the batch dimension any more.
    if (!(t instanceof SymbolicTensor) || t.rank !== 2 || t.shape[1] !== d || t.shape[0] !== bottomMlpOut.shape[0]) {
      const message = `${name}: every input must be ${shapeString(bottomMlpOut.shape)} like the bottom MLP's output; input ${i} is ${t instanceof SymbolicTensor ? shapeString(t.shape) : String(t)}`;
      throw t instanceof SymbolicTensor ? new Error(message) : new TypeError(message);
    }
  });
  return applyOp(dotInteractionDef, [bottomMlpOut, ...embeddings], { features: embeddings.length + 1, prefix: true });
}
