// Raw feature values as the transforms take them: one feature of a batch, as rows of
// values (CSR), either strings (UTF-8 bytes + offsets) or integers, or a dense block
// of numbers. Converting plain JS arrays happens here, once per batch; typed arrays,
// StringColumns and Raggeds are taken as they are.
import { Ragged } from '../tensor/ragged';
import { StringColumn } from '../tensor/string_column';
import { Tensor } from '../tensor/tensor';
import { dtypeOfTypedArray } from '../tensor/dtype';
import { native } from '../native';
import type { FeatureInput, Features, RaggedStrings } from '../data/batch';

// The batch types are hb.data's, so a dataset's batches are feature columns' input as they are.
export type { FeatureInput, Features, RaggedStrings };

/** A categorical feature's raw values, row by row. */
export interface RawIds {
  kind: 'strings' | 'ints';
  values: Uint8Array | Int32Array | BigInt64Array;
  offsets?: Int32Array;
  valid?: Uint8Array;
  rowSplits: Int32Array;
  /**
   * Dense inputs (one value or a fixed number per example) drop TensorFlow's ignore
   * values ('' and -1), as _to_sparse_input_and_drop_ignore_values does; sparse ones
   * (Ragged, arrays of arrays) keep them.
   */
  dense: boolean;
}

/** `column` names the column asking, for errors. */
export function featureOf(features: Features, key: string, column: string): FeatureInput {
  if (features === null || typeof features !== 'object') {
    throw new TypeError(`feature column '${column}': features must be an object of feature name -> values`);
  }
  if (!Object.prototype.hasOwnProperty.call(features, key) || features[key] === undefined) {
    const present = Object.keys(features);
    throw new Error(
      `feature column '${column}': feature '${key}' is missing from the batch (it has ${present.length ? present.map((k) => `'${k}'`).join(', ') : 'no features'})`,
    );
  }
  return features[key];
}

/** The row splits of `rows` rows of `width` values each. */
export function regularSplits(rows: number, width: number): Int32Array {
  return native.featureRegularSplits(rows, width);
}

/** Numbers as float32: typed arrays convert in one engine call (bigints need Number()). */
export function toFloat32(values: Float32Array | Float64Array | Int32Array | BigInt64Array): Float32Array {
  // By dtype: a Float32Array made by the addon fails instanceof, and would be copied for nothing.
  if (dtypeOfTypedArray(values) === 'float32') return values as Float32Array;
  if (dtypeOfTypedArray(values) === 'int64') return Float32Array.from(values as BigInt64Array, Number);
  return new Float32Array(values as Float64Array | Int32Array);
}

/**
 * A [batch] or [batch, n] host tensor as a dense block, read now (transform() is
 * synchronous; DenseFeatures reads tensors before). A dense input, so a categorical
 * column drops its -1s as TF drops a dense tensor's ignore value.
 */
function tensorBlock(t: Tensor, column: string, key: string): DenseBlock {
  if (t.rank !== 1 && t.rank !== 2) throw new RangeError(`feature column '${column}': feature '${key}' is a tensor of shape [${t.shape.join(', ')}]; a feature tensor is [batch] or [batch, n]`);
  if (t.device !== 'cpu') {
    throw new TypeError(`feature column '${column}': feature '${key}' is a tensor on ${t.device}; transform() reads host tensors only: pass await t.data(), or use DenseFeatures`);
  }
  return new DenseBlock(native.tensorDataSync(t.handle) as DenseBlock['values'], t.rank === 2 ? t.shape[1] : 1);
}

function isRaggedStrings(value: unknown): value is RaggedStrings {
  return (
    value !== null &&
    typeof value === 'object' &&
    (value as RaggedStrings).values instanceof StringColumn &&
    dtypeOfTypedArray((value as RaggedStrings).rowSplits) === 'int32'
  );
}

function stringsFrom(column: StringColumn, rowSplits: Int32Array, dense: boolean): RawIds {
  return { kind: 'strings', values: column.bytes, offsets: column.offsets, valid: column.valid, rowSplits, dense };
}

