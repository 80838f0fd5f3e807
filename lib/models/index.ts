// hb.models: ready-made modelFns for the Estimator (binary classifiers: PREDICT gives
// { probs }, EVAL { auc, meanProbability } and the loss, TRAIN the optimizers' ops).
export { dlrmModelFn } from './dlrm';
export type { DlrmConfig, DlrmInputsConfig } from './dlrm';
export { wideAndDeepModelFn } from './wide_and_deep';
export type { WideAndDeepConfig } from './wide_and_deep';
export { deepFMModelFn } from './deepfm';
export type { DeepFMConfig } from './deepfm';
export { dcnModelFn } from './dcn';
export type { DcnConfig } from './dcn';
export type { CategoricalInput, ModelInputs, ModelTraining } from './model_inputs';
