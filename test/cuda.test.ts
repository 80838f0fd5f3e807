// CUDA against CPU on the same inputs. Runs where a CUDA device is usable
// (HB_DEVICE=cuda on a GPU machine, a CUDA build: `npm install` where nvcc is found); skipped elsewhere.
import * as hb from '../lib';
import { describeCuda } from './support/devices';
import { farmhashSelfTestCases, farmhashSelfTestColumn, farmhashTestData } from './support/farmhash_selftest';
import { lookupReference, randomRagged, randomSource } from './support/reference';

describeCuda('CUDA backend', () => {
  test('tensors round-trip through device memory', async () => {
    for (const values of [Float32Array.from([1, -2, 3.5]), Int32Array.from([1, 2]), BigInt64Array.from([2n ** 62n, -1n]), Float64Array.from([1e300])]) {
      const t = hb.tensor(values, undefined, undefined, { device: 'cuda' });
      expect(t.device).toBe('cuda:0');
      expect(Array.from((await t.data()) as ArrayLike<unknown>)).toEqual(Array.from(values as ArrayLike<unknown>));
      const copy = await t.clone();
      expect(copy.device).toBe('cuda:0');
      expect(Array.from((await copy.data()) as ArrayLike<unknown>)).toEqual(Array.from(values as ArrayLike<unknown>));
    }
  });

  test('lookups on CUDA equal the CPU kernel bit for bit', async () => {
    const random = randomSource(2024);
    for (const dim of [1, 3, 64, 128, 300]) {
      const rows = 1000;
      const table = new Float32Array(rows * dim).map(() => random() * 2 - 1);
      const onCpu = hb.variable(table, { shape: [rows, dim], device: 'cpu' });
      const onGpu = hb.variable(table, { shape: [rows, dim], device: 'cuda' });
      expect(onGpu.device).toBe('cuda:0');
      for (const weighted of [false, true]) {
        const r = randomRagged(random, 333, rows, 20, weighted);
        for (const combiner of ['sum', 'mean', 'sqrtn'] as const) {
          const ids = hb.ragged(r.values, r.rowSplits, r.weights);
          const cpu = await hb.nn.embeddingLookupSparse(onCpu, ids, { combiner });
          const gpu = await hb.nn.embeddingLookupSparse(onGpu, ids, { combiner });
          expect(gpu.device).toBe('cuda:0');
          const expected = Array.from((await cpu.data()) as Float32Array);
          expect(Array.from((await gpu.data()) as Float32Array)).toEqual(expected);
          expect(expected).toEqual(Array.from(lookupReference({ table, rows, dim, ids: r.values, rowSplits: r.rowSplits, weights: r.weights, combiner })));
        }
      }
    }
  });

  test('maxNorm and int32 ids on CUDA match the CPU', async () => {
    const random = randomSource(7);
    const rows = 300;
    const dim = 40;
    const table = new Float32Array(rows * dim).map(() => random() * 4 - 2);
    const onCpu = hb.variable(table, { shape: [rows, dim], device: 'cpu' });
    const onGpu = hb.variable(table, { shape: [rows, dim], device: 'cuda' });
    const r = randomRagged(random, 100, rows, 8, true);
    const ids = hb.ragged(Int32Array.from(r.values, Number), r.rowSplits, r.weights);
    const cpu = (await (await hb.nn.embeddingLookupSparse(onCpu, ids, { maxNorm: 1.25 })).data()) as Float32Array;
    const gpu = (await (await hb.nn.embeddingLookupSparse(onGpu, ids, { maxNorm: 1.25 })).data()) as Float32Array;
    expect(Array.from(gpu)).toEqual(Array.from(cpu));
  });

  test('maxNorm with bags of up to 100 ids (taken 32 at a time, each row\'s norm once) and rows of 1-4096 floats: the CPU\'s bits', async () => {
    const random = randomSource(11);
    for (const dim of [1, 301, 300, 4096]) {
      const rows = 60;
      const table = new Float32Array(rows * dim).map(() => random() * 4 - 2);
      const onCpu = hb.variable(table, { shape: [rows, dim], device: 'cpu' });
      const onGpu = hb.variable(table, { shape: [rows, dim], device: 'cuda' });
      for (const weighted of [false, true]) {
        const r = randomRagged(random, 12, rows, 100, weighted);
        // Some ids pruned (negative), so some windows keep fewer than 32 rows.
        const values = r.values.map((id, j) => (j % 9 === 4 ? -1n : id));
        expect(Array.from(r.rowSplits).some((s, b) => b > 0 && s - r.rowSplits[b - 1] > 64)).toBe(true);
        for (const combiner of ['sum', 'mean', 'sqrtn'] as const) {
          const ids = hb.ragged(values, r.rowSplits, r.weights);
          const cpu = (await (await hb.nn.embeddingLookupSparse(onCpu, ids, { combiner, maxNorm: 1.5 })).data()) as Float32Array;
          const gpu = (await (await hb.nn.embeddingLookupSparse(onGpu, ids, { combiner, maxNorm: 1.5 })).data()) as Float32Array;
          expect(Buffer.from(gpu.buffer, gpu.byteOffset, gpu.byteLength).equals(Buffer.from(cpu.buffer, cpu.byteOffset, cpu.byteLength))).toBe(true);
        }
      }
    }
  });

  test('initializers on CUDA equal the CPU bit for bit', async () => {
    for (const init of [hb.initializers.randomUniform({ seed: 5 }), hb.initializers.truncatedNormal({ stddev: 0.1, seed: 5 }), hb.initializers.constant(3)]) {
      const cpu = (await hb.variable(init, { shape: [513, 7], device: 'cpu' }).data()) as Float32Array;
      const gpu = (await hb.variable(init, { shape: [513, 7], device: 'cuda' }).data()) as Float32Array;
      expect(Array.from(gpu)).toEqual(Array.from(cpu));
    }
  });

  test('errors on CUDA are the same Errors as on the CPU', async () => {
    const onGpu = hb.variable([[1, 2], [3, 4]], { device: 'cuda', name: 'gpu_errors' });
    await expect(hb.nn.embeddingLookupSparse(onGpu, hb.ragged([[2]]))).rejects.toThrow(/gpu_errors.*ids\.values\[0\] = 2 is out of range/);
    expect(() => hb.setDevice('cuda:99' as 'cuda')).toThrow(/only \d+ CUDA device\(s\) exist/);
  });
});

