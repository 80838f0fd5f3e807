// FarmHash's self-test for Fingerprint64: the 362 (offset, len, expected) cases of
// fixtures/farmhash_fingerprint64_selftest.json over FarmHash's 1 MiB test data.
import * as fs from 'fs';
import * as path from 'path';

export interface SelfTestCase {
  offset: number;
  len: number;
  fingerprint64: string;
}

const selfTestPath = path.resolve(__dirname, '../fixtures/farmhash_fingerprint64_selftest.json');

export function farmhashSelfTestCases(): SelfTestCase[] {
  return (JSON.parse(fs.readFileSync(selfTestPath, 'utf8')) as { cases: SelfTestCase[] }).cases;
}

/** FarmHash's self-test input: the data_recipe of the JSON file, 1 MiB. */
export function farmhashTestData(): Uint8Array {
  const n = 1 << 20;
  const data = new Uint8Array(n);
  const k0 = 0xc3a5c85c97cb3127n;
  const mask = (1n << 64n) - 1n;
  let a = 9n;
  let b = 777n;
  for (let i = 0; i < n; i++) {
    a = (a + b) & mask;
    b = (b + a) & mask;
    a = ((a ^ (a >> 41n)) * k0) & mask;
    b = (((b ^ (b >> 41n)) * k0) + BigInt(i)) & mask;
    data[i] = Number((b >> 37n) & 0xffn);
  }
  return data;
}

/** Every case's bytes packed into one UTF-8-style column, in case order. */
export function farmhashSelfTestColumn(data: Uint8Array, cases: SelfTestCase[]): { bytes: Uint8Array; offsets: BigInt64Array } {
  const offsets = new BigInt64Array(cases.length + 1);
  cases.forEach((c, i) => (offsets[i + 1] = offsets[i] + BigInt(c.len)));
  const bytes = new Uint8Array(Number(offsets[cases.length]));
  cases.forEach((c, i) => bytes.set(data.subarray(c.offset, c.offset + c.len), Number(offsets[i])));
  return { bytes, offsets };
}
