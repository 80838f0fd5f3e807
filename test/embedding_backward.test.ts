import * as hb from '../lib';
import { native } from '../lib/native';
import { cudaEmulated, describeCuda, loadedAddonPath } from './support/devices';
import { BlockedRowSum, CombinerName, lookupReference, randomRagged, randomSource } from './support/reference';

const f = Math.fround;

/**
 * The lookup's gradient in plain JS: rows in first-appearance order, sums in entry order,
 * blocked by 256 entries (`plain`: not blocked).
 */
function gradientReference(ids: BigInt64Array, splits: Int32Array, weights: Float32Array | undefined, combiner: CombinerName, grad: Float32Array, dim: number, plain = false) {
  const order: number[] = [];
  const rows = new Map<number, BlockedRowSum>();
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
      if (!rows.has(id)) (rows.set(id, new BlockedRowSum(dim, plain)), order.push(id));
      rows.get(id)!.add((k) => {
        if (!weights) return combiner !== 'sum' ? f(grad[b * dim + k] * scale) : grad[b * dim + k];
        return f((combiner !== 'sum' ? f(grad[b * dim + k] / divisor) : grad[b * dim + k]) * w);
      });
    }
  }
  return { indices: order.map(BigInt), values: order.flatMap((id) => Array.from(rows.get(id)!.value())) };
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

  // Few distinct rows are summed in one pass over the entries, many row by row
  // (sparse_grad_cpu.cc): 9000 bags over 20000 other rows take the second way.
  test.each([
    ['sum', false, 700, 40],
    ['mean', true, 512, 40],
    ['sqrtn', false, 300, 40],
    ['sum', true, 9000, 20_000],
    ['mean', false, 9000, 20_000],
  ] as Array<[CombinerName, boolean, number, number]>)('a row in more than 256 bags sums its entries in blocks of 256, as on a GPU (%s, weighted %s, %d bags, %d other rows)', async (combiner, weighted, batch, others) => {
    // Row 3 in every bag, row 4 in every other: under a power law a batch's top row is
    // in thousands of bags, and its blocks are summed in parallel on a GPU.
    const random = randomSource(batch);
    const dim = 6;
    const ids: bigint[] = [];
    const splits = [0];
    for (let b = 0; b < batch; b++) {
      ids.push(3n, BigInt(5 + Math.floor(random() * others)));
      if (b % 2 === 0) ids.push(4n);
      splits.push(ids.length);
    }
    const values = BigInt64Array.from(ids);
    const rowSplits = Int32Array.from(splits);
    const weights = weighted ? Float32Array.from(ids, () => random() * 2) : undefined;
    // Terms of mixed magnitudes, so the order of the adds shows in the last bits.
    const grad = Float32Array.from({ length: batch * dim }, (_, i) => (random() - 0.5) * (i % 7 === 0 ? 1000 : 1));
    const table = hb.variable(hb.initializers.zeros(), { shape: [others + 10, dim], name: 'blocked_rows' });
    const slices = await hb.nn.embeddingLookupSparseGrad(table, hb.ragged(values, rowSplits, weights), hb.tensor(grad, [batch, dim]), { combiner });
    const blocked = gradientReference(values, rowSplits, weights, combiner, grad, dim);
    const plain = gradientReference(values, rowSplits, weights, combiner, grad, dim, true);
    expect(Array.from(slices.indices as BigInt64Array)).toEqual(blocked.indices);
    expect(Array.from((await slices.values.data()) as Float32Array)).toEqual(blocked.values);
    // Row 3 comes first: its blocked sum is not the plain one, so the test tells them apart.
    expect(blocked.values.slice(0, dim)).not.toEqual(plain.values.slice(0, dim));
  });

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

// ---- The fused backward + update of a compiled step, and sparse updates on CUDA ----

