// Multi-valued features: ids (and optional weights) per example, in CSR form.
import { dtypeOfTypedArray, typedArrayFrom } from './dtype';

export type IdValues = BigInt64Array | Int32Array;

/**
 * A batch of variable-length rows: row i is values[rowSplits[i] .. rowSplits[i+1]).
 * Ids are int64 (BigInt64Array; Int32Array is accepted too). Built from typed arrays
 * it keeps them as they are (no copy). hb.ragged() checks that rowSplits starts at 0,
 * never decreases and ends at values.length; this constructor does not (the readers and
 * feature columns build a Ragged per batch from splits they made), and the native code
 * checks again before it reads anything.
 */
export class Ragged {
  readonly values: IdValues;
  readonly rowSplits: Int32Array;
  readonly weights?: Float32Array;

  constructor(values: IdValues, rowSplits: Int32Array, weights?: Float32Array) {
    this.values = values;
    this.rowSplits = rowSplits;
    this.weights = weights;
  }

  get nrows(): number {
    return Math.max(0, this.rowSplits.length - 1);
  }

  /** One array per row. */
  toArray(): Array<Array<bigint | number>> {
    const rows: Array<Array<bigint | number>> = [];
    for (let i = 0; i < this.nrows; i++) {
      rows.push(Array.from(this.values.subarray(this.rowSplits[i], this.rowSplits[i + 1]) as ArrayLike<bigint | number>));
    }
    return rows;
  }
}

function idValues(values: unknown, argument: string): IdValues {
  const dtype = dtypeOfTypedArray(values);
  if (dtype === 'int64' || dtype === 'int32') return values as IdValues;
  if (dtype !== undefined) throw new TypeError(`${argument} must hold integer ids (BigInt64Array or Int32Array), got ${dtype}`);
  if (Array.isArray(values)) return typedArrayFrom(values as Array<number | bigint>, 'int64', argument) as BigInt64Array;
  throw new TypeError(`${argument} must be a BigInt64Array, an Int32Array or an array of integers`);
}

function splitsFrom(rowSplits: unknown): Int32Array {
  const dtype = dtypeOfTypedArray(rowSplits);
  if (dtype === 'int32') return rowSplits as Int32Array;
  if (dtype !== undefined) throw new TypeError(`ragged: rowSplits must be an Int32Array, got ${dtype}`);
  if (Array.isArray(rowSplits)) return typedArrayFrom(rowSplits, 'int32', 'ragged: rowSplits') as Int32Array;
  throw new TypeError('ragged: rowSplits must be an Int32Array or an array of integers');
}

function weightsFrom(weights: unknown, argument: string): Float32Array | undefined {
  if (weights === undefined || weights === null) return undefined;
  const dtype = dtypeOfTypedArray(weights);
  if (dtype === 'float32') return weights as Float32Array;
  if (dtype !== undefined) throw new TypeError(`${argument} must be a Float32Array, got ${dtype}`);
  if (Array.isArray(weights)) return typedArrayFrom(weights, 'float32', argument) as Float32Array;
  throw new TypeError(`${argument} must be a Float32Array or an array of numbers`);
}

/**
 * The whole CSR contract, here rather than only where native code reads it: a value
 * built wrong should fail where it was built, not at a lookup far away (and a lookup
 * that prunes or hashes ids may never notice rows that overlap or run backwards).
 * O(rows), which is small beside the values.
 */
function checkSplits(splits: Int32Array, count: number): void {
  if (splits.length === 0) throw new RangeError('ragged: rowSplits must hold at least one value (0)');
  if (splits[0] !== 0) throw new RangeError(`ragged: rowSplits must start at 0, got rowSplits[0] = ${splits[0]}`);
  for (let i = 1; i < splits.length; i++) {
    if (splits[i] < splits[i - 1]) {
      throw new RangeError(`ragged: rowSplits must be non-decreasing, but rowSplits[${i}] = ${splits[i]} < rowSplits[${i - 1}] = ${splits[i - 1]}`);
    }
  }
  if (splits[splits.length - 1] !== count) {
    throw new RangeError(`ragged: rowSplits ends at ${splits[splits.length - 1]} but values has ${count} values`);
  }
}

/**
 * hb.ragged(values, rowSplits, weights?) from flat values, or hb.ragged(rows, undefined,
 * weightRows?) from one array per row.
 */
export function ragged(
  values: IdValues | Array<number | bigint> | Array<Array<number | bigint>>,
  rowSplits?: Int32Array | number[],
  weights?: Float32Array | number[] | number[][],
): Ragged {
  if (rowSplits === undefined) {
    if (!Array.isArray(values) || !values.every((row) => Array.isArray(row))) {
      throw new TypeError('ragged: without rowSplits, values must be an array of arrays (one per row)');
    }
    const rows = values as Array<Array<number | bigint>>;
    const splits = new Int32Array(rows.length + 1);
    rows.forEach((row, i) => (splits[i + 1] = splits[i] + row.length));
    let flatWeights: Float32Array | undefined;
    if (weights !== undefined) {
      if (!Array.isArray(weights) || weights.length !== rows.length || !weights.every((w, i) => Array.isArray(w) && w.length === rows[i].length)) {
        const message = 'ragged: weights must have one array per row, each as long as its row of ids';
        throw Array.isArray(weights) && weights.every((w) => Array.isArray(w)) ? new RangeError(message) : new TypeError(message);
      }
      flatWeights = typedArrayFrom((weights as number[][]).flat(), 'float32', 'ragged: weights') as Float32Array;
    }
    return new Ragged(idValues(rows.flat(), 'ragged: values'), splits, flatWeights);
  }
  const ids = idValues(values, 'ragged: values');
  const splits = splitsFrom(rowSplits);
  if (Array.isArray(weights) && weights.some((w) => Array.isArray(w))) {
    throw new TypeError('ragged: with rowSplits, weights must be flat (one per value)');
  }
  const w = weightsFrom(weights, 'ragged: weights');
  checkSplits(splits, ids.length);
  if (w !== undefined && w.length !== ids.length) {
    throw new RangeError(`ragged: weights has ${w.length} values but values has ${ids.length}`);
  }
  return new Ragged(ids, splits, w);
}
