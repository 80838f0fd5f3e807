// A dense layer's element-wise work fused (lib/graph/fusions/dense_activation.ts puts these
// in place of the unfused ops): bias_activation is op(x + bias), bias [N] along x's last
// dim; activation_grad_bias gives the activation's gradient dz and dz summed over every dim
// but the last (the bias's gradient). Fusion comes after autodiff, so neither has a gradient.
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