const optimizerMakers: Array<[string, () => hb.train.Optimizer]> = [
  ['GradientDescent', () => new hb.train.GradientDescentOptimizer({ learningRate: 0.1 })],
  ['Momentum', () => new hb.train.MomentumOptimizer({ learningRate: 0.1, momentum: 0.9 })],
  ['Momentum (Nesterov)', () => new hb.train.MomentumOptimizer({ learningRate: 0.1, momentum: 0.9, useNesterov: true })],
  ['Adagrad', () => new hb.train.AdagradOptimizer({ learningRate: 0.1 })],
  ['Adam', () => new hb.train.AdamOptimizer({ learningRate: 0.01 })],
  ['Adam (lazy)', () => new hb.train.AdamOptimizer({ learningRate: 0.01, lazy: true })],
  ['Ftrl', () => new hb.train.FtrlOptimizer({ learningRate: 0.1, l1RegularizationStrength: 0.001, l2RegularizationStrength: 0.01 })],
  ['RowwiseAdagrad', () => new hb.train.RowwiseAdagradOptimizer({ learningRate: 0.1 })],
];


interface LookupSpec {
  ids: BigInt64Array | Int32Array;
  rowSplits: Int32Array;
  weights?: Float32Array;
  combiner: CombinerName;
  maxNorm?: number;
  grad: Float32Array; // [batch, dim]
}

interface LookupOptions {
  batch: number;
  combiner: CombinerName;
  weighted?: boolean;
  int32?: boolean;
  maxNorm?: number;
  /**
   * 'pruned': every id negative; 'zeroWeights': every weight 0 (pruned by mean); 'hot': row 5
   * in every bag and row 6 in two of three, as a power law does to a batch's top ids (on a
   * GPU, rows of more than 64 entries are summed by a block each).
   */
  kind?: 'pruned' | 'zeroWeights' | 'hot';
}

function hotRagged(random: () => number, batch: number, rows: number, weighted: boolean) {
  const ids: bigint[] = [];
  const splits = [0];
  for (let bag = 0; bag < batch; bag++) {
    ids.push(5n, BigInt(Math.floor(random() * rows)));
    if (bag % 3 !== 0) ids.push(6n);
    splits.push(ids.length);
  }
  const weights = weighted ? Float32Array.from(ids, () => random() * 2) : undefined;
  return { values: BigInt64Array.from(ids), rowSplits: Int32Array.from(splits), weights };
}

function makeLookup(random: () => number, rows: number, dim: number, o: LookupOptions): LookupSpec {
  const r = o.kind === 'hot' ? hotRagged(random, o.batch, rows, o.weighted ?? false) : randomRagged(random, o.batch, rows, 8, o.weighted ?? false);
  let ids: BigInt64Array | Int32Array = r.values;
  if (o.kind === 'pruned') ids = r.values.map((x) => -1n - (x < 0n ? -x : x));
  if (o.int32) ids = Int32Array.from(ids, Number);
  let weights = r.weights;
  if (o.kind === 'zeroWeights') weights = new Float32Array(ids.length);
  const grad = Float32Array.from({ length: o.batch * dim }, () => random() - 0.5);
  return { ids, rowSplits: r.rowSplits, weights, combiner: o.combiner, maxNorm: o.maxNorm, grad };
}

function raggedOf(l: LookupSpec) {
  return hb.ragged(l.ids, l.rowSplits, l.weights);
}

function gradTensor(l: LookupSpec, dim: number, device: string) {
  return hb.tensor(l.grad, [l.rowSplits.length - 1, dim], undefined, { device });
}

/** The compiled step's update of `table` (native/train/lookup_backward_apply.h). */
async function fusedUpdate(opt: hb.train.Optimizer, table: hb.Variable, lookups: LookupSpec[], device: string) {
  const [s0, s1] = opt.slotVariables(table);
  const dim = table.shape[1];
  await native.lookupBackwardApply(
    opt.stepHyper(),
    table.handle,
    table.name,
    s0?.handle ?? null,
    s1?.handle ?? null,
    lookups.map((l) => ({
      values: l.ids,
      rowSplits: l.rowSplits,
      weights: l.weights ?? null,
      combiner: l.combiner,
      maxNorm: l.maxNorm ?? 0,
      outputGrad: gradTensor(l, dim, device).handle,
    })),
  );
  opt.afterStep();
}

