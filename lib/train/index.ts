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
export { MonitoredTrainingSession, MonitoredSession, StopAtStepHook, inputs } from './monitored_session';
export type { MonitoredTrainingSessionOptions, SessionRunHook, SessionRunContext, SymbolicInputs, Fetches, FetchedValue } from './monitored_session';
