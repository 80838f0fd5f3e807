// import * as hb from 'hb-ts'
export { backend, setDevice, currentDevice } from './backend';
export type { DeviceSpec } from './backend';
export type { BackendReport, DType, TypedArray } from './native';
export { Tensor, tensor } from './tensor/tensor';
export type { TensorLike, TensorOptions } from './tensor/tensor';
export { Ragged, ragged } from './tensor/ragged';
export { Variable, variable } from './tensor/variable';
export type { VariableOptions, VariableInitialValue } from './tensor/variable';
export * as nn from './nn';
export * as initializers from './initializers';
export { unique } from './tensor/unique';
export type { UniqueResult } from './tensor/unique';
export { IndexedSlices } from './tensor/indexed_slices';
export * as train from './train';
export * as strings from './strings';
export * as distribute from './distribute';
export { StringColumn } from './tensor/string_column';
