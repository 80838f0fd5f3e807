export { Optimizer } from './optimizer';
export type { GradientAndVariable } from './optimizer';
export {
  GradientDescentOptimizer,
  MomentumOptimizer,
  AdagradOptimizer,
  AdamOptimizer,
  FtrlOptimizer,
  RowwiseAdagradOptimizer,
} from './optimizers';
export { TrainOp, GlobalStep, getOrCreateGlobalStep, trainableVariables } from './train_op';