/** What a compiled step did before the fused update: each lookup's IndexedSlices, stacked, then applyGradients. */
async function eagerUpdate(opt: hb.train.Optimizer, table: hb.Variable, lookups: LookupSpec[], device: string) {
  const dim = table.shape[1];
  const indices: bigint[] = [];
  const values: number[] = [];
  for (const l of lookups) {
    const g = await hb.nn.embeddingLookupSparseGrad(table, raggedOf(l), gradTensor(l, dim, device), { combiner: l.combiner, maxNorm: l.maxNorm });
    indices.push(...(g.indices as BigInt64Array));
    values.push(...((await g.values.data()) as Float32Array));
  }
  const slices = new hb.IndexedSlices(hb.tensor(Float32Array.from(values), [indices.length, dim], undefined, { device }), BigInt64Array.from(indices));
  await opt.applyGradients([[slices, table]]);
}

async function stateOf(opt: hb.train.Optimizer, table: hb.Variable): Promise<Float32Array[]> {
  return Promise.all([table, ...opt.slotVariables(table)].map(async (v) => (await v.data()) as Float32Array));
}

function expectClose(actual: Float32Array, expected: Float32Array, what: string) {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    if (!(Math.abs(actual[i] - expected[i]) <= 1e-6 * Math.max(1, Math.abs(expected[i])))) {
      throw new Error(`${what}[${i}]: ${actual[i]} vs ${expected[i]}`);
    }
  }
}

function bitsOf(values: Float32Array): Buffer {
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
}

interface FusedCase {
  name: string;
  rows: number;
  dim: number;
  lookups: LookupOptions[];
}

const fusedCases: FusedCase[] = [
  { name: 'one lookup', rows: 30, dim: 4, lookups: [{ batch: 12, combiner: 'mean' }] },
  {
    name: 'three lookups of one table (weighted sum, int32 sqrtn, all pruned)',
    rows: 25,
    dim: 5,
    lookups: [
      { batch: 10, combiner: 'sum', weighted: true },
      { batch: 8, combiner: 'sqrtn', int32: true },
      { batch: 4, combiner: 'mean', kind: 'pruned' },
    ],
  },
  {
    name: 'maxNorm, two lookups',
    rows: 20,
    dim: 6,
    lookups: [
      { batch: 9, combiner: 'mean', weighted: true, maxNorm: 0.6 },
      { batch: 7, combiner: 'sum', maxNorm: 0.9 },
    ],
  },
  {
    name: 'dim 1, an empty batch and zero weights',
    rows: 15,
    dim: 1,
    lookups: [
      { batch: 10, combiner: 'sum' },
      { batch: 0, combiner: 'mean' },
      { batch: 5, combiner: 'mean', weighted: true, kind: 'zeroWeights' },
      { batch: 6, combiner: 'mean', weighted: true },
    ],
  },
];

