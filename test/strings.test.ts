import * as hb from '../lib';
import { cudaAvailable } from './support/devices';
import { farmhashSelfTestCases, farmhashSelfTestColumn, farmhashTestData } from './support/farmhash_selftest';
import { typeName } from './support/reference';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** Integers whose digit counts change: 0, ±(10^k - 1), ±10^k, and both int64 ends. */
function decimalEdgeCases(): bigint[] {
  const values = [0n, -1n, INT64_MIN, INT64_MAX, INT64_MIN + 1n, BigInt(INT32_MIN), BigInt(INT32_MAX)];
  for (let k = 1n; k <= 18n; k++) values.push(10n ** k - 1n, 10n ** k, -(10n ** k - 1n), -(10n ** k));
  return values;
}

describe('hb.strings', () => {
  test('fingerprint64 passes all of FarmHash\'s self-test cases', () => {
    const cases = farmhashSelfTestCases();
    expect(cases).toHaveLength(362);
    const data = farmhashTestData();
    const expected = cases.map((c) => c.fingerprint64);
    const got = cases.map((c) =>
      hb.strings.fingerprint64({ bytes: data.subarray(c.offset, c.offset + c.len), offsets: Int32Array.of(0, c.len) })[0].toString(),
    );
    expect(got).toEqual(expected);
    // All at once as one column, and in place (offsets not starting at 0).
    expect(Array.from(hb.strings.fingerprint64(farmhashSelfTestColumn(data, cases)), String)).toEqual(expected);
    const inPlace = cases.map((c) =>
      hb.strings.fingerprint64({ bytes: data, offsets: BigInt64Array.of(BigInt(c.offset), BigInt(c.offset + c.len)) })[0].toString(),
    );
    expect(inPlace).toEqual(expected);
  });

  test('integers hash exactly as their decimal strings, int64 and int32 ends included', () => {
    const wide = decimalEdgeCases();
    const asStrings = hb.strings.fingerprint64(wide.map(String));
    expect(Array.from(hb.strings.fingerprint64(BigInt64Array.from(wide)))).toEqual(Array.from(asStrings));
    expect(Array.from(hb.strings.fingerprint64(wide))).toEqual(Array.from(asStrings));
    // The same through toHashBucketFast, with a bucket count above 2^53.
    for (const buckets of [1, 7, 1000003, 2n ** 62n + 5n]) {
      expect(Array.from(hb.strings.toHashBucketFast(BigInt64Array.from(wide), buckets))).toEqual(
        Array.from(asStrings, (f) => f % BigInt(buckets)),
      );
    }
    const narrow = wide.filter((v) => v >= BigInt(INT32_MIN) && v <= BigInt(INT32_MAX)).map(Number);
    expect(narrow).toEqual(expect.arrayContaining([0, -1, INT32_MIN, INT32_MAX, 999999999, -1000000000]));
    const narrowStrings = hb.strings.fingerprint64(narrow.map(String));
    expect(Array.from(hb.strings.fingerprint64(Int32Array.from(narrow)))).toEqual(Array.from(narrowStrings));
    expect(Array.from(hb.strings.fingerprint64(narrow))).toEqual(Array.from(narrowStrings));
    // A mixed JS array keeps each value's own encoding.
    expect(Array.from(hb.strings.fingerprint64(['x', INT64_MIN, -7, '', 0]))).toEqual(
      Array.from(hb.strings.fingerprint64(['x', INT64_MIN.toString(), '-7', '', '0'])),
    );
    expect(Array.from(hb.strings.fingerprint64(new BigInt64Array(0)))).toEqual([]);
    expect(Array.from(hb.strings.fingerprint64([]))).toEqual([]);
  });

  test('the device option: cpu is the default, a bad device is an Error naming the argument', () => {
    const values = ['a', 'bc', 12];
    const byDefault = Array.from(hb.strings.fingerprint64(values));
    expect(Array.from(hb.strings.fingerprint64(values, { device: 'cpu' }))).toEqual(byDefault);
    expect(Array.from(hb.strings.fingerprint64(values, {}))).toEqual(byDefault);
    expect(Array.from(hb.strings.toHashBucketFast(values, 5, { device: 'cpu' }))).toEqual(byDefault.map((f) => f % 5n));
    type Device = hb.strings.HashOptions['device'];
    expect(() => hb.strings.fingerprint64(values, { device: 'tpu' as Device })).toThrow(
      /fingerprint64: options\.device: 'tpu' is not a device \(expected 'cpu', 'cuda', 'cuda:N' or 'cuda-emulated'\)/,
    );
    expect(() => hb.strings.toHashBucketFast(values, 5, { device: 'tpu' as Device })).toThrow(/toHashBucketFast: options\.device: 'tpu' is not a device/);
    expect(() => hb.strings.fingerprint64(values, { device: 'cuda:x' as Device })).toThrow(/options\.device: 'cuda:x' is not a device/);
    expect(() => hb.strings.fingerprint64(values, { device: 3 as unknown as Device })).toThrow(/fingerprint64: options\.device must be a string/);
    expect(() => hb.strings.fingerprint64(values, 'cuda' as unknown as hb.strings.HashOptions)).toThrow(/fingerprint64: options must be an object/);
    if (!cudaAvailable) {
      expect(() => hb.strings.fingerprint64(values, { device: 'cuda' })).toThrow(/fingerprint64: options\.device: 'cuda' requested, but/);
      expect(() => hb.strings.fingerprint64(Int32Array.of(1), { device: 'cuda:0' })).toThrow(/options\.device: 'cuda:0' requested, but/);
    }
  });

  test('TensorFlow\'s published values', () => {
    const fp = hb.strings.fingerprint64(['Hello', 'World']);
    expect(typeName(fp)).toBe('BigUint64Array');
    expect(Array.from(fp)).toEqual([15404698994557526151n, 18308117990299812472n]);
    const buckets = hb.strings.toHashBucketFast(['omar', 'stringer', 'marlo'], 10);
    expect(typeName(buckets)).toBe('BigInt64Array');
    expect(Array.from(buckets)).toEqual([6n, 4n, 1n]);
    // Integers are hashed as their decimal strings.
    expect(Array.from(hb.strings.toHashBucketFast([101, 201, 301], 10))).toEqual([3n, 7n, 5n]);
    expect(Array.from(hb.strings.toHashBucketFast(BigInt64Array.of(101n, 201n, 301n), 10n))).toEqual([3n, 7n, 5n]);
    expect(Array.from(hb.strings.toHashBucketFast(Int32Array.of(101, 201, 301), 10))).toEqual([3n, 7n, 5n]);
    expect(Array.from(hb.strings.fingerprint64([-5, 101n]))).toEqual(Array.from(hb.strings.fingerprint64(['-5', '101'])));
  });

  test('a UTF-8 column (bytes + offsets) hashes like the same JS strings, multi-byte characters included', () => {
    const words = ['', 'a', 'héllo', '日本語のテキスト', 'x'.repeat(65), 'y'.repeat(1000)];
    const encoded = words.map((w) => new TextEncoder().encode(w));
    const offsets = new Int32Array(words.length + 1);
    encoded.forEach((e, i) => (offsets[i + 1] = offsets[i] + e.length));
    const bytes = new Uint8Array(offsets[words.length]);
    encoded.forEach((e, i) => bytes.set(e, offsets[i]));
    const fromColumn = hb.strings.fingerprint64({ bytes, offsets });
    expect(Array.from(fromColumn)).toEqual(Array.from(hb.strings.fingerprint64(words)));
    const wide = BigInt64Array.from(offsets, BigInt);
    expect(Array.from(hb.strings.fingerprint64({ bytes, offsets: wide }))).toEqual(Array.from(fromColumn));
    // uint64 modulo: the buckets are the fingerprints mod n.
    const buckets = hb.strings.toHashBucketFast(words, 1000003);
    expect(Array.from(buckets)).toEqual(Array.from(fromColumn, (f) => f % 1000003n));
  });

  test('bad input gives an Error naming the argument', () => {
    expect(() => hb.strings.fingerprint64([{}] as unknown as string[])).toThrow(/fingerprint64: values\[0\] must be a string, an integer or a bigint/);
    expect(() => hb.strings.fingerprint64(['a', 1.5])).toThrow(/fingerprint64: values\[1\] = 1.5 is not an integer/);
    expect(() => hb.strings.toHashBucketFast(['a'], 0)).toThrow(/toHashBucketFast: numBuckets must be a positive integer, got 0/);
    expect(() => hb.strings.toHashBucketFast(['a'], 2.5)).toThrow(/numBuckets must be a positive integer/);
    expect(() => hb.strings.toHashBucketFast(['a'], -3n)).toThrow(/numBuckets must be a positive integer below 2\^63/);
    expect(() => hb.strings.toHashBucketFast(['a'], undefined as unknown as number)).toThrow(/numBuckets is required/);
    const bytes = new Uint8Array(4);
    expect(() => hb.strings.fingerprint64({ bytes, offsets: Int32Array.of(0, 5) })).toThrow(/offsets\[1\] = 5 is outside the 4 bytes given/);
    expect(() => hb.strings.fingerprint64({ bytes, offsets: Int32Array.of(0, 3, 2) })).toThrow(/offsets must be non-decreasing, but offsets\[2\] = 2 < offsets\[1\] = 3/);
    expect(() => hb.strings.fingerprint64({ bytes, offsets: Int32Array.of(-1, 2) })).toThrow(/offsets\[0\] = -1 is outside/);
    expect(() => hb.strings.fingerprint64({ bytes, offsets: Float32Array.of(0, 2) as unknown as Int32Array })).toThrow(/offsets must be an Int32Array or BigInt64Array, got float32/);
    expect(() => hb.strings.fingerprint64(Float64Array.of(1) as unknown as Int32Array)).toThrow(/must hold integers \(BigInt64Array, Int32Array\) or UTF-8 bytes/);
    expect(() => hb.strings.fingerprint64('abc' as unknown as string[])).toThrow(/values must be an array of strings or integers/);
    expect(() => hb.strings.fingerprint64([2n ** 64n])).toThrow(/values\[0\] is a bigint outside int64/);
  });
});
