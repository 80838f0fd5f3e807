// numeric_column: float32 values, prod(shape) per example, optionally normalized.
import { checkKey, DenseColumn } from './column';
import { DenseBlock, FeatureInput, Features, featureOf, numericValuesOf } from './feature_input';
import { shownValue } from '../shown_value';
import { checkOptionKeys } from '../option_keys';

/** Takes the batch's [rows, n] values (row-major) and returns as many. */
export type NormalizerFn = (values: Float32Array) => Float32Array | ArrayLike<number>;

export interface NumericColumnOptions {
  shape?: number[];
  /** Fills missing values (null / undefined in plain arrays); a number or one per element. */
  defaultValue?: number | number[];
  normalizerFn?: NormalizerFn;
  /** float32 only; kept for TF's signature. */
  dtype?: 'float32';
}

export class NumericColumn implements DenseColumn {
  readonly keys: readonly string[];
  readonly dimension: number;
  constructor(
    readonly key: string,
    readonly shape: readonly number[],
    readonly defaultValue: readonly number[] | undefined,
    readonly normalizerFn: NormalizerFn | undefined,
  ) {
    this.keys = [key];
    this.dimension = shape.reduce((a, b) => a * b, 1);
  }

  get name(): string {
    return this.key;
  }

  /** The column's [rows, dimension] float32 values after normalizerFn. */
  transform(features: Features): Float32Array {
    return this.valuesOf(featureOf(features, this.key, this.name));
  }

  /** @internal */
  valuesOf(input: FeatureInput | DenseBlock): Float32Array {
    const values = numericValuesOf(input, this.dimension, this.name, this.key, this.defaultValue);
    if (this.normalizerFn === undefined) return values;
    const normalized = this.normalizerFn(values);
    if (normalized === null || typeof normalized !== 'object' || normalized.length !== values.length) {
      const message = `feature column '${this.name}': normalizerFn must return ${values.length} numbers`;
      throw normalized !== null && typeof normalized === 'object' ? new Error(message) : new TypeError(message);
    }
    return normalized instanceof Float32Array ? normalized : Float32Array.from(normalized);
  }

  async denseValues(features: Features): Promise<{ values: Float32Array; rows: number }> {
    const values = this.transform(features);
    return { values, rows: values.length / this.dimension };
  }
}

export function numericColumn(key: string, options: NumericColumnOptions = {}): NumericColumn {
  const fn = 'numericColumn';
  checkKey(key, fn);
  checkOptionKeys(options, ['shape', 'defaultValue', 'normalizerFn', 'dtype'], fn);
  const shape = options.shape ?? [1];
  if (!Array.isArray(shape) || shape.length === 0 || !shape.every((d) => Number.isSafeInteger(d) && d >= 1)) {
    const message = `${fn}: shape must be a non-empty array of positive integers (column '${key}'), got ${JSON.stringify(shape)}`;
    throw Array.isArray(shape) && shape.every((d) => typeof d === 'number') ? new RangeError(message) : new TypeError(message);
  }
  if (options.dtype !== undefined && options.dtype !== 'float32') {
    throw new TypeError(`${fn}: dtype must be float32 (column '${key}'), got ${shownValue(options.dtype)}`);
  }
  const size = shape.reduce((a, b) => a * b, 1);
  let defaultValue: number[] | undefined;
  if (options.defaultValue !== undefined) {
    defaultValue = typeof options.defaultValue === 'number' ? new Array(size).fill(options.defaultValue) : options.defaultValue;
    if (!Array.isArray(defaultValue) || defaultValue.length !== size || !defaultValue.every((v) => typeof v === 'number' && Number.isFinite(v))) {
      const message = `${fn}: defaultValue must be a finite number or ${size} of them (column '${key}')`;
      throw Array.isArray(defaultValue) && defaultValue.every((v) => typeof v === 'number') ? new RangeError(message) : new TypeError(message);
    }
  }
  if (options.normalizerFn !== undefined && typeof options.normalizerFn !== 'function') {
    throw new TypeError(`${fn}: normalizerFn must be a function (column '${key}')`);
  }
  return new NumericColumn(key, shape, defaultValue, options.normalizerFn);
}
