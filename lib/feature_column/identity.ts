// categorical_column_with_identity: the integer feature is the id.
import { native } from '../native';
import { Ragged } from '../tensor/ragged';
import { CategoricalColumn, checkKey, checkPositiveInteger } from './column';
import { Features, featureOf } from './feature_input';
import { idsOfFeature, WeightsBeside } from './raw_ids';

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

  /**
   * Without a defaultValue the ids pass as they are: negative ones are pruned by the
   * embedding lookup and ones >= numBuckets are an error there. With one, ids outside
   * [0, numBuckets) become it.
   */
  transform(features: Features): Ragged {
    return this.idsWithWeights(features, undefined);
  }

  /** @internal */
  idsWithWeights(features: Features, weights: WeightsBeside | undefined): Ragged {
    const raw = idsOfFeature(featureOf(features, this.key, this.name), this.name, this.key, weights);
    if (raw.kind !== 'ints') throw new TypeError(`feature column '${this.name}': feature '${this.key}' holds strings; an identity column takes integers`);
    const ids = native.featureIdentity(this.name, raw.values as Int32Array | BigInt64Array, this.numBuckets, this.defaultValue);
    return new Ragged(ids, raw.rowSplits, raw.weights);
  }
}

export function categoricalColumnWithIdentity(key: string, numBuckets: number, defaultValue?: number): IdentityCategoricalColumn {
  const fn = 'categoricalColumnWithIdentity';
  checkKey(key, fn);
  checkPositiveInteger(numBuckets, fn, `numBuckets (column '${key}')`);
  if (defaultValue !== undefined && defaultValue !== null) {
    if (!Number.isSafeInteger(defaultValue) || defaultValue < 0 || defaultValue >= numBuckets) {
      throw new RangeError(`${fn}: defaultValue ${String(defaultValue)} not in range [0, ${numBuckets}), column '${key}'`);
    }
  }
  return new IdentityCategoricalColumn(key, numBuckets, defaultValue ?? undefined);
}