/** A plain array's values: strings if any present value is one, else integers (also when none is present). */
function plainArrayIds(values: ReadonlyArray<unknown>, column: string, key: string): RawIds {
  const n = values.length;
  const firstPresent = values.find((v) => v !== null && v !== undefined);
  if (typeof firstPresent === 'string') {
    const strings = values.map((v, i) => {
      if (v !== null && v !== undefined && typeof v !== 'string') {
        throw new TypeError(`feature column '${column}': feature '${key}' mixes strings and ${typeof v}s (value ${i})`);
      }
      return v as string | null | undefined;
    });
    return stringsFrom(StringColumn.fromStrings(strings), regularSplits(n, 1), true);
  }
  const ids = new BigInt64Array(n);
  let valid: Uint8Array | undefined;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v === null || v === undefined) {
      valid ??= new Uint8Array(n).fill(1);
      valid[i] = 0;
    } else if (typeof v === 'bigint') {
      if (v < -(2n ** 63n) || v >= 2n ** 63n) throw new RangeError(`feature column '${column}': feature '${key}' value ${i} = ${v} is outside int64`);
      ids[i] = v;
    } else if (typeof v === 'number' && Number.isSafeInteger(v)) {
      ids[i] = BigInt(v);
    } else if (typeof v === 'number' && Number.isInteger(v)) {
      throw new RangeError(`feature column '${column}': feature '${key}' value ${i} = ${v} is not a safe integer; pass ids beyond 2^53 as bigints`);
    } else {
      throw new TypeError(
        `feature column '${column}': feature '${key}' value ${i} is ${typeof v === 'number' ? v : `a ${typeof v}`}; categorical features take strings or integers`,
      );
    }
  }
  return { kind: 'ints', values: ids, valid, rowSplits: regularSplits(n, 1), dense: true };
}

function nestedArrayIds(rows: ReadonlyArray<ReadonlyArray<unknown>>, column: string, key: string): RawIds {
  const splits = new Int32Array(rows.length + 1);
  rows.forEach((row, i) => {
    if (!Array.isArray(row)) throw new TypeError(`feature column '${column}': feature '${key}' row ${i} is not an array`);
    splits[i + 1] = splits[i] + row.length;
  });
  const flat = rows.flat();
  const ids = plainArrayIds(flat, column, key);
  return { ...ids, rowSplits: splits, dense: false };
}

/** A categorical feature's values as rows of strings or integers. */
export function rawIdsOf(input: FeatureInput, column: string, key: string): RawIds {
  if (input instanceof StringColumn) return stringsFrom(input, regularSplits(input.length, 1), true);
  if (input instanceof Ragged) return { kind: 'ints', values: input.values, rowSplits: input.rowSplits, dense: false };
  if (isRaggedStrings(input)) return stringsFrom(input.values, input.rowSplits, false);
  if (input instanceof Tensor) return denseBlockIds(tensorBlock(input, column, key), column, key);
  const dtype = dtypeOfTypedArray(input);
  if (dtype === 'int32' || dtype === 'int64') {
    const ints = input as Int32Array | BigInt64Array;
    return { kind: 'ints', values: ints, rowSplits: regularSplits(ints.length, 1), dense: true };
  }
  if (dtype !== undefined) {
    throw new TypeError(`feature column '${column}': feature '${key}' is a ${dtype} array; categorical features take strings or integers`);
  }
  if (Array.isArray(input)) {
    if (input.length > 0 && input.some((v) => Array.isArray(v))) return nestedArrayIds(input as unknown[][], column, key);
    return plainArrayIds(input, column, key);
  }
  throw new TypeError(
    `feature column '${column}': feature '${key}' must be a typed array, an hb.StringColumn, an hb.Ragged, an array or an array of arrays`,
  );
}