describe('the fused lookup backward + sparse update (a compiled step\'s table update)', () => {
  for (const c of fusedCases) {
    test.each(optimizerMakers)(`equals the backward, stacked IndexedSlices and applyGradients bit for bit: ${c.name}, %s`, async (_name, make) => {
      const random = randomSource(c.rows * 7 + c.dim);
      const initial = Float32Array.from({ length: c.rows * c.dim }, () => random() - 0.5);
      const fusedTable = hb.variable(initial, { shape: [c.rows, c.dim], device: 'cpu', name: 'fused_table' });
      const eagerTable = hb.variable(initial, { shape: [c.rows, c.dim], device: 'cpu', name: 'eager_table' });
      const fusedOpt = make();
      const eagerOpt = make();
      for (let step = 0; step < 3; step++) {
        const lookups = c.lookups.map((o) => makeLookup(random, c.rows, c.dim, o));
        await fusedUpdate(fusedOpt, fusedTable, lookups, 'cpu');
        await eagerUpdate(eagerOpt, eagerTable, lookups, 'cpu');
      }
      const fused = await stateOf(fusedOpt, fusedTable);
      const eager = await stateOf(eagerOpt, eagerTable);
      fused.forEach((x, i) => expect(bitsOf(x).equals(bitsOf(eager[i]))).toBe(true));
      expect(Array.from(fused[0]).some((x, i) => x !== initial[i])).toBe(true);
    });
  }

  test('errors name the table and the argument', async () => {
    // The tables are in host memory: so are the gradients, whatever the current device.
    const before = hb.currentDevice() as hb.DeviceSpec;
    hb.setDevice('cpu');
    try {
      await fusedErrors();
    } finally {
      hb.setDevice(before);
    }
  });

  async function fusedErrors(): Promise<void> {
    const table = hb.variable(hb.initializers.zeros(), { shape: [4, 2], device: 'cpu', name: 'fused_errors' });
    const other = hb.variable(hb.initializers.zeros(), { shape: [4, 2], device: 'cpu', name: 'other' });
    const opt = new hb.train.AdagradOptimizer({ learningRate: 0.1 });
    const [slot] = opt.slotVariables(table);
    const lookup = { values: BigInt64Array.from([0n, 9n]), rowSplits: Int32Array.from([0, 2]), weights: null, combiner: 'sum' as const, outputGrad: hb.tensor([[1, 2]]).handle };
    expect(() => native.lookupBackwardApply(opt.stepHyper(), table.handle, 'fused_errors', slot.handle, null, [])).toThrow(/fused_errors.*one output gradient per lookup/);
    expect(() => native.lookupBackwardApply(opt.stepHyper(), table.handle, 'fused_errors', null, null, [lookup])).toThrow(/wrong slots/);
    expect(() => native.lookupBackwardApply(opt.stepHyper(), table.handle, 'fused_errors', slot.handle, null, [{ ...lookup, outputGrad: hb.tensor([[1, 2, 3]]).handle }])).toThrow(
      /output gradient must be float32 \[1, 2\]/,
    );
    await expect(native.lookupBackwardApply(opt.stepHyper(), table.handle, 'fused_errors', slot.handle, null, [lookup])).rejects.toThrow(/ids\.values\[1\] = 9 is out of range/);
    expect(Array.from((await table.data()) as Float32Array)).toEqual(new Array(8).fill(0));
    void other;
  }
});

