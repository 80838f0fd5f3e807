// A dense layer's element-wise work fused each way (lib/layers' dense builds
// act(matmul(x, W) + b)): the product, bias add and activation become
// matmul_bias_activation where nothing else reads the product (else the bias add and
// activation become bias_activation), and in the backward the activation's gradient and
// the bias's gradient (its sum over the batch) become activation_grad_bias, with the
// matmul that makes the activation's gradient (the layer above's dX) where nothing else
// reads it: matmul_activation_grad_bias. Same bits as the unfused kernels. On the CPU the
// bias and activation (or the activation's gradient) go over each piece of the product as
// the GEMM finishes it, while it is in cache (bias_activation read the product back from
// memory: 1.9 ms of a DLRM step at batch 4096), the sum x W + b is never written out, and
// the bias's gradient is summed while the gradient rows are in cache.
import '../ops/dense_activation';
import { defineFusion, FusionContext } from '../fusion';
import { DYNAMIC, Node, SymbolicTensor } from '../graph';
import { sameShape } from '../ops/shapes';

// The activations whose gradient reads their output, not the sum: once fused, nothing
// else needs x W + b.
const ACTIVATIONS = ['relu', 'sigmoid', 'tanh'];

/**
 * [full, bias] when `t` is full + bias with bias [N] along full's last dim, in that order
 * (as dense layers add them: with both operands NaN, x86 keeps the first one's payload).
 */
function biasAdd(t: SymbolicTensor, ctx: FusionContext): [SymbolicTensor, SymbolicTensor] | undefined {
  const add = ctx.producer(t);
  if (add.op !== 'add') return undefined;
  const [full, bias] = add.inputs.map((x) => ctx.resolve(x));
  const n = full.shape[full.rank - 1];
  if (full.rank >= 1 && n !== DYNAMIC && sameShape(full.shape, t.shape) && bias.rank === 1 && bias.shape[0] === n &&
      full.dtype === 'float32' && bias.dtype === 'float32') {
    return [full, bias];
  }
  return undefined;
}

/**
 * [full, bias] of the bias add that `activation`'s input is, when only the activation
 * reads that sum: a sum read elsewhere too (or fetched) would be computed twice.
 */
function activatedBiasAdd(activation: Node, ctx: FusionContext): [SymbolicTensor, SymbolicTensor] | undefined {
  const sum = ctx.resolve(activation.inputs[0]);
  const operands = biasAdd(sum, ctx);
  return operands && ctx.readers(sum).length === 1 && !ctx.fetched(sum) ? operands : undefined;
}

/**
 * The operands and transposes of the matmul that makes `t`, when `t` is rank 2, read by one
 * node only (the one being fused) and not fetched: a fused kernel can take the product over.
 */
function exclusiveProduct(t: SymbolicTensor, ctx: FusionContext) {
  const product = ctx.producer(t);
  if (product.op !== 'matmul' || t.rank !== 2 || ctx.readers(t).length !== 1 || ctx.fetched(t)) return undefined;
  const [a, b] = product.inputs.map((x) => ctx.resolve(x));
  return { a, b, transposeA: Boolean(product.attrs.transposeA), transposeB: Boolean(product.attrs.transposeB) };
}

for (const activation of ACTIVATIONS) {
  const output = (node: Node) => [{ shape: node.output!.shape, dtype: 'float32' as const }];
  // Tried first: a product only the bias add reads.
  defineFusion({
    name: `matmul_bias_${activation}`,
    root: activation,
    fuse(node, ctx) {
      const operands = activatedBiasAdd(node, ctx);
      const product = operands && exclusiveProduct(operands[0], ctx);
      if (!operands || !product) return undefined;
      const { a, b, transposeA, transposeB } = product;
      return ctx.graph.addNode('matmul_bias_activation', [a, b, operands[1]], { transposeA, transposeB, op: activation }, output(node), node.name);
    },
  });
  defineFusion({
    name: `bias_${activation}`,
    root: activation,
    fuse(node, ctx) {
      const operands = activatedBiasAdd(node, ctx);
      return operands && ctx.graph.addNode('bias_activation', operands, { op: activation }, output(node), node.name);
    },
  });
}

/** The bias's gradient read from dz: dz summed to [N] (reduce_to_shape from the add's gradient). */
function biasGradient(node: Node, ctx: FusionContext): { dz: SymbolicTensor; n: number; sum: Node } | undefined {
  const dz = node.output!;
  const n = dz.shape[dz.rank - 1];
  if (dz.rank < 1 || n === DYNAMIC || dz.dtype !== 'float32') return undefined;
  const sum = ctx.readers(dz).find((r) =>
    r.op === 'reduce_to_shape' && ctx.resolve(r.inputs[0]) === dz && r.attrs.scale === 1 && sameShape(r.output!.shape, [n]));
  return sum && { dz, n, sum };
}

// Tried first: dy made by a matmul (the layer above's dX) that nothing else reads.
defineFusion({
  name: 'matmul_activation_grad_bias',
  root: 'unary_grad',
  fuse(node, ctx) {
    const grad = biasGradient(node, ctx);
    const product = grad && exclusiveProduct(ctx.resolve(node.inputs[0]), ctx);
    if (!grad || !product) return undefined;
    const { a, b, transposeA, transposeB } = product;
    const fused = ctx.graph.addNode('matmul_activation_grad_bias', [a, b, ctx.resolve(node.inputs[1])], { transposeA, transposeB, op: node.attrs.op },
      [{ shape: grad.dz.shape, dtype: 'float32' }, { shape: [grad.n], dtype: 'float32' }], node.name);
    ctx.replace(grad.sum.output!, fused.outputs[1]);
    return fused;
  },
});

defineFusion({
  name: 'activation_grad_bias',
  root: 'unary_grad',
  fuse(node, ctx) {
    const grad = biasGradient(node, ctx);
    if (!grad) return undefined;
    const fused = ctx.graph.addNode('activation_grad_bias', node.inputs.map((t) => ctx.resolve(t)), { op: node.attrs.op },
      [{ shape: grad.dz.shape, dtype: 'float32' }, { shape: [grad.n], dtype: 'float32' }], node.name);
    ctx.replace(grad.sum.output!, fused.outputs[1]);
    return fused;
  },
});
