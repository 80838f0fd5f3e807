// matmul and its gradient (the four transpose cases).
import { shapeString, SymbolicTensor } from '../graph';
import { applyOp, defineOp } from '../op_registry';

export interface MatmulOptions {
  transposeA?: boolean;
  transposeB?: boolean;
  name?: string;
}

/**
 * [M, N] of op(a) * op(b) (the transposes from a matmul's attrs), or why not: the kernels
 * that fuse a matmul (lib/graph/ops/dense_activation.ts) shape their products so too.
 */
export function productShape(a: SymbolicTensor, b: SymbolicTensor, attrs: Record<string, unknown>): [number, number] | string {
  if (a.rank !== 2 || b.rank !== 2) return `takes rank-2 tensors, got ${shapeString(a.shape)} and ${shapeString(b.shape)}`;
  const [m, k1] = attrs.transposeA ? [a.shape[1], a.shape[0]] : [a.shape[0], a.shape[1]];
  const [k2, n] = attrs.transposeB ? [b.shape[1], b.shape[0]] : [b.shape[0], b.shape[1]];
  if (k1 !== k2) return `inner dimensions differ: ${shapeString(a.shape)}${attrs.transposeA ? '^T' : ''} x ${shapeString(b.shape)}${attrs.transposeB ? '^T' : ''}`;
  return [m, n];
}

const matmulDef = defineOp({
  name: 'matmul',
  kernel: 'matmul',
  shape: ([a, b], attrs, name) => {
    const shape = productShape(a, b, attrs);
    if (typeof shape === 'string') throw new Error(`${name}: ${shape.startsWith('takes') ? 'matmul ' : ''}${shape}`);
    return shape;
  },
  grad: (node, dy) => {
    const [a, b] = node.inputs;
    const ta = Boolean(node.attrs.transposeA);
    const tb = Boolean(node.attrs.transposeB);
    if (!ta && !tb) return [matmul(dy, b, { transposeB: true }), matmul(a, dy, { transposeA: true })];
    if (ta && !tb) return [matmul(b, dy, { transposeB: true }), matmul(a, dy)];
    if (!ta && tb) return [matmul(dy, b), matmul(dy, a, { transposeA: true })];
    return [matmul(b, dy, { transposeA: true, transposeB: true }), matmul(dy, a, { transposeA: true, transposeB: true })];
  },
});

export function matmul(a: SymbolicTensor, b: SymbolicTensor, options: MatmulOptions = {}): SymbolicTensor {
  return applyOp(matmulDef, [a, b], { transposeA: Boolean(options.transposeA), transposeB: Boolean(options.transposeB) }, options.name);
}
