// hb.models: ready-made modelFns for the Estimator.
export { dlrmModelFn } from './dlrm';
export type { DlrmConfig } from './dlrm';