describeCuda('sparse gradients on CUDA at the edges', () => {
  // 600 bags (75 lookup blocks of 8 bags; 3 blocks of 256 threads for per-entry kernels)
  // with empty bags first, in the middle and last, the table's first and last rows, and
  // id 7 in every bag, so one row's entries come from every block; dim 33 leaves a
  // partial warp of columns.
  function edgeLookup(combiner: CombinerName, weighted: boolean, maxNorm = 0): LookupSpec {
    const random = randomSource(5);
    const ids: bigint[] = [];
    const splits = [0];
    for (let bag = 0; bag < 600; bag++) {
      if (bag !== 0 && bag !== 299 && bag !== 599) {
        ids.push(7n, bag % 2 ? 0n : 49n, BigInt(Math.floor(random() * 50)));
        if (bag % 5 === 0) ids.push(7n);
      }
      splits.push(ids.length);
    }
    const weights = weighted ? Float32Array.from(ids, () => random() * 2) : undefined;
    const grad = Float32Array.from({ length: 600 * 33 }, () => random() - 0.5);
    return { ids: BigInt64Array.from(ids), rowSplits: Int32Array.from(splits), weights, combiner, maxNorm, grad };
  }

  test.each([
    ['sum', false, 0],
    ['mean', true, 0],
    ['sqrtn', true, 1.2],
  ] as Array<[CombinerName, boolean, number]>)('table ends, empty bags and one row in every block equal the CPU bit for bit (%s, weighted %s, maxNorm %d)', async (combiner, weighted, maxNorm) => {
    const l = edgeLookup(combiner, weighted, maxNorm);
    const random = randomSource(9);
    const initial = Float32Array.from({ length: 50 * 33 }, () => random() - 0.5);
    const results = await Promise.all(['cpu', 'cuda'].map(async (device) => {
      const table = hb.variable(initial, { shape: [50, 33], device, name: `edges_${device}` });
      const out = await hb.nn.embeddingLookupSparse(table, raggedOf(l), { combiner, maxNorm: maxNorm || undefined });
      const grad = await hb.nn.embeddingLookupSparseGrad(table, raggedOf(l), gradTensor(l, 33, device), { combiner, maxNorm: maxNorm || undefined });
      const opt = new hb.train.AdagradOptimizer({ learningRate: 0.1 });
      await fusedUpdate(opt, table, [l], device);
      return {
        out: (await out.data()) as Float32Array,
        indices: Array.from(grad.indices as BigInt64Array),
        values: (await grad.values.data()) as Float32Array,
        state: await stateOf(opt, table),
      };
    }));
    const [cpu, gpu] = results;
    expect(bitsOf(gpu.out).equals(bitsOf(cpu.out))).toBe(true);
    expect(Array.from(cpu.out.slice(0, 33))).toEqual(new Array(33).fill(0)); // an empty bag
    expect(gpu.indices).toEqual(cpu.indices);
    expect(cpu.indices).toContain(0n);
    expect(cpu.indices).toContain(49n);
    expect(bitsOf(gpu.values).equals(bitsOf(cpu.values))).toBe(true);
    cpu.state.forEach((x, i) => expect(bitsOf(gpu.state[i]).equals(bitsOf(x))).toBe(true));
  });

  const backwardCases: Array<[string, number, LookupOptions]> = [];
  for (const dim of [1, 64, 300]) {
    for (const combiner of ['sum', 'mean', 'sqrtn'] as const) {
      backwardCases.push([`dim ${dim}, ${combiner}`, dim, { batch: 40, combiner }]);
      backwardCases.push([`dim ${dim}, ${combiner}, weighted, int32 ids`, dim, { batch: 40, combiner, weighted: true, int32: true }]);
      backwardCases.push([`dim ${dim}, ${combiner}, maxNorm`, dim, { batch: 40, combiner, weighted: combiner !== 'sum', maxNorm: 0.15 * Math.sqrt(dim) }]);
    }
    backwardCases.push([`dim ${dim}, an empty batch`, dim, { batch: 0, combiner: 'mean' }]);
    backwardCases.push([`dim ${dim}, every id pruned`, dim, { batch: 10, combiner: 'sqrtn', kind: 'pruned' }]);
    backwardCases.push([`dim ${dim}, zero weights with mean`, dim, { batch: 10, combiner: 'mean', weighted: true, kind: 'zeroWeights' }]);
    backwardCases.push([`dim ${dim}, rows in hundreds of bags`, dim, { batch: 300, combiner: 'mean', weighted: true, kind: 'hot' }]);
  }

  test.each(backwardCases)('the backward equals the CPU\'s bit for bit: %s', async (_name, dim, o) => {
    const rows = 60;
    const random = randomSource(dim * 31 + o.batch + (o.weighted ? 1 : 0));
    const initial = Float32Array.from({ length: rows * dim }, () => random() - 0.5);
    const onCpu = hb.variable(initial, { shape: [rows, dim], device: 'cpu' });
    const onGpu = hb.variable(initial, { shape: [rows, dim], device: 'cuda' });
    const l = makeLookup(random, rows, dim, o);
    const options = { combiner: l.combiner, maxNorm: l.maxNorm };
    const cpu = await hb.nn.embeddingLookupSparseGrad(onCpu, raggedOf(l), gradTensor(l, dim, 'cpu'), options);
    const gpu = await hb.nn.embeddingLookupSparseGrad(onGpu, raggedOf(l), gradTensor(l, dim, 'cuda'), options);
    expect(Array.from(gpu.indices as BigInt64Array)).toEqual(Array.from(cpu.indices as BigInt64Array));
    expect(gpu.values.shape).toEqual(cpu.values.shape);
    expect(bitsOf((await gpu.values.data()) as Float32Array).equals(bitsOf((await cpu.values.data()) as Float32Array))).toBe(true);
    if (o.kind === 'pruned' || o.kind === 'zeroWeights' || o.batch === 0) expect(cpu.indices.length).toBe(0);
  });

  for (const dim of [1, 16, 300]) {
    for (const int32 of [false, true]) {
      test.each(optimizerMakers)(`IndexedSlices with duplicate indices: applyGradients matches the CPU (dim ${dim}${int32 ? ', int32 indices' : ''}): %s`, async (_name, make) => {
        const rows = 50;
        const random = randomSource(dim + (int32 ? 100 : 0));
        const initial = Float32Array.from({ length: rows * dim }, () => random() - 0.5);
        const onCpu = hb.variable(initial, { shape: [rows, dim], device: 'cpu' });
        const onGpu = hb.variable(initial, { shape: [rows, dim], device: 'cuda' });
        const cpuOpt = make();
        const gpuOpt = make();
        for (let step = 0; step < 3; step++) {
          // An empty update too (non-lazy Adam still moves every row); in the second, row 3
          // holds two thirds of 600 indices (a row of more than 64 entries: one block sums it).
          const n = [200, 600, 0][step];
          const list = Array.from({ length: n }, (_, i) => (step === 1 && i % 3 !== 0 ? 3 : Math.floor(random() * random() * rows)));
          const indices = int32 ? Int32Array.from(list) : BigInt64Array.from(list.map(BigInt));
          // Some rows of zeros: summing from zero must keep the CPU's signs.
          const values = Float32Array.from({ length: n * dim }, (_, i) => (Math.floor(i / dim) % 17 === 3 ? -0 : random() - 0.5));
          await cpuOpt.applyGradients([[new hb.IndexedSlices(hb.tensor(values, [n, dim], undefined, { device: 'cpu' }), indices), onCpu]]);
          await gpuOpt.applyGradients([[new hb.IndexedSlices(hb.tensor(values, [n, dim], undefined, { device: 'cuda' }), indices), onGpu]]);
        }
        const cpu = await stateOf(cpuOpt, onCpu);
        const gpu = await stateOf(gpuOpt, onGpu);
        cpu.forEach((x, i) => expectClose(gpu[i], x, i === 0 ? 'variable' : `slot ${i - 1}`));
      });
    }
  }

  test('most rows in more than 64 entries (130 rows, 4000 bags): the backward and the fused update equal the CPU bit for bit', async () => {
    // More long rows than there are segments / 65: the long rows' list is sized by entries.
    const rows = 130;
    const dim = 33;
    const random = randomSource(130);
    const initial = Float32Array.from({ length: rows * dim }, () => random() - 0.5);
    const l = makeLookup(random, rows, dim, { batch: 4000, combiner: 'mean', weighted: true });
    const perRow = new Array(rows).fill(0);
    for (const id of l.ids) if (id >= 0 && id < rows) perRow[Number(id)] += 1;
    expect(perRow.filter((n) => n > 64).length).toBeGreaterThan(rows / 2);
    const results = await Promise.all(['cpu', 'cuda'].map(async (device) => {
      const table = hb.variable(initial, { shape: [rows, dim], device, name: `all_long_${device}` });
      const grad = await hb.nn.embeddingLookupSparseGrad(table, raggedOf(l), gradTensor(l, dim, device), { combiner: l.combiner });
      const opt = new hb.train.AdagradOptimizer({ learningRate: 0.1 });
      await fusedUpdate(opt, table, [l], device);
      return { indices: Array.from(grad.indices as BigInt64Array), values: (await grad.values.data()) as Float32Array, state: await stateOf(opt, table) };
    }));
    const [cpu, gpu] = results;
    expect(gpu.indices).toEqual(cpu.indices);
    expect(bitsOf(gpu.values).equals(bitsOf(cpu.values))).toBe(true);
    cpu.state.forEach((x, i) => expect(bitsOf(gpu.state[i]).equals(bitsOf(x))).toBe(true));
  });

  // A row's entries from one lookup are summed in blocks of 256 (lookup_gradient.h). On a
  // GPU a long row of one lookup is cut into pieces summed in parallel; a row of several
  // lookups, or wider than 512, is summed by one block of threads; clipping and
  // RowwiseAdagrad sum whole rows. Each path against the CPU, bit for bit, with 'hot' rows
  // 5 and 6 in every bag and in two of three.
  const adagrad = () => new hb.train.AdagradOptimizer({ learningRate: 0.1 });
  const gradientDescent = () => new hb.train.GradientDescentOptimizer({ learningRate: 0.1 });
  const twoLookups: LookupOptions[] = [
    { batch: 600, combiner: 'sum', kind: 'hot' },
    { batch: 400, combiner: 'mean', weighted: true, kind: 'hot' },
  ];
  const blockedCases: Array<[string, number, LookupOptions[], () => hb.train.Optimizer]> = [
    ['one lookup, 1100 bags (pieces), Adagrad', 64, [{ batch: 1100, combiner: 'mean', weighted: true, kind: 'hot' }], adagrad],
    ['one lookup, 512 bags (two whole blocks), GradientDescent', 33, [{ batch: 512, combiner: 'sum', kind: 'hot' }], gradientDescent],
    ['two lookups of the table (one block of threads), Adagrad', 16, twoLookups, adagrad],
    ['two lookups of the table, GradientDescent (each lookup applied in turn)', 16, twoLookups, gradientDescent],
    ['maxNorm (whole rows), Adagrad', 40, [{ batch: 700, combiner: 'sqrtn', maxNorm: 0.5, kind: 'hot' }], adagrad],
    ['RowwiseAdagrad (whole rows)', 40, [{ batch: 700, combiner: 'sum', kind: 'hot' }], () => new hb.train.RowwiseAdagradOptimizer({ learningRate: 0.1 })],
    ['rows of 1100 floats (one block of threads), Adagrad', 1100, [{ batch: 300, combiner: 'mean', kind: 'hot' }], adagrad],
  ];
  test.each(blockedCases)('rows in more than 256 bags: the backward and the fused update equal the CPU bit for bit: %s', async (_name, dim, options, make) => {
    const rows = 40;
    const random = randomSource(dim * 13 + options.length);
    const initial = Float32Array.from({ length: rows * dim }, () => random() - 0.5);
    const lookups = options.map((o) => makeLookup(random, rows, dim, o));
    let hotEntries = 0;
    for (const id of lookups[0].ids) if (Number(id) === 5) hotEntries++;
    expect(hotEntries).toBeGreaterThan(256);
    const results = await Promise.all(['cpu', 'cuda'].map(async (device) => {
      const table = hb.variable(initial, { shape: [rows, dim], device, name: `blocked_${device}` });
      const first = lookups[0];
      const grad = await hb.nn.embeddingLookupSparseGrad(table, raggedOf(first), gradTensor(first, dim, device), { combiner: first.combiner, maxNorm: first.maxNorm });
      const opt = make();
      await fusedUpdate(opt, table, lookups, device);
      return { indices: Array.from(grad.indices as BigInt64Array), values: (await grad.values.data()) as Float32Array, state: await stateOf(opt, table) };
    }));
    const [cpu, gpu] = results;
    expect(gpu.indices).toEqual(cpu.indices);
    expect(bitsOf(gpu.values).equals(bitsOf(cpu.values))).toBe(true);
    cpu.state.forEach((x, i) => expect(bitsOf(gpu.state[i]).equals(bitsOf(x))).toBe(true));
  });

  test('in a child process: more long rows than segments / 65 in the unfused backward end with the CPU\'s gradient, not a crash', () => {
    // Once crashed: the long rows' list was sized by the segment count / 65 (here 130 / 65 = 2
    // slots for 130 long rows) and written past its end.
    const { spawnSync } = require('child_process') as typeof import('child_process');
    const script = `
      const hb = require(${JSON.stringify(require.resolve('../dist'))});
      (async () => {
        const rows = 130, dim = 8, batch = 4000, perBag = 4;
        const ids = new BigInt64Array(batch * perBag);
        let x = 7;
        for (let i = 0; i < ids.length; i++) { x = (Math.imul(x, 1664525) + 1013904223) >>> 0; ids[i] = BigInt(x % rows); }
        const splits = Int32Array.from({ length: batch + 1 }, (_, i) => i * perBag);
        const upstream = Float32Array.from({ length: batch * dim }, (_, i) => ((i * 37) % 101) / 101 - 0.5);
        const bits = [];
        for (const device of ['cpu', ${JSON.stringify(cudaEmulated ? 'cuda-emulated' : 'cuda')}]) {
          hb.setDevice(device);
          const table = hb.variable(hb.initializers.zeros(), { shape: [rows, dim] });
          const g = await hb.nn.embeddingLookupSparseGrad(table, hb.ragged(ids, splits), hb.tensor(upstream, [batch, dim]), { combiner: 'sum' });
          const values = await g.values.data();
          bits.push(Array.from(g.indices).join(',') + '|' + Buffer.from(values.buffer, values.byteOffset, values.byteLength).toString('hex'));
        }
        console.log(bits[0] === bits[1] ? 'equal' : 'different');
      })().catch((e) => { console.error(e); process.exit(1); });
    `;
    const r = spawnSync(process.execPath, ['-e', script], {
      encoding: 'utf8',
      env: { ...process.env, HB_ADDON: loadedAddonPath() },
      timeout: 60_000,
    });
    expect({ signal: r.signal, status: r.status, stderr: r.stderr.trim() }).toEqual({ signal: null, status: 0, stderr: '' });
    expect(r.stdout.trim()).toBe('equal');
  });

  const cudaFusedCases: FusedCase[] = [
    ...fusedCases,
    {
      name: 'dim 64, two lookups with maxNorm, int32 ids',
      rows: 80,
      dim: 64,
      lookups: [
        { batch: 30, combiner: 'sqrtn', maxNorm: 1.5 },
        { batch: 20, combiner: 'mean', weighted: true, int32: true, maxNorm: 2 },
      ],
    },
    {
      name: 'dim 300, three lookups',
      rows: 40,
      dim: 300,
      lookups: [
        { batch: 16, combiner: 'sum', weighted: true },
        { batch: 16, combiner: 'mean' },
        { batch: 3, combiner: 'sqrtn', kind: 'pruned' },
      ],
    },
    { name: 'dim 300, maxNorm', rows: 40, dim: 300, lookups: [{ batch: 20, combiner: 'mean', maxNorm: 3 }] },
    {
      name: 'rows in hundreds of bags of two lookups, dim 33',
      rows: 40,
      dim: 33,
      lookups: [
        { batch: 400, combiner: 'sum', kind: 'hot' },
        { batch: 300, combiner: 'mean', weighted: true, kind: 'hot' },
      ],
    },
    { name: 'rows in hundreds of bags, dim 300', rows: 40, dim: 300, lookups: [{ batch: 200, combiner: 'sqrtn', kind: 'hot' }] },
  ];
  for (const c of cudaFusedCases) {
    test.each(optimizerMakers)(`the fused backward + update matches the CPU: ${c.name}, %s`, async (_name, make) => {
      const random = randomSource(c.rows * 13 + c.dim);
      const initial = Float32Array.from({ length: c.rows * c.dim }, () => random() - 0.5);
      const onCpu = hb.variable(initial, { shape: [c.rows, c.dim], device: 'cpu', name: 'fused_cpu' });
      const onGpu = hb.variable(initial, { shape: [c.rows, c.dim], device: 'cuda', name: 'fused_gpu' });
      const gpuEager = hb.variable(initial, { shape: [c.rows, c.dim], device: 'cuda', name: 'eager_gpu' });
      const cpuOpt = make();
      const gpuOpt = make();
      const gpuEagerOpt = make();
      for (let step = 0; step < 3; step++) {
        const lookups = c.lookups.map((o) => makeLookup(random, c.rows, c.dim, o));
        await fusedUpdate(cpuOpt, onCpu, lookups, 'cpu');
        await fusedUpdate(gpuOpt, onGpu, lookups, 'cuda');
        await eagerUpdate(gpuEagerOpt, gpuEager, lookups, 'cuda');
      }
      const cpu = await stateOf(cpuOpt, onCpu);
      const gpu = await stateOf(gpuOpt, onGpu);
      const eager = await stateOf(gpuEagerOpt, gpuEager);
      cpu.forEach((x, i) => expectClose(gpu[i], x, i === 0 ? 'variable' : `slot ${i - 1}`));
      // On one device the fused and the unfused path are the same arithmetic.
      gpu.forEach((x, i) => expect(bitsOf(x).equals(bitsOf(eager[i]))).toBe(true));
    });
  }
});
