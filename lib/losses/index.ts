// hb.losses: TF1's tf.losses over symbolic tensors.
export { sigmoidCrossEntropy, meanSquaredError } from '../graph/ops/losses';
export type { LossOptions } from '../graph/ops/losses';
