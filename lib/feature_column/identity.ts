// categorical_column_with_identity: the integer feature is the id.
import { native } from '../native';
import { Ragged } from '../tensor/ragged';
import { CategoricalColumn, checkKey, checkPositiveInteger } from './column';
import { Features, featureOf } from './feature_input';
import { idsOfFeature, presentCount, WeightsBeside } from './raw_ids';

export class IdentityCategoricalColumn implements CategoricalColumn {
  readonly keys: readonly string[];
  constructor(
    readonly key: string,
    readonly numBuckets: number,
    readonly defaultValue: number | undefined,
  ) {
    this.keys = [key];
  }

  get name(): string {
    return this.key;
  }

  /** Whether the ids are unbounded (no numBuckets: a dynamic table's keys). */
  get unbounded(): boolean {
    return this.numBuckets === Number.POSITIVE_INFINITY;
  }

  /** The integers as they are (int64, any value): a dynamic table's keys. */
  rawIds(features: Features): Ragged {
    const raw = idsOfFeature(featureOf(features, this.key, this.name), this.name, this.key);
    if (raw.kind !== 'ints' && presentCount(raw) > 0) throw new TypeError(`feature column '${this.name}': feature '${this.key}' holds strings; an identity column takes integers`);
    const values = raw.kind === 'ints' ? (raw.values as Int32Array | BigInt64Array) : new BigInt64Array(0);
    return new Ragged(native.featureRawIds(`feature column '${this.name}'`, values), raw.rowSplits, raw.weights);
  }

  /**
   * With a defaultValue, ids outside [0, numBuckets) become it; without one they are an
   * error naming the column, as TF 1.15 asserts. Dense inputs drop -1 (missing) first.
   */
  transform(features: Features): Ragged {
    return this.idsWithWeights(features, undefined);
  }

  /** @internal */
  idsWithWeights(features: Features, weights: WeightsBeside | undefined): Ragged {
    if (this.unbounded) {
      throw new Error(`feature column '${this.name}' has no numBuckets: its ids are any int64, for an embedding column of a dynamic table (embBackend 'DYNAMIC') only`);
    }
    const raw = idsOfFeature(featureOf(features, this.key, this.name), this.name, this.key, weights);
    if (raw.kind !== 'ints' && presentCount(raw) > 0) throw new TypeError(`feature column '${this.name}': feature '${this.key}' holds strings; an identity column takes integers`);
    const values = raw.kind === 'ints' ? (raw.values as Int32Array | BigInt64Array) : new BigInt64Array(0);
    const ids = native.featureIdentity(`feature column '${this.name}'`, values, this.numBuckets, this.defaultValue);
    return new Ragged(ids, raw.rowSplits, raw.weights);
  }
}

/**
 * Without `numBuckets` the ids are any int64 (the missing marker -1 of dense inputs
 * aside): the column feeds an embedding column of a dynamic table (embBackend 'DYNAMIC',
 * chosen for it), and nothing that needs a bucket count.
 */
export function categoricalColumnWithIdentity(key: string, numBuckets?: number, defaultValue?: number): IdentityCategoricalColumn {
  const fn = 'categoricalColumnWithIdentity';
  checkKey(key, fn);
  if (numBuckets === undefined || numBuckets === null) {
    if (defaultValue !== undefined && defaultValue !== null) throw new Error(`${fn}: defaultValue needs numBuckets (column '${key}')`);
    return new IdentityCategoricalColumn(key, Number.POSITIVE_INFINITY, undefined);
  }
  checkPositiveInteger(numBuckets, fn, `numBuckets (column '${key}')`);
  if (defaultValue !== undefined && defaultValue !== null) {
    if (!Number.isSafeInteger(defaultValue) || defaultValue < 0 || defaultValue >= numBuckets) {
      const message = `${fn}: defaultValue ${String(defaultValue)} not in range [0, ${numBuckets}), column '${key}'`;
      throw typeof defaultValue === 'number' ? new RangeError(message) : new TypeError(message);
    }
  }
  return new IdentityCategoricalColumn(key, numBuckets, defaultValue ?? undefined);
}
