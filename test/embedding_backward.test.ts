import * as hb from '../lib';
import { describeCuda } from './support/devices';
import { CombinerName, lookupReference, randomRagged, randomSource } from './support/reference';

const f = Math.fround;

/** The lookup's gradient in plain JS: rows in first-appearance order, sums in entry order. */
function gradientReference(ids: BigInt64Array, splits: Int32Array, weights: Float32Array | undefined, combiner: CombinerName, grad: Float32Array, dim: number) {
  const order: number[] = [];
  const rows = new Map<number, Float32Array>();
  for (let b = 0; b + 1 < splits.length; b++) {
    let weightSum = 0;
    let squares = 0;
    const kept: Array<[number, number]> = [];
    for (let j = splits[b]; j < splits[b + 1]; j++) {
      const id = Number(ids[j]);
      const w = weights ? weights[j] : 1;
      if (id < 0 || (weights && combiner !== 'sum' && !(w > 0))) continue;
      kept.push([id, w]);
      weightSum = f(weightSum + w);
      squares = f(squares + f(w * w));
    }
    const divisor = combiner === 'mean' ? weightSum : combiner === 'sqrtn' ? f(Math.sqrt(squares)) : 1;
    // Unweighted, TF's SparseSegmentMeanGrad / SqrtNGrad multiply by float(1/N) / float(1/sqrt(N)).
    const count = kept.length;
    const scale = combiner === 'mean' ? f(1 / count) : combiner === 'sqrtn' ? f(1 / Math.sqrt(count)) : 1;
    for (const [id, w] of kept) {
      if (!rows.has(id)) (rows.set(id, new Float32Array(dim)), order.push(id));
      const row = rows.get(id)!;
      for (let k = 0; k < dim; k++) {
        let c: number;
        if (!weights) c = combiner !== 'sum' ? f(grad[b * dim + k] * scale) : grad[b * dim + k];
        else c = f((combiner !== 'sum' ? f(grad[b * dim + k] / divisor) : grad[b * dim + k]) * w);
        row[k] = f(row[k] + c);
      }
    }
  }
  return { indices: order.map(BigInt), values: order.flatMap((id) => Array.from(rows.get(id)!)) };
}