/** A feature given as a [rows, n] tensor, read into a typed array (for DenseFeatures). */
export async function readTensorFeatures(features: Features): Promise<Features> {
  const keys = Object.keys(features).filter((k) => features[k] instanceof Tensor);
  if (keys.length === 0) return features;
  const out: Record<string, FeatureInput | DenseBlock> = { ...features };
  await Promise.all(
    keys.map(async (k) => {
      const t = features[k] as Tensor;
      if (t.rank !== 1 && t.rank !== 2) throw new RangeError(`feature '${k}': a tensor feature must be [batch] or [batch, n], got [${t.shape.join(', ')}]`);
      const data = await t.data();
      const width = t.rank === 2 ? t.shape[1] : 1;
      out[k] = width === 1 ? (data as FeatureInput) : new DenseBlock(data as DenseBlock['values'], width);
    }),
  );
  return out as Features;
}

/** A [rows, width] block read from a tensor: dense values, `width` per example. */
export class DenseBlock {
  constructor(
    readonly values: Float32Array | Float64Array | Int32Array | BigInt64Array,
    readonly width: number,
  ) {}
}

export function denseBlockIds(block: DenseBlock, column: string, key: string): RawIds {
  // By dtype: arrays made by the addon fail instanceof checks against this realm's classes.
  const dtype = dtypeOfTypedArray(block.values);
  if (dtype === 'float32' || dtype === 'float64') {
    throw new TypeError(`feature column '${column}': feature '${key}' holds floats; categorical features take strings or integers`);
  }
  return { kind: 'ints', values: block.values as Int32Array | BigInt64Array, rowSplits: regularSplits(block.values.length / block.width, block.width), dense: true };
}

/**
 * A numeric feature as [rows, width] float32 values. Missing values (null, undefined)
 * take `defaultValue`, or are an error without one; NaN is an error.
 */
export function numericValuesOf(input: FeatureInput | DenseBlock, width: number, column: string, key: string, defaultValue?: readonly number[]): Float32Array {
  let values: Float32Array;
  if (input instanceof DenseBlock) {
    if (input.width !== width) throw new RangeError(`feature column '${column}': feature '${key}' has ${input.width} values per example, the column takes ${width}`);
    values = toFloat32(input.values);
  } else if (input instanceof Tensor) {
    return numericValuesOf(tensorBlock(input, column, key), width, column, key, defaultValue);
  } else if (input instanceof StringColumn || input instanceof Ragged || isRaggedStrings(input)) {
    throw new TypeError(`feature column '${column}': feature '${key}' must be numbers with ${width} per example, not ${input.constructor.name}`);
  } else if (dtypeOfTypedArray(input) !== undefined) {
    const typed = input as Float32Array | Float64Array | Int32Array | BigInt64Array;
    if (typed.length % width !== 0) {
      throw new RangeError(`feature column '${column}': feature '${key}' has ${typed.length} values, not a multiple of the column's ${width} per example`);
    }
    values = toFloat32(typed);
  } else if (Array.isArray(input)) {
    const rows = input as ReadonlyArray<unknown>;
    values = new Float32Array(rows.length * width);
    rows.forEach((row, r) => {
      const cells = Array.isArray(row) ? row : [row];
      if (cells.length !== width) {
        throw new RangeError(`feature column '${column}': feature '${key}' row ${r} has ${cells.length} values, the column takes ${width}`);
      }
      cells.forEach((v: unknown, j: number) => {
        if (v === null || v === undefined) {
          if (defaultValue === undefined) throw new Error(`feature column '${column}': feature '${key}' row ${r} is missing a value and the column has no defaultValue`);
          values[r * width + j] = defaultValue[j];
        } else if (typeof v === 'number' || typeof v === 'bigint') {
          values[r * width + j] = Number(v);
        } else {
          throw new TypeError(`feature column '${column}': feature '${key}' row ${r} holds a ${typeof v}; numeric columns take numbers`);
        }
      });
    });
  } else {
    throw new TypeError(`feature column '${column}': feature '${key}' must be numbers (a typed array, an array or an array of arrays)`);
  }
  const nanAt = native.featureFirstNaN(values);
  if (nanAt >= 0) {
    throw new RangeError(`feature column '${column}': feature '${key}' value ${nanAt % width} of row ${Math.floor(nanAt / width)} is NaN`);
  }
  return values;
}
