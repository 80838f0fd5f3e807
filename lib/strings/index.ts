// hb.strings: TensorFlow's string hashing, bit-identical to TF (FarmHash Fingerprint64).
import { native } from '../native';

/**
 * Strings (hashed as UTF-8), integers (hashed as their decimal digits, as TF's
 * hash-bucket columns do with integer input), or a string column given as one UTF-8
 * buffer plus n + 1 offsets.
 */
export type HashInput =
  | ReadonlyArray<string | number | bigint>
  | BigInt64Array
  | Int32Array
  | { bytes: Uint8Array; offsets: Int32Array | BigInt64Array };

export interface HashOptions {
  /**
   * Where the hashing runs: 'cpu' (the default), 'cuda' or 'cuda:N'. Inputs and results
   * are host arrays either way; on CUDA a JS array is first encoded on the host (UTF-8
   * for strings, decimal digits for integers), then copied and hashed on the device.
   * The results are identical on every device.
   */
  device?: 'cpu' | 'cuda' | `cuda:${number}`;
}

function call(values: HashInput, numBuckets: number | bigint | undefined, options: HashOptions | undefined): BigUint64Array | BigInt64Array {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`${numBuckets === undefined ? 'fingerprint64' : 'toHashBucketFast'}: options must be an object such as { device: 'cuda' }`);
  }
  const device = options?.device;
  if (values !== null && typeof values === 'object' && 'bytes' in values && 'offsets' in values) {
    return native.stringsFingerprint(values.bytes, values.offsets, numBuckets, device);
  }
  return native.stringsFingerprint(values as Array<string | number | bigint>, undefined, numBuckets, device);
}

/** tf.strings fingerprint: FarmHash Fingerprint64 of each value, as uint64. */
export function fingerprint64(values: HashInput, options?: HashOptions): BigUint64Array {
  return call(values, undefined, options) as BigUint64Array;
}

/** tf.strings.to_hash_bucket_fast: Fingerprint64(value) mod numBuckets (uint64 modulo). */
export function toHashBucketFast(values: HashInput, numBuckets: number | bigint, options?: HashOptions): BigInt64Array {
  if (numBuckets === undefined) throw new TypeError('toHashBucketFast: numBuckets is required');
  return call(values, numBuckets, options) as BigInt64Array;
}
