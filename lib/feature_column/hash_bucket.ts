// categorical_column_with_hash_bucket: Fingerprint64 of the value's UTF-8 bytes
// (integers: of their decimal digits) modulo the bucket count, as to_hash_bucket_fast.
import { native } from '../native';
import { Ragged } from '../tensor/ragged';
import { CategoricalColumn, checkKey, checkPositiveInteger } from './column';
import { Features, featureOf } from './feature_input';
import { idsOfFeature, PresentIds, presentCount, WeightsBeside } from './raw_ids';
import { shownValue } from '../shown_value';

export type CategoricalDType = 'string' | 'int32' | 'int64';

export function checkCategoricalDType(dtype: unknown, fn: string, key: string): CategoricalDType {
  if (dtype === 'string' || dtype === 'int32' || dtype === 'int64') return dtype;
  throw new TypeError(`${fn}: dtype must be 'string', 'int32' or 'int64' (column '${key}'), got ${shownValue(dtype)}`);
}

/** TF: "Column dtype and SparseTensors dtype must be compatible". */
export function checkValuesMatch(ids: PresentIds, dtype: CategoricalDType, column: string, key: string): void {
  // An empty or all-missing batch has no values to disagree.
  if (presentCount(ids) === 0) return;
  const given = ids.kind === 'strings' ? 'strings' : 'integers';
  const wanted = dtype === 'string' ? 'strings' : 'integers';
  if (given !== wanted) throw new TypeError(`feature column '${column}': feature '${key}' holds ${given} but the column's dtype is ${dtype}`);
}

export class HashedCategoricalColumn implements CategoricalColumn {
  readonly keys: readonly string[];
  constructor(
    readonly key: string,
    readonly hashBucketSize: number,
    readonly dtype: CategoricalDType,
  ) {
    this.keys = [key];
  }

  get name(): string {
    return this.key;
  }

  get numBuckets(): number {
    return this.hashBucketSize;
  }

  transform(features: Features): Ragged {
    return this.idsWithWeights(features, undefined);
  }

  /** @internal */
  idsWithWeights(features: Features, weights: WeightsBeside | undefined): Ragged {
    const ids = idsOfFeature(featureOf(features, this.key, this.name), this.name, this.key, weights);
    checkValuesMatch(ids, this.dtype, this.name, this.key);
    const buckets = native.stringsFingerprint(ids.values, ids.offsets, this.hashBucketSize) as BigInt64Array;
    return new Ragged(buckets, ids.rowSplits, ids.weights);
  }

  /** Fingerprint64 itself (as int64 bits), not taken modulo hashBucketSize: a dynamic table's key. */
  rawIds(features: Features): Ragged {
    const ids = idsOfFeature(featureOf(features, this.key, this.name), this.name, this.key);
    checkValuesMatch(ids, this.dtype, this.name, this.key);
    const fingerprints = native.stringsFingerprint(ids.values, ids.offsets, undefined) as unknown as BigUint64Array;
    return new Ragged(new BigInt64Array(fingerprints.buffer, fingerprints.byteOffset, fingerprints.length), ids.rowSplits, ids.weights);
  }
}

export function categoricalColumnWithHashBucket(key: string, hashBucketSize: number, dtype: CategoricalDType = 'string'): HashedCategoricalColumn {
  const fn = 'categoricalColumnWithHashBucket';
  checkKey(key, fn);
  checkPositiveInteger(hashBucketSize, fn, `hashBucketSize (column '${key}')`);
  return new HashedCategoricalColumn(key, hashBucketSize, checkCategoricalDType(dtype, fn, key));
}
