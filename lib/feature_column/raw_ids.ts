// A categorical feature's values with the missing ones removed: null / undefined
// always, and for dense inputs TF's ignore values ('' and -1). Done natively; when
// nothing is missing the input arrays pass through untouched.
import { native } from '../native';
import { DenseBlock, denseBlockIds, FeatureInput, RawIds, rawIdsOf } from './feature_input';

export interface PresentIds {
  kind: 'strings' | 'ints';
  values: Uint8Array | Int32Array | BigInt64Array;
  offsets?: Int32Array;
  rowSplits: Int32Array;
  weights?: Float32Array;
}

/** Weights given beside a categorical feature's raw values (a weighted column's). */
export interface WeightsBeside {
  /** The weighted column, for errors. */
  owner: string;
  key: string;
  weights: Float32Array;
  /** When the weights came as rows: checked against the ids' rows. */
  rowSplits?: Int32Array;
}

/** How many values there are (strings or integers). */
export function presentCount(ids: { kind: 'strings' | 'ints'; values: ArrayLike<unknown>; offsets?: Int32Array }): number {
  return ids.kind === 'strings' ? (ids.offsets as Int32Array).length - 1 : ids.values.length;
}

function valueCount(raw: RawIds): number {
  return raw.kind === 'strings' ? (raw.offsets as Int32Array).length - 1 : raw.values.length;
}

function sameSplits(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The present values of one categorical feature (and the weights beside them).
 * `dropIgnoreValues` false keeps '' and -1 of dense inputs (crossed columns' raw keys).
 */
export function idsOfFeature(input: FeatureInput | DenseBlock, column: string, key: string, beside?: WeightsBeside, dropIgnoreValues = true): PresentIds {
  return presentIds(rawOf(input, column, key), column, key, beside, dropIgnoreValues);
}

export function rawOf(input: FeatureInput | DenseBlock, column: string, key: string): RawIds {
  return input instanceof DenseBlock ? denseBlockIds(input, column, key) : rawIdsOf(input, column, key);
}

export function presentIds(raw: RawIds, column: string, key: string, beside?: WeightsBeside, dropIgnoreValues = true): PresentIds {
  const count = valueCount(raw);
  if (beside !== undefined) {
    if (beside.weights.length !== count) {
      throw new RangeError(`feature column '${beside.owner}': weight feature '${beside.key}' has ${beside.weights.length} values but feature '${key}' has ${count}`);
    }
    if (beside.rowSplits !== undefined && !sameSplits(beside.rowSplits, raw.rowSplits)) {
      throw new RangeError(`feature column '${beside.owner}': the rows of weight feature '${beside.key}' do not match the rows of feature '${key}'`);
    }
  }
  // A ragged input's splits come from the user: they must describe its values, or the
  // ids would be assigned to the wrong rows (dense inputs' splits are made here).
  if (!raw.dense) native.featureCheckRowSplits(`feature column '${column}': feature '${key}'`, raw.rowSplits, count);
  const weights = beside?.weights;
  const dropIgnored = raw.dense && dropIgnoreValues;
  if (raw.valid === undefined && !dropIgnored) return { kind: raw.kind, values: raw.values, offsets: raw.offsets, rowSplits: raw.rowSplits, weights };
  const kept = native.featureDropMissing(`feature column '${column}'`, raw.values, raw.offsets, raw.valid, raw.rowSplits, weights, dropIgnored);
  if (kept === null) return { kind: raw.kind, values: raw.values, offsets: raw.offsets, rowSplits: raw.rowSplits, weights };
  return { kind: raw.kind, values: kept.values, offsets: kept.offsets, rowSplits: kept.rowSplits, weights: kept.weights };
}
