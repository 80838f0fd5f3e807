// hb.serving: run what was exported (estimator.exportSavedModel) in this process, or
// behind TensorFlow Serving's REST API (`hb-ts serve`).
// `load` is API.md's name; `loadModel` the and the one the docs use.
export { loadModel, loadModel as load } from './load_model';
export type { LoadModelOptions } from './load_model';
export { BadInputError } from './servable';
export { startServer } from './http_server';
export type { ServerOptions, ModelServer } from './http_server';
export type { ServableModel, ServingSignature, ServingInputSpec, ServingOutputSpec } from './servable';
export type { ExportTableDType } from './export_format';
