// A dense layer's element-wise work fused (lib/graph/fusions/dense_activation.ts puts these
// in place of the unfused ops): bias_activation is op(x + bias), bias [N] along x's last
// dim; matmul_bias_activation is op(matmul(a, b) + bias), the product too; activation_grad_bias
// gives the activation's gradient dz and dz summed over every dim but the last (the
// bias's gradient), and matmul_activation_grad_bias the same from the matmul that makes
// dy. Fusion comes after autodiff, so none has a gradient.
import { DYNAMIC, shapeString, SymbolicTensor } from '../graph';
import { defineOp } from '../op_registry';
import { productShape } from './linalg';

// inputs: x [..., N], bias [N]; attrs: op (the activation: relu, sigmoid or tanh).
defineOp({
  name: 'bias_activation',
  kernel: 'bias_activation',
  noGradient: true,
  shape: ([x, bias], _attrs, name) => {
    const n = x.shape[x.rank - 1];
    if (x.rank < 1 || n === DYNAMIC || bias.rank !== 1 || bias.shape[0] !== n) {
      throw new Error(`${name}: bias_activation takes x [..., N] and a bias [N], got ${shapeString(x.shape)} and ${shapeString(bias.shape)}`);
    }
    return x.shape;
  },
});

/** The product's [M, N] of a kernel that fuses a matmul, or an Error naming the node. */
function fusedProductShape(a: SymbolicTensor, b: SymbolicTensor, attrs: Record<string, unknown>, name: string, op: string): [number, number] {
  const shape = productShape(a, b, attrs);
  if (typeof shape === 'string') throw new Error(`${name}: ${op}: its product ${shape}`);
  return shape;
}

// inputs: a, b (matmul's, with its transposeA and transposeB attrs), bias [N]; attrs: op.
defineOp({
  name: 'matmul_bias_activation',
  kernel: 'matmul_bias_activation',
  noGradient: true,
  shape: ([a, b, bias], attrs, name) => {
    const shape = fusedProductShape(a, b, attrs, name, 'matmul_bias_activation');
    if (bias.rank !== 1 || bias.shape[0] !== shape[1] || shape[1] === DYNAMIC) {
      throw new Error(`${name}: matmul_bias_activation takes a bias [${shape[1]}], got ${shapeString(bias.shape)}`);
    }
    return shape;
  },
});

// inputs: a, b (the matmul that makes dy, with its transposeA and transposeB attrs), and the
// activation's output y (its input x for log and square); attrs also op. Outputs as
// activation_grad_bias's.
defineOp({
  name: 'matmul_activation_grad_bias',
  kernel: 'matmul_activation_grad_bias',
  noGradient: true,
  outputs: ([a, b, v], attrs, name) => {
    const shape = fusedProductShape(a, b, attrs, name, 'matmul_activation_grad_bias');
    if (v.rank !== 2 || v.shape[1] !== shape[1] || shape[1] === DYNAMIC) {
      throw new Error(`${name}: matmul_activation_grad_bias takes y of the product's shape [${shape.join(', ')}], got ${shapeString(v.shape)}`);
    }
    return [{ shape, dtype: 'float32' }, { shape: [shape[1]], dtype: 'float32' }];
  },
});

// inputs: dy, and the activation's output y (its input x for log and square); attrs: op.
defineOp({
  name: 'activation_grad_bias',
  kernel: 'activation_grad_bias',
  noGradient: true,
  outputs: ([dy, v], _attrs, name) => {
    const n = dy.shape[dy.rank - 1];
    if (dy.rank < 1 || n === DYNAMIC || shapeString(dy.shape) !== shapeString(v.shape)) {
      throw new Error(`${name}: activation_grad_bias takes dy [..., N] and y of its shape, got ${shapeString(dy.shape)} and ${shapeString(v.shape)}`);
    }
    return [{ shape: dy.shape, dtype: 'float32' }, { shape: [n], dtype: 'float32' }];
  },
});