describeCuda('CUDA string hashing', () => {
  const hash = (values: hb.strings.HashInput, device: 'cpu' | 'cuda') => Array.from(hb.strings.fingerprint64(values, { device }));

  test('FarmHash\'s self-test cases on CUDA equal the CPU and the expected values', () => {
    const cases = farmhashSelfTestCases();
    const data = farmhashTestData();
    const expected = cases.map((c) => BigInt(c.fingerprint64));
    const column = farmhashSelfTestColumn(data, cases);
    expect(hash(column, 'cuda')).toEqual(expected);
    expect(hash(column, 'cpu')).toEqual(expected);
    expect(hash({ bytes: column.bytes, offsets: Int32Array.from(column.offsets, Number) }, 'cuda')).toEqual(expected);
    // Ranges in place in the 1 MiB buffer: offsets that do not start at 0.
    for (const c of cases.filter((_, i) => i % 17 === 0)) {
      const one = { bytes: data, offsets: BigInt64Array.of(BigInt(c.offset), BigInt(c.offset + c.len)) };
      expect(hash(one, 'cuda')).toEqual([BigInt(c.fingerprint64)]);
    }
  });

  test('integers and JS arrays on CUDA equal the CPU', () => {
    const random = randomSource(31);
    const word = () => Math.floor(random() * 2 ** 32);
    const wide = new BigInt64Array(5000);
    for (let i = 0; i < wide.length; i++) wide[i] = BigInt.asIntN(64, (BigInt(word()) << 32n) | BigInt(word()));
    wide.set([0n, -1n, -(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n, -(2n ** 53n) - 3n], 0);
    expect(hash(wide, 'cuda')).toEqual(hash(wide, 'cpu'));
    expect(hash(Array.from(wide.subarray(0, 300)), 'cuda')).toEqual(hash(Array.from(wide.subarray(0, 300), String), 'cpu'));
    const narrow = Int32Array.from({ length: 3000 }, () => word() | 0);
    narrow.set([0, -1, -(2 ** 31), 2 ** 31 - 1], 0);
    expect(hash(narrow, 'cuda')).toEqual(hash(narrow, 'cpu'));
    const mixed = ['', 'héllo', '日本語', 'x'.repeat(200), -5, 101n, 2 ** 53 - 1];
    expect(hash(mixed, 'cuda')).toEqual(hash(mixed, 'cpu'));
  });

  test('toHashBucketFast on CUDA equals the CPU for several bucket counts', () => {
    const values = ['omar', 'stringer', 'marlo', ...Array.from({ length: 1000 }, (_, i) => `feature_${i * 7919}`)];
    const ints = BigInt64Array.from({ length: 1000 }, (_, i) => BigInt(i) * 0x9e3779b97f4a7c15n - (1n << 62n));
    for (const buckets of [1, 10, 1000003, 2n ** 62n + 5n]) {
      expect(Array.from(hb.strings.toHashBucketFast(values, buckets, { device: 'cuda' }))).toEqual(
        Array.from(hb.strings.toHashBucketFast(values, buckets, { device: 'cpu' })),
      );
      const wideInts = BigInt64Array.from(ints, (v) => BigInt.asIntN(64, v));
      expect(Array.from(hb.strings.toHashBucketFast(wideInts, buckets, { device: 'cuda:0' }))).toEqual(
        Array.from(hb.strings.toHashBucketFast(wideInts, buckets, { device: 'cpu' })),
      );
    }
    expect(Array.from(hb.strings.toHashBucketFast(['omar', 'stringer', 'marlo'], 10, { device: 'cuda' }))).toEqual([6n, 4n, 1n]);
  });

  test('empty inputs and bad offsets on CUDA', () => {
    expect(hash([], 'cuda')).toEqual([]);
    expect(hash(new BigInt64Array(0), 'cuda')).toEqual([]);
    expect(hash(new Int32Array(0), 'cuda')).toEqual([]);
    expect(hash({ bytes: new Uint8Array(0), offsets: Int32Array.of(0) }, 'cuda')).toEqual([]);
    expect(hash({ bytes: new Uint8Array(0), offsets: Int32Array.of(0, 0, 0) }, 'cuda')).toEqual(hash(['', ''], 'cpu'));
    const bytes = new Uint8Array(4);
    expect(() => hb.strings.fingerprint64({ bytes, offsets: Int32Array.of(0, 5) }, { device: 'cuda' })).toThrow(/offsets\[1\] = 5 is outside the 4 bytes given/);
    expect(() => hb.strings.fingerprint64({ bytes, offsets: Int32Array.of(0, 3, 2) }, { device: 'cuda' })).toThrow(/offsets must be non-decreasing/);
    expect(() => hb.strings.fingerprint64(['a'], { device: 'cuda:99' as 'cuda' })).toThrow(/fingerprint64: options\.device: 'cuda:99' requested, but only \d+ CUDA device\(s\) exist/);
  });
});
