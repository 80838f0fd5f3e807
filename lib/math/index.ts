// hb.math: TensorFlow's math ops over symbolic tensors (inside a modelFn).
export { add, subtract, multiply, divide, squaredDifference, equal, greater, neg, exp, log, square, sqrt, scale, addConstant } from '../graph/ops/elementwise';
export { matmul } from '../graph/ops/linalg';
export type { MatmulOptions } from '../graph/ops/linalg';
export { concat, reshape, reduceSum, reduceMean } from '../graph/ops/array';