describe('hb.nn.embeddingLookupSparseGrad', () => {
  for (const combiner of ['sum', 'mean', 'sqrtn'] as const) {
    for (const weighted of [false, true]) {
      test(`equals the JS reference bit for bit: ${combiner}, ${weighted ? 'weighted' : 'unweighted'}`, async () => {
        const random = randomSource(combiner.length * 3 + (weighted ? 1 : 0));
        const rows = 50;
        const dim = 20;
        const table = hb.variable(hb.initializers.randomUniform({ seed: 3 }), { shape: [rows, dim], name: 'grad_table' });
        const r = randomRagged(random, 40, rows, 8, weighted);
        const grad = Float32Array.from({ length: 40 * dim }, () => random() * 2 - 1);
        const slices = await hb.nn.embeddingLookupSparseGrad(table, hb.ragged(r.values, r.rowSplits, r.weights), hb.tensor(grad, [40, dim]), { combiner });
        const expected = gradientReference(r.values, r.rowSplits, r.weights, combiner, grad, dim);
        expect(slices).toBeInstanceOf(hb.IndexedSlices);
        expect(Array.from(slices.indices as BigInt64Array)).toEqual(expected.indices);
        expect(slices.values.shape).toEqual([expected.indices.length, dim]);
        expect(Array.from((await slices.values.data()) as Float32Array)).toEqual(expected.values);
      });
    }
  }

  test.each([[undefined], [0.8]])('agrees with finite differences of the forward lookup (maxNorm %s)', async (maxNorm) => {
    const random = randomSource(77);
    const rows = 6;
    const dim = 4;
    // Rows of norm about 0.3 to 1.7: with maxNorm 0.8 some are clipped and some are not.
    const table = Float32Array.from({ length: rows * dim }, () => 2 * (random() - 0.5));
    const r = randomRagged(random, 5, rows, 4, true);
    const upstream = Float32Array.from({ length: 5 * dim }, () => random() - 0.5);
    // loss = sum(lookup(table) * upstream); d loss / d table[i] by central differences in float64
    const loss = (t: Float32Array) => {
      const out = lookupReference({ table: t, rows, dim, ids: r.values, rowSplits: r.rowSplits, weights: r.weights, combiner: 'sqrtn', maxNorm });
      return out.reduce((s, x, i) => s + x * upstream[i], 0);
    };
    const slices = await hb.nn.embeddingLookupSparseGrad(
      hb.variable(table, { shape: [rows, dim] }),
      hb.ragged(r.values, r.rowSplits, r.weights),
      hb.tensor(upstream, [5, dim]),
      { combiner: 'sqrtn', maxNorm },
    );
    const values = (await slices.values.data()) as Float32Array;
    const analytic = new Float64Array(rows * dim);
    (slices.indices as BigInt64Array).forEach((row, u) => {
      for (let k = 0; k < dim; k++) analytic[Number(row) * dim + k] = values[u * dim + k];
    });
    for (let i = 0; i < rows * dim; i++) {
      const h = 1e-2;
      const plus = Float32Array.from(table);
      const minus = Float32Array.from(table);
      plus[i] += h;
      minus[i] -= h;
      expect(analytic[i]).toBeCloseTo((loss(plus) - loss(minus)) / (2 * h), 3);
    }
  });

  test('a lookup + gradient + optimizer loop learns planted embeddings', async () => {
    // Targets are the mean of planted rows; training the table from zero must drive the
    // squared error of the lookup towards zero.
    const rows = 30;
    const dim = 8;
    const random = randomSource(5);
    const planted = Float32Array.from({ length: rows * dim }, () => random() * 2 - 1);
    const table = hb.variable(hb.initializers.zeros(), { shape: [rows, dim], name: 'learned' });
    const opt = new hb.train.AdagradOptimizer({ learningRate: 0.3 });
    const losses: number[] = [];
    for (let step = 0; step < 60; step++) {
      const r = randomRagged(random, 64, rows, 4, false);
      const ids = hb.ragged(r.values, r.rowSplits);
      const target = lookupReference({ table: planted, rows, dim, ids: r.values, rowSplits: r.rowSplits, combiner: 'mean' });
      const out = (await (await hb.nn.embeddingLookupSparse(table, ids)).data()) as Float32Array;
      const diff = out.map((x, i) => x - target[i]);
      losses.push(diff.reduce((s, x) => s + x * x, 0) / diff.length);
      // loss = sum((out - target)^2) / 2 over each example: d loss / d out = out - target
      const upstream = hb.tensor(diff, [64, dim]);
      await opt.applyGradients([[await hb.nn.embeddingLookupSparseGrad(table, ids, upstream), table]]);
    }
    expect(losses[0]).toBeGreaterThan(0.1);
    expect(losses[losses.length - 1]).toBeLessThan(losses[0] * 0.1);
  });

  test('errors name the argument', async () => {
    const table = hb.variable([[1, 2], [3, 4]], { name: 'bw_errors' });
    const ids = hb.ragged([[0], [1]]);
    await expect(hb.nn.embeddingLookupSparseGrad(table, ids, hb.tensor([[1, 2]]))).rejects.toThrow(
      /embeddingLookupSparseGrad\(bw_errors\): the output gradient must be float32 \[2, 2\], got float32 \[1, 2\]/,
    );
    await expect(hb.nn.embeddingLookupSparseGrad(table, hb.ragged([[5]]), hb.tensor([[1, 2]]))).rejects.toThrow(/ids\.values\[0\] = 5 is out of range/);
    await expect(hb.nn.embeddingLookupSparseGrad(table, ids, [[1, 2]] as unknown as hb.Tensor)).rejects.toThrow(/outputGrad must be a tensor/);
    await expect(hb.nn.embeddingLookupSparseGrad(table, ids, hb.tensor([[1, 2], [3, 4]]), { combiner: 'max' as 'sum' })).rejects.toThrow(/combiner must be/);
  });
});

