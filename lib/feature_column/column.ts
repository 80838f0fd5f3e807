// What every feature column is: categorical columns turn raw features into int64 ids
// (TF's get_sparse_tensors); dense columns turn them into [batch, dimension] floats.
import { Ragged } from '../tensor/ragged';
import { Features } from './feature_input';
import { shownValue } from '../shown_value';

export interface FeatureColumn {
  /** TF's column name (sorts DenseFeatures' output, names variables and errors). */
  readonly name: string;
  /** The raw feature keys the column reads. */
  readonly keys: readonly string[];
}

export interface CategoricalColumn extends FeatureColumn {
  readonly numBuckets: number;
  /** The int64 ids (and weights) TF's get_sparse_tensors gives for the same input. */
  transform(features: Features): Ragged;
  /**
   * The ids a dynamic table (embBackend: 'DYNAMIC') keys rows by: int64, any value, not
   * reduced to numBuckets (an identity column's integers, a hash column's Fingerprint64).
   * Columns without it cannot feed a dynamic table.
   */
  rawIds?(features: Features): Ragged;
}

export interface DenseColumn extends FeatureColumn {
  /** Floats per example in DenseFeatures' output. */
  readonly dimension: number;
  /** @internal [rows, dimension] values; `rows` checked by the caller. */
  denseValues(features: Features): Promise<{ values: Float32Array; rows: number }>;
}

export function isCategoricalColumn(value: unknown): value is CategoricalColumn {
  return (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as CategoricalColumn).transform === 'function' &&
    typeof (value as CategoricalColumn).numBuckets === 'number'
  );
}

export function isDenseColumn(value: unknown): value is DenseColumn {
  return value !== null && typeof value === 'object' && typeof (value as DenseColumn).denseValues === 'function';
}

export function checkKey(key: unknown, fn: string): string {
  if (typeof key !== 'string') throw new TypeError(`${fn}: key must be a non-empty string, got ${shownValue(key)}`);
  if (key === '') throw new Error(`${fn}: key must be a non-empty string, got ${shownValue(key)}`);
  return key;
}

export function checkPositiveInteger(value: unknown, fn: string, argument: string, min = 1): number {
  if (typeof value !== 'number') throw new TypeError(`${fn}: ${argument} must be an integer >= ${min}, got ${shownValue(value)}`);
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${fn}: ${argument} must be an integer >= ${min}, got ${shownValue(value)}`);
  return value;
}

export function checkCategorical(value: unknown, fn: string, argument: string): CategoricalColumn {
  if (!isCategoricalColumn(value)) {
    throw new TypeError(`${fn}: ${argument} must be a categorical column (categoricalColumnWith*, bucketizedColumn, crossedColumn, weightedCategoricalColumn)`);
  }
  return value;
}
