// A dense layer's element-wise work fused (lib/graph/fusions/dense_activation.ts puts these
// in place of the unfused ops): bias_activation is op(x + bias), bias [N] along x's last
// dim; matmul_bias_activation is op(matmul(a, b) + bias), the product too; activation_grad_bias
// gives the activation's gradient dz and dz summed over every dim but the last (the
// bias's gradient), and matmul_activation_grad_bias the same from the matmul that makes
// dy. Fusion comes after autodiff, so none has a gradient.
import { DYNAMIC, shapeString } from '../graph';
import { defineOp } from '../op_registry';

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

// inputs: a, b (matmul's, with its transposeA and transposeB attrs), bias [N]; attrs: op.
defineOp({
  name: 'matmul_bias_activation',
  kernel: 'matmul_bias_activation',
  noGradient: true,
  shape: ([a, b, bias], attrs, name) => {
    const [m, k1] = attrs.transposeA ? [a.shape[1], a.shape[0]] : [a.shape[0], a.shape[1]];
    const [k2, n] = attrs.transposeB ? [b.shape[1], b.shape[0]] : [b.shape[0], b.shape[1]];
    if (a.rank !== 2 || b.rank !== 2 || k1 !== k2 || bias.rank !== 1 || bias.shape[0] !== n || n === DYNAMIC) {
      throw new Error(`${name}: matmul_bias_activation takes a and b of a matmul and a bias [N], got ${shapeString(a.shape)}, ${shapeString(b.shape)} and ${shapeString(bias.shape)}`);
    }
    return [m, n];
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
    const [m, k1] = attrs.transposeA ? [a.shape[1], a.shape[0]] : [a.shape[0], a.shape[1]];
    const [k2, n] = attrs.transposeB ? [b.shape[1], b.shape[0]] : [b.shape[0], b.shape[1]];
    if (a.rank !== 2 || b.rank !== 2 || k1 !== k2 || n === DYNAMIC || v.rank !== 2 || v.shape[1] !== n) {
      throw new Error(`${name}: matmul_activation_grad_bias takes a and b of a matmul and y of the product's shape, got ${shapeString(a.shape)}, ${shapeString(b.shape)} and ${shapeString(v.shape)}`);
    }
    return [{ shape: [m, n], dtype: 'float32' }, { shape: [n], dtype: 'float32' }];
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