describeCuda('sparse training on CUDA', () => {
  test('backward and every optimizer give the CPU\'s values', async () => {
    const random = randomSource(9);
    const rows = 200;
    const dim = 16;
    const initial = Float32Array.from({ length: rows * dim }, () => random() - 0.5);
    const makers = [
      () => new hb.train.GradientDescentOptimizer({ learningRate: 0.1 }),
      () => new hb.train.MomentumOptimizer({ learningRate: 0.1, momentum: 0.9, useNesterov: true }),
      () => new hb.train.AdagradOptimizer({ learningRate: 0.1 }),
      () => new hb.train.AdamOptimizer({ learningRate: 0.01 }),
      () => new hb.train.AdamOptimizer({ learningRate: 0.01, lazy: true }),
      () => new hb.train.FtrlOptimizer({ learningRate: 0.1, l1RegularizationStrength: 0.001 }),
      () => new hb.train.RowwiseAdagradOptimizer({ learningRate: 0.1 }),
    ];
    for (const make of makers) {
      const onCpu = hb.variable(initial, { shape: [rows, dim], device: 'cpu' });
      const onGpu = hb.variable(initial, { shape: [rows, dim], device: 'cuda' });
      const cpuOpt = make();
      const gpuOpt = make();
      for (let step = 0; step < 3; step++) {
        const r = randomRagged(random, 50, rows, 10, true);
        const ids = hb.ragged(r.values, r.rowSplits, r.weights);
        const upstream = Float32Array.from({ length: 50 * dim }, () => random() - 0.5);
        const cpuGrad = await hb.nn.embeddingLookupSparseGrad(onCpu, ids, hb.tensor(upstream, [50, dim], undefined, { device: 'cpu' }));
        const gpuGrad = await hb.nn.embeddingLookupSparseGrad(onGpu, ids, hb.tensor(upstream, [50, dim], undefined, { device: 'cuda' }));
        expect(Array.from(gpuGrad.indices as BigInt64Array)).toEqual(Array.from(cpuGrad.indices as BigInt64Array));
        expect(Array.from((await gpuGrad.values.data()) as Float32Array)).toEqual(Array.from((await cpuGrad.values.data()) as Float32Array));
        await cpuOpt.applyGradients([[cpuGrad, onCpu]]);
        await gpuOpt.applyGradients([[gpuGrad, onGpu]]);
      }
      const cpu = (await onCpu.data()) as Float32Array;
      const gpu = (await onGpu.data()) as Float32Array;
      for (let i = 0; i < cpu.length; i++) expect(Math.abs(gpu[i] - cpu[i])).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(cpu[i])));
    }
  });

  test('dense updates on CUDA match the CPU', async () => {
    const random = randomSource(10);
    const initial = Float32Array.from({ length: 64 * 8 }, () => random() - 0.5);
    for (const make of [() => new hb.train.AdamOptimizer({ learningRate: 0.01 }), () => new hb.train.RowwiseAdagradOptimizer({ learningRate: 0.1 })]) {
      const onCpu = hb.variable(initial, { shape: [64, 8], device: 'cpu' });
      const onGpu = hb.variable(initial, { shape: [64, 8], device: 'cuda' });
      const a = make();
      const b = make();
      for (let step = 0; step < 3; step++) {
        const grad = Float32Array.from({ length: 64 * 8 }, () => random() - 0.5);
        await a.applyGradients([[hb.tensor(grad, [64, 8], undefined, { device: 'cpu' }), onCpu]]);
        await b.applyGradients([[hb.tensor(grad, [64, 8], undefined, { device: 'cuda' }), onGpu]]);
      }
      expect(Array.from((await onGpu.data()) as Float32Array)).toEqual(Array.from((await onCpu.data()) as Float32Array));
    }
  });
});
