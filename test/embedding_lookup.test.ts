import * as hb from '../lib';
import { CombinerName, lookupReference, randomRagged, randomSource, typeName } from './support/reference';

const combiners: CombinerName[] = ['sum', 'mean', 'sqrtn'];

function randomTable(random: () => number, rows: number, dim: number): Float32Array {
  const table = new Float32Array(rows * dim);
  for (let i = 0; i < table.length; i++) table[i] = random() * 2 - 1;
  return table;
}

describe('hb.nn.embeddingLookupSparse', () => {
  test('the tf.nn.safe_embedding_lookup_sparse example, worked by hand', async () => {
    const params = hb.variable([[1, 2], [3, 4], [5, 6], [7, 8]], { name: 'by_hand' });
    // row 0: ids 0, 2 (weights 1, 3); row 1: empty; row 2: ids -1 (pruned), 3 (weight 2);
    // row 3: id 1 with weight 0 (pruned for mean/sqrtn, kept by sum).
    const ids = hb.ragged(BigInt64Array.from([0n, 2n, -1n, 3n, 1n]), Int32Array.from([0, 2, 2, 4, 5]), Float32Array.from([1, 3, 5, 2, 0]));
    const sum = await (await hb.nn.embeddingLookupSparse(params, ids, { combiner: 'sum' })).array();
    // 1*[1,2] + 3*[5,6] = [16, 20]; [0,0]; 2*[7,8] = [14, 16]; 0*[3,4] = [0,0]
    expect(sum).toEqual([[16, 20], [0, 0], [14, 16], [0, 0]]);
    const mean = await (await hb.nn.embeddingLookupSparse(params, ids, { combiner: 'mean' })).array();
    // [16,20] / (1+3) = [4, 5]; [14,16] / 2 = [7, 8]; row 3 is empty after pruning
    expect(mean).toEqual([[4, 5], [0, 0], [7, 8], [0, 0]]);
    const sqrtn = (await (await hb.nn.embeddingLookupSparse(params, ids, { combiner: 'sqrtn' })).data()) as Float32Array;
    // [16,20] / sqrt(1+9); [14,16] / sqrt(4)
    // float32 all the way: the divisor is sqrtf(10) rounded to float32.
    const f = Math.fround;
    expect(Array.from(sqrtn)).toEqual([f(16 / f(Math.sqrt(10))), f(20 / f(Math.sqrt(10))), 0, 0, 7, 8, 0, 0]);
    const unweighted = hb.ragged([[0, 2], [], [-1, 3], [1, 1, 1]]);
    expect(await (await hb.nn.embeddingLookupSparse(params, unweighted)).array()).toEqual([[3, 4], [0, 0], [7, 8], [3, 4]]);
    expect(await (await hb.nn.embeddingLookupSparse(params, unweighted, { combiner: 'sqrtn' })).array()).toEqual([
      [f(6 / f(Math.SQRT2)), f(8 / f(Math.SQRT2))],
      [0, 0],
      [7, 8],
      [f(9 / f(Math.sqrt(3))), f(12 / f(Math.sqrt(3)))],
    ]);
  });

  test('maxNorm clips each row as clip_by_norm before combining', async () => {
    const params = hb.variable([[3, 4], [0.3, 0.4], [0, 0]], { name: 'clipped' });
    const ids = hb.ragged([[0], [1], [0, 1], [2]]);
    const out = (await (await hb.nn.embeddingLookupSparse(params, ids, { combiner: 'sum', maxNorm: 1 })).data()) as Float32Array;
    // [3,4] has norm 5 -> [0.6, 0.8]; [0.3,0.4] has norm 0.5 < 1 -> unchanged; zero row stays 0
    const f = Math.fround;
    expect(out[0]).toBeCloseTo(0.6, 6);
    expect(out[1]).toBeCloseTo(0.8, 6);
    expect(out[2]).toBeCloseTo(0.3, 6);
    expect(out[3]).toBeCloseTo(0.4, 6);
    expect(out[4]).toBe(f(out[0] + out[2]));
    expect(Array.from(out.subarray(6))).toEqual([0, 0]);
  });

  test('a batch large enough to be shared by every thread equals the JS reference bit for bit', async () => {
    // 6000 bags of 0-3 ids (~7600): above the size from which the pool's threads split the bags.
    const random = randomSource(77);
    const rows = 5000;
    const dim = 64;
    const table = randomTable(random, rows, dim);
    const params = hb.variable(table, { shape: [rows, dim], name: 'shared_batch' });
    const r = randomRagged(random, 6000, rows, 3, false);
    for (const combiner of combiners) {
      const out = await hb.nn.embeddingLookupSparse(params, hb.ragged(r.values, r.rowSplits), { combiner });
      const expected = lookupReference({ table, rows, dim, ids: r.values, rowSplits: r.rowSplits, weights: r.weights, combiner });
      expect(Array.from((await out.data()) as Float32Array)).toEqual(Array.from(expected));
    }
  });

  // 8..128 take the fixed-width (register) paths, the others the generic one.
  for (const dim of [1, 3, 8, 16, 32, 64, 128, 300]) {
    for (const combiner of combiners) {
      for (const weighted of [false, true]) {
        test(`random batches equal the JS reference bit for bit: dim ${dim}, ${combiner}, ${weighted ? 'weighted' : 'unweighted'}`, async () => {
          const random = randomSource(dim * 131 + combiner.length * 7 + (weighted ? 1 : 0));
          const rows = 257;
          const table = randomTable(random, rows, dim);
          const params = hb.variable(table, { shape: [rows, dim], name: `t${dim}` });
          const r = randomRagged(random, 97, rows, 12, weighted);
          const ids = hb.ragged(r.values, r.rowSplits, r.weights);
          const out = await hb.nn.embeddingLookupSparse(params, ids, { combiner });
          expect(out.shape).toEqual([97, dim]);
          expect(out.dtype).toBe('float32');
          const got = await out.data();
          expect(typeName(got)).toBe('Float32Array');
          const expected = lookupReference({ table, rows, dim, ids: r.values, rowSplits: r.rowSplits, weights: r.weights, combiner });
          expect(Array.from(got as Float32Array)).toEqual(Array.from(expected));
        });
      }
    }
  }

  // The CPU kernel checks ids, splits and weights as it reads them, in each of its
  // variants; the Error names the first offender whichever thread met it.
  test('every lookup variant refuses an id past the table and a NaN weight, naming the first, and reads on', async () => {
    const rows = 50;
    for (const dim of [3, 16, 64]) {
      const table = randomTable(randomSource(dim), rows, dim);
      const params = hb.variable(table, { shape: [rows, dim], name: `refusing_${dim}` });
      for (const weighted of [false, true]) {
        for (const maxNorm of [undefined, 1.5]) {
          for (const int32 of [false, true]) {
            const r = randomRagged(randomSource(dim + 3), 40, rows, 6, weighted);
            const n = r.values.length;
            const values = BigInt64Array.from(r.values);
            values[n >> 1] = BigInt(rows);
            values[n - 1] = BigInt(rows + 7);
            const ids = int32 ? Int32Array.from(values, Number) : values;
            const call = (v: BigInt64Array | Int32Array, w?: Float32Array) =>
              hb.nn.embeddingLookupSparse(params, hb.ragged(v, r.rowSplits, w), { combiner: 'mean', maxNorm });
            await expect(call(ids, r.weights)).rejects.toThrow(
              `embeddingLookupSparse(refusing_${dim}): ids.values[${n >> 1}] = ${rows} is out of range: the table has ${rows} rows`,
            );
            if (weighted) {
              // On a pruned (negative) id too: a NaN weight is refused wherever it is.
              const weights = Float32Array.from(r.weights!);
              weights[n - 2] = NaN;
              const pruned = BigInt64Array.from(r.values);
              pruned[n - 2] = -1n;
              await expect(call(int32 ? Int32Array.from(pruned, Number) : pruned, weights)).rejects.toThrow(
                `embeddingLookupSparse(refusing_${dim}): ids.weights[${n - 2}] is NaN`,
              );
            }
            // A split past the ids (then back down) is refused before that bag is read.
            const past = Int32Array.from(r.rowSplits);
            past[1] = n + 5;
            await expect(
              hb.nn.embeddingLookupSparse(params, new hb.Ragged(int32 ? Int32Array.from(r.values, Number) : r.values, past, r.weights), { combiner: 'mean', maxNorm }),
            ).rejects.toThrow(`embeddingLookupSparse(refusing_${dim}): ids.rowSplits must be non-decreasing, but rowSplits[2] = ${past[2]} < rowSplits[1] = ${n + 5}`);
            const good = await call(r.values, r.weights);
            const expected = lookupReference({ table, rows, dim, ids: r.values, rowSplits: r.rowSplits, weights: r.weights, combiner: 'mean', maxNorm });
            expect(Array.from((await good.data()) as Float32Array)).toEqual(Array.from(expected));
            good.dispose();
          }
        }
      }
      expect(Array.from((await (await params.read()).data()) as Float32Array)).toEqual(Array.from(table));
    }
  });

  test.each([24, 32])('maxNorm on random rows equals the JS reference (dim %i)', async (dim) => {
    const random = randomSource(99);
    const rows = 64;
    const table = randomTable(random, rows, dim);
    const params = hb.variable(table, { shape: [rows, dim] });
    const r = randomRagged(random, 50, rows, 6, true);
    for (const combiner of combiners) {
      const out = await hb.nn.embeddingLookupSparse(params, hb.ragged(r.values, r.rowSplits, r.weights), { combiner, maxNorm: 1.5 });
      const expected = lookupReference({ table, rows, dim, ids: r.values, rowSplits: r.rowSplits, weights: r.weights, combiner, maxNorm: 1.5 });
      expect(Array.from((await out.data()) as Float32Array)).toEqual(Array.from(expected));
    }
  });

  test('int32 ids give the same result as int64 ids', async () => {
    const random = randomSource(5);
    const table = randomTable(random, 40, 8);
    const params = hb.variable(table, { shape: [40, 8] });
    const r = randomRagged(random, 30, 40, 5, false);
    const as64 = await hb.nn.embeddingLookupSparse(params, hb.ragged(r.values, r.rowSplits));
    const as32 = await hb.nn.embeddingLookupSparse(params, hb.ragged(Int32Array.from(r.values, Number), r.rowSplits));
    expect(Array.from((await as32.data()) as Float32Array)).toEqual(Array.from((await as64.data()) as Float32Array));
  });

  test('an empty batch and a batch of empty rows', async () => {
    const params = hb.variable([[1, 2, 3]]);
    const none = await hb.nn.embeddingLookupSparse(params, hb.ragged(new BigInt64Array(0), Int32Array.from([0])));
    expect(none.shape).toEqual([0, 3]);
    expect(Array.from((await none.data()) as Float32Array)).toEqual([]);
    const empty = await hb.nn.embeddingLookupSparse(params, hb.ragged([[], []]));
    expect(await empty.array()).toEqual([[0, 0, 0], [0, 0, 0]]);
  });

  test('a lookup queued right after an initializer sees the initialized values', async () => {
    const params = hb.variable(hb.initializers.constant(0.5), { shape: [1000, 16] });
    const out = await hb.nn.embeddingLookupSparse(params, hb.ragged([[0, 999], [5]]), { combiner: 'sum' });
    const values = Array.from((await out.data()) as Float32Array);
    expect(values.slice(0, 16)).toEqual(new Array(16).fill(1));
    expect(values.slice(16)).toEqual(new Array(16).fill(0.5));
  });

  test('a small lookup called while an assign is still queued sees the assigned values', async () => {
    // A small lookup runs on the JS thread when nothing is queued on the host; one called
    // behind a queued write (here a 51 MB assign) must wait for it all the same.
    const rows = 400_000;
    const dim = 32;
    const params = hb.variable(hb.initializers.zeros(), { shape: [rows, dim] });
    await params.read().then((t) => t.dispose());
    for (const fill of [2, 3]) {
      const assign = params.assign(hb.tensor(new Float32Array(rows * dim).fill(fill), [rows, dim]));
      const out = await hb.nn.embeddingLookupSparse(params, hb.ragged([[0, rows - 1], [7]]), { combiner: 'sum' });
      await assign;
      const values = Array.from((await out.data()) as Float32Array);
      expect(values.slice(0, dim)).toEqual(new Array(dim).fill(2 * fill));
      expect(values.slice(dim)).toEqual(new Array(dim).fill(fill));
    }
  });

  test('a small lookup with nothing queued settles before any turn of the event loop; a large one only on one', async () => {
    // On the host even in the emulated CUDA suite: only host lookups take the fast path.
    const params = hb.variable(hb.initializers.constant(0.5), { shape: [1000, 16], device: 'cpu' });
    await params.read().then((t) => t.dispose());
    const settledWithin = async (lookup: Promise<hb.Tensor>) => {
      let settled = false;
      void lookup.then((t) => ((settled = true), t.dispose()));
      for (let i = 0; i < 10; i++) await Promise.resolve();
      const early = settled;
      await lookup;
      return early;
    };
    // "Nothing queued" needs the host worker to have settled its last task: on a loaded
    // machine (CI's parallel suites) 20 ms may not do, so a few tries, 20 ms apart.
    let smallEarly = false;
    for (let attempt = 0; attempt < 10 && !smallEarly; attempt++) {
      await new Promise((r) => setTimeout(r, 20));
      smallEarly = await settledWithin(hb.nn.embeddingLookupSparse(params, hb.ragged([[0, 999], [5]]), { combiner: 'sum' }));
    }
    expect(smallEarly).toBe(true);
    // 150000 bags of dim 16 hold more than 2^22 floats: the host queue runs it.
    const bags = 150_000;
    const large = hb.ragged(new BigInt64Array(bags).fill(3n), Int32Array.from({ length: bags + 1 }, (_, i) => i));
    expect(await settledWithin(hb.nn.embeddingLookupSparse(params, large))).toBe(false);
  });

  test('a loop of small awaited lookups and reads still lets the event loop turn', async () => {
    // Each settles on the JS thread, within the awaiting microtasks; after 2 ms of such
    // work one goes through the host queue, and the loop turns while it settles. Without
    // that bound the timer below never ran before the loop's end (checked).
    const params = hb.variable(hb.initializers.constant(0.5), { shape: [100_000, 16], device: 'cpu' });
    await params.read().then((t) => t.dispose());
    await new Promise((r) => setTimeout(r, 20)); // the host worker has settled its last task
    const ids = hb.ragged(BigInt64Array.from({ length: 4096 }, (_, i) => BigInt((i * 7919) % 100_000)), Int32Array.from({ length: 4097 }, (_, i) => i));
    const into = new Float32Array(4096 * 16);
    let timerRan = false;
    const timer = setTimeout(() => (timerRan = true), 0);
    const start = Date.now();
    let lookups = 0;
    try {
      while (!timerRan && Date.now() - start < 2000) {
        const out = await hb.nn.embeddingLookupSparse(params, ids, { combiner: 'sum' });
        await out.data(into);
        out.dispose();
        lookups++;
      }
    } finally {
      clearTimeout(timer);
    }
    expect(timerRan).toBe(true);
    expect(into[0]).toBe(0.5);
    expect(lookups).toBeGreaterThan(0);
  });

  test('small and large lookups reject bad ids with the same Error, never throwing from the call', async () => {
    // The small one settles on the JS thread, the large one on the host queue.
    const params = hb.variable(hb.initializers.ones(), { shape: [100, 8], name: 'bad_ids_table' });
    await params.read().then((t) => t.dispose());
    await new Promise((r) => setTimeout(r, 20)); // the host worker has settled its last task
    for (const bags of [2, 300_000]) {
      const values = new BigInt64Array(bags).fill(3n);
      // The first bad id is named, though the lookup's threads meet the later one too.
      values[bags - 1] = 100n;
      values[bags >> 1] = 1000n;
      const call = () => hb.nn.embeddingLookupSparse(params, hb.ragged(values, Int32Array.from({ length: bags + 1 }, (_, i) => i)));
      let pending: Promise<unknown> | undefined;
      expect(() => (pending = call())).not.toThrow();
      await expect(pending).rejects.toThrow(
        `embeddingLookupSparse(bad_ids_table): ids.values[${bags >> 1}] = 1000 is out of range: the table has 100 rows`,
      );
    }
  });

  test('concurrent lookups resolve with the same values as one at a time', async () => {
    const random = randomSource(11);
    const table = randomTable(random, 500, 32);
    const params = hb.variable(table, { shape: [500, 32] });
    const batches = Array.from({ length: 8 }, () => randomRagged(random, 64, 500, 10, true));
    const together = await Promise.all(batches.map((r) => hb.nn.embeddingLookupSparse(params, hb.ragged(r.values, r.rowSplits, r.weights))));
    for (let i = 0; i < batches.length; i++) {
      const r = batches[i];
      const expected = lookupReference({ table, rows: 500, dim: 32, ids: r.values, rowSplits: r.rowSplits, weights: r.weights, combiner: 'mean' });
      expect(Array.from((await together[i].data()) as Float32Array)).toEqual(Array.from(expected));
    }
  });

  test('the call returns at once and the lookup settles from the event loop, never inside the call', async () => {
    const rows = 200_000;
    const dim = 64;
    const params = hb.variable(hb.initializers.randomUniform({ seed: 1 }), { shape: [rows, dim] });
    const batch = 16384;
    const perRow = 100;
    const values = new BigInt64Array(batch * perRow);
    let x = 12345n;
    for (let i = 0; i < values.length; i++) {
      x = (x * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
      values[i] = (x >> 33n) % BigInt(rows);
    }
    const splits = Int32Array.from({ length: batch + 1 }, (_, i) => i * perRow);
    const order: string[] = [];
    const pending = hb.nn.embeddingLookupSparse(params, hb.ragged(values, splits)).then(() => order.push('lookup'));
    // The lookup settles through the event loop (its completion is an async handle), so
    // the microtasks queued behind the call run before it: no timing involved. Whether an
    // immediate queued after the call runs first depends on how fast the device is (a GPU
    // can finish within the same turn of the loop), so the test does not ask.
    Promise.resolve().then(() => order.push('microtask'));
    order.push('returned');
    await pending;
    expect(order).toEqual(['returned', 'microtask', 'lookup']);
  });

  test('a pending lookup keeps the process alive until it resolves', () => {
    const { execFileSync } = require('child_process') as typeof import('child_process');
    const out = execFileSync(process.execPath, ['-e', `
      const hb = require(${JSON.stringify(require.resolve('../dist'))});
      const v = hb.variable(hb.initializers.ones(), { shape: [100000, 32] });
      hb.nn.embeddingLookupSparse(v, hb.ragged([[1, 2, 3]]), { combiner: 'sum' })
        .then(t => t.data()).then(d => console.log('resolved', d[0]));
    `], { encoding: 'utf8', env: { ...process.env } });
    expect(out.trim()).toBe('resolved 3');
  });

  test('a worker thread that exits with lookups in flight does not take the process down', () => {
    const { execFileSync } = require('child_process') as typeof import('child_process');
    const out = execFileSync(process.execPath, ['-e', `
      const { Worker } = require('worker_threads');
      const code = \`
        const hb = require(${JSON.stringify(require.resolve('../dist'))});
        const v = hb.variable(hb.initializers.ones(), { shape: [200000, 64] });
        const ids = hb.ragged(new BigInt64Array(400000).fill(7n), Int32Array.from({ length: 4001 }, (_, i) => i * 100));
        for (let i = 0; i < 20; i++) hb.nn.embeddingLookupSparse(v, ids);
        process.exit(0);
      \`;
      const w = new Worker(code, { eval: true });
      w.on('exit', async () => {
        const hb = require(${JSON.stringify(require.resolve('../dist'))});
        const t = await hb.nn.embeddingLookupSparse(hb.variable([[1, 2]]), hb.ragged([[0, 0]]), { combiner: 'sum' });
        console.log('main thread fine', JSON.stringify(await t.array()));
      });
    `], { encoding: 'utf8' });
    expect(out.trim()).toBe('main thread fine [[2,4]]');
  });

  describe('errors name the argument', () => {
    const params = hb.variable([[1, 2], [3, 4], [5, 6]], { name: 'errors_table' });

    test('an id beyond the table', async () => {
      await expect(hb.nn.embeddingLookupSparse(params, hb.ragged([[0, 1], [3]]))).rejects.toThrow(
        /errors_table.*ids\.values\[2\] = 3 is out of range: the table has 3 rows/,
      );
      await expect(hb.nn.embeddingLookupSparse(params, hb.ragged(Int32Array.from([7]), [0, 1]))).rejects.toThrow(/ids\.values\[0\] = 7/);
      // Ids beyond 2^53 are checked as int64, not as doubles.
      await expect(hb.nn.embeddingLookupSparse(params, hb.ragged(BigInt64Array.from([2n ** 62n]), [0, 1]))).rejects.toThrow(
        /ids\.values\[0\] = 4611686018427387904 is out of range/,
      );
    });

    test('rowSplits that do not add up', async () => {
      const values = BigInt64Array.from([0n, 1n, 2n]);
      expect(() => hb.ragged(values, Int32Array.from([0, 2]))).toThrow(/rowSplits ends at 2 but values has 3/);
      // Built directly, bypassing hb.ragged's checks, so the native ones are reached.
      const { Ragged } = hb;
      await expect(hb.nn.embeddingLookupSparse(params, new Ragged(values, Int32Array.from([0, 4])))).rejects.toThrow(
        /ids\.rowSplits ends at 4 but ids\.values has 3 values/,
      );
      await expect(hb.nn.embeddingLookupSparse(params, new Ragged(values, Int32Array.from([1, 3])))).rejects.toThrow(/ids\.rowSplits\[0\] must be 0, got 1/);
      await expect(hb.nn.embeddingLookupSparse(params, new Ragged(values, Int32Array.from([0, 2, 1, 3])))).rejects.toThrow(
        /ids\.rowSplits must be non-decreasing, but rowSplits\[2\] = 1 < rowSplits\[1\] = 2/,
      );
      // Splits out of order that reach past the ids (or below 0) are refused before any
      // bag's ids are read.
      await expect(hb.nn.embeddingLookupSparse(params, new Ragged(values, Int32Array.from([0, 9, 3])))).rejects.toThrow(
        /ids\.rowSplits must be non-decreasing, but rowSplits\[2\] = 3 < rowSplits\[1\] = 9/,
      );
      await expect(hb.nn.embeddingLookupSparse(params, new Ragged(values, Int32Array.from([0, -5, 3])))).rejects.toThrow(
        /ids\.rowSplits must be non-decreasing, but rowSplits\[1\] = -5 < rowSplits\[0\] = 0/,
      );
      await expect(hb.nn.embeddingLookupSparse(params, new Ragged(values, new Int32Array(0)))).rejects.toThrow(/at least one value/);
    });

    test('weights of the wrong length, kind or value', async () => {
      const { Ragged } = hb;
      const values = BigInt64Array.from([0n, 1n]);
      expect(() => hb.ragged(values, [0, 2], [1])).toThrow(/weights has 1 values but values has 2/);
      await expect(hb.nn.embeddingLookupSparse(params, new Ragged(values, Int32Array.from([0, 2]), Float32Array.from([1])))).rejects.toThrow(
        /ids\.weights has 1 values but ids\.values has 2/,
      );
      await expect(hb.nn.embeddingLookupSparse(params, hb.ragged(values, [0, 2], [1, NaN]))).rejects.toThrow(/ids\.weights\[1\] is NaN/);
      expect(() => hb.ragged(values, [0, 2], Float64Array.from([1, 2]) as unknown as Float32Array)).toThrow(/weights must be a Float32Array, got float64/);
      await expect(
        hb.nn.embeddingLookupSparse(params, new Ragged(values, Int32Array.from([0, 2]), Float64Array.from([1, 2]) as unknown as Float32Array)),
      ).rejects.toThrow(/ids\.weights must be a Float32Array, got float64/);
    });

    test('ids of the wrong kind', async () => {
      expect(() => hb.ragged(Float32Array.from([1]) as unknown as BigInt64Array, [0, 1])).toThrow(/values must hold integer ids.*float32/);
      expect(() => hb.ragged([1.5], [0, 1])).toThrow(/values\[0\] = 1.5 is not an integer id/);
      const { Ragged } = hb;
      await expect(
        hb.nn.embeddingLookupSparse(params, new Ragged(Float32Array.from([1]) as unknown as BigInt64Array, Int32Array.from([0, 1]))),
      ).rejects.toThrow(/ids\.values must hold int64/);
      await expect(
        hb.nn.embeddingLookupSparse(params, new Ragged(new Uint8Array([1]) as unknown as BigInt64Array, Int32Array.from([0, 1]))),
      ).rejects.toThrow(/ids\.values must be a Float32Array, Float64Array, Int32Array or BigInt64Array/);
      await expect(hb.nn.embeddingLookupSparse(params, [[1]] as unknown as hb.Ragged)).rejects.toThrow(/ids must be an hb\.ragged/);
    });

    test('bad params, combiner or maxNorm', async () => {
      const ids = hb.ragged([[0]]);
      await expect(hb.nn.embeddingLookupSparse(hb.tensor([1, 2, 3]), ids)).rejects.toThrow(/params must be a float32 \[rows, dim\] variable, got float32 \[3\]/);
      await expect(hb.nn.embeddingLookupSparse(hb.tensor(Int32Array.from([1, 2]), [1, 2]), ids)).rejects.toThrow(/got int32 \[1, 2\]/);
      await expect(hb.nn.embeddingLookupSparse({} as hb.Tensor, ids)).rejects.toThrow(/params must be a variable or tensor/);
      await expect(hb.nn.embeddingLookupSparse(params, ids, { combiner: 'max' as 'sum' })).rejects.toThrow(/combiner must be 'sum', 'mean' or 'sqrtn', got "max"/);
      await expect(hb.nn.embeddingLookupSparse(params, ids, { maxNorm: NaN })).rejects.toThrow(/maxNorm must be a finite number > 0/);
      await expect(hb.nn.embeddingLookupSparse(params, ids, { maxNorm: -1 })).rejects.toThrow(/maxNorm/);
    });

    test('a table too wide for an output of batch x dim is refused before allocating', async () => {
      // [0, 2^49]: no rows, but batch x dim would overflow the output's byte count.
      const wide = hb.tensor(new Float32Array(0), [0, 2 ** 49]);
      const ids = new hb.Ragged(new BigInt64Array(0), new Int32Array(2 ** 15 + 1));
      await expect(hb.nn.embeddingLookupSparse(wide, ids)).rejects.toThrow(/the table's dim must be in \[1, 2\^24\], got 562949953421312/);
    });

    test('ids changed after the call cannot reach the kernel unchecked', async () => {
      // Alone, the lookup runs on the JS thread before the call returns; behind a lookup
      // too large for that it waits on the host queue, over copies of the arrays.
      const wide = hb.variable(hb.initializers.ones(), { shape: [1, 16], device: 'cpu' });
      await wide.read().then((t) => t.dispose());
      for (const queued of [false, true]) {
        await new Promise((r) => setTimeout(r, 20)); // the host worker has settled its last task
        const values = BigInt64Array.from([0n, 1n]);
        const splits = Int32Array.from([0, 1, 2]);
        const ahead = queued
          ? hb.nn.embeddingLookupSparse(wide, hb.ragged(new BigInt64Array(300_000), Int32Array.from({ length: 300_001 }, (_, i) => i)))
          : undefined;
        const pending = hb.nn.embeddingLookupSparse(params, hb.ragged(values, splits));
        let settled = false;
        void pending.then(() => (settled = true));
        values[1] = 1_000_000n; // after the checks: the lookup uses its own copy
        splits[1] = 2_000_000_000;
        structuredClone(values.buffer, { transfer: [values.buffer] });
        for (let i = 0; i < 10; i++) await Promise.resolve(); // no turn of the event loop
        // On the emulated CUDA device the table is a device one: always queued.
        if (hb.currentDevice() === 'cpu') expect(settled).toBe(!queued);
        expect(await (await pending).array()).toEqual([[1, 2], [3, 4]]);
        (await ahead)?.dispose();
      }
      wide.dispose();
    });

    test('a disposed table', async () => {
      const t = hb.variable([[1]], { name: 'gone' });
      t.dispose();
      await expect(hb.nn.embeddingLookupSparse(t, hb.ragged([[0]]))).rejects.toThrow(/params has been disposed/);
    });
  });
});
