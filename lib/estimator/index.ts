// hb.estimator: TensorFlow's Estimator API over compiled native steps.
export { Estimator } from './estimator';
export type { EstimatorInit, ModelFn, EvaluateResult } from './estimator';
export type { ModelFeatures, ModelLabels } from './model_builder';
export { EstimatorSpec } from './estimator_spec';
export type { EstimatorSpecInit } from './estimator_spec';
export { ModeKeys } from './mode_keys';
export type { Mode } from './mode_keys';
export { RunConfig } from './run_config';
export type { RunConfigInit } from './run_config';
export { TrainSpec, EvalSpec } from './specs';
export type { TrainHook, StepInfo } from './specs';
export { trainAndEvaluate } from './train_and_evaluate';
export type { InputFn, Batch } from './input';
export { saveCheckpoint, loadCheckpoint, loadLatestCheckpoint, listCheckpoints } from '../io/checkpoint_file';
export { readCheckpoint } from './read_checkpoint';
export type { LoadedModelCheckpoint } from './read_checkpoint';
