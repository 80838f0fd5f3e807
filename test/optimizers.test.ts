import * as hb from '../lib';
import { applyDense, applySparse, Rule, State } from './support/optimizer_reference';
import { randomSource } from './support/reference';

const rows = 5;

interface Case {
  name: string;
  make: () => hb.train.Optimizer;
  rule: (step: number) => Rule;
  slots: Array<{ name: string; init: number; perRow?: boolean }>;
  exact: boolean;
}

const f = Math.fround;
const adamPowers = (beta1: number, beta2: number, step: number) => {
  let p1 = f(beta1);
  let p2 = f(beta2);
  for (let i = 0; i < step; i++) (p1 = f(p1 * f(beta1))), (p2 = f(p2 * f(beta2)));
  return { beta1Power: p1, beta2Power: p2 };
};

const cases: Case[] = [
  { name: 'GradientDescent', make: () => new hb.train.GradientDescentOptimizer({ learningRate: 0.1 }), rule: () => ({ kind: 'gd', lr: 0.1 }), slots: [], exact: true },
  {
    name: 'Momentum',
    make: () => new hb.train.MomentumOptimizer({ learningRate: 0.1, momentum: 0.9 }),
    rule: () => ({ kind: 'momentum', lr: 0.1, momentum: 0.9, nesterov: false }),
    slots: [{ name: 'momentum', init: 0 }],
    exact: true,
  },
  {
    name: 'Momentum (Nesterov)',
    make: () => new hb.train.MomentumOptimizer({ learningRate: 0.05, momentum: 0.8, useNesterov: true }),
    rule: () => ({ kind: 'momentum', lr: 0.05, momentum: 0.8, nesterov: true }),
    slots: [{ name: 'momentum', init: 0 }],
    exact: true,
  },
  {
    name: 'Adagrad',
    make: () => new hb.train.AdagradOptimizer({ learningRate: 0.3 }),
    rule: () => ({ kind: 'adagrad', lr: 0.3 }),
    slots: [{ name: 'accumulator', init: 0.1 }],
    exact: true,
  },
  {
    name: 'Adam',
    make: () => new hb.train.AdamOptimizer({ learningRate: 0.01 }),
    rule: (step) => ({ kind: 'adam', lr: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, lazy: false, ...adamPowers(0.9, 0.999, step) }),
    slots: [{ name: 'm', init: 0 }, { name: 'v', init: 0 }],
    exact: true,
  },
  {
    name: 'Adam (lazy)',
    make: () => new hb.train.AdamOptimizer({ learningRate: 0.02, beta1: 0.8, beta2: 0.99, epsilon: 1e-6, lazy: true }),
    rule: (step) => ({ kind: 'adam', lr: 0.02, beta1: 0.8, beta2: 0.99, epsilon: 1e-6, lazy: true, ...adamPowers(0.8, 0.99, step) }),
    slots: [{ name: 'm', init: 0 }, { name: 'v', init: 0 }],
    exact: true,
  },
  {
    name: 'Ftrl',
    make: () => new hb.train.FtrlOptimizer({ learningRate: 0.5, l1RegularizationStrength: 0.01, l2RegularizationStrength: 0.1 }),
    rule: () => ({ kind: 'ftrl', lr: 0.5, power: -0.5, l1: 0.01, l2: 0.1, l2Shrinkage: 0 }),
    slots: [{ name: 'accum', init: 0.1 }, { name: 'linear', init: 0 }],
    exact: true,
  },
  {
    name: 'Ftrl (power -0.6, l2 shrinkage)',
    make: () =>
      new hb.train.FtrlOptimizer({ learningRate: 0.5, learningRatePower: -0.6, l1RegularizationStrength: 0.01, l2ShrinkageRegularizationStrength: 0.05 }),
    rule: () => ({ kind: 'ftrl', lr: 0.5, power: -0.6, l1: 0.01, l2: 0, l2Shrinkage: 0.05 }),
    slots: [{ name: 'accum', init: 0.1 }, { name: 'linear', init: 0 }],
    exact: false, // powf on the native side, Math.pow here
  },
  {
    name: 'RowwiseAdagrad',
    make: () => new hb.train.RowwiseAdagradOptimizer({ learningRate: 0.2 }),
    rule: () => ({ kind: 'rowwise', lr: 0.2, epsilon: 1e-8 }),
    slots: [{ name: 'accumulator', init: 0, perRow: true }],
    exact: true,
  },
];

function expectClose(got: Float32Array, want: Float32Array, exact: boolean): void {
  if (exact) {
    expect(Array.from(got)).toEqual(Array.from(want));
    return;
  }
  for (let i = 0; i < want.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(want[i])));
}

describe('hb.train optimizers against TF 1.15\'s update rules', () => {
  // Width 3 takes TF's row kernels, width 1 the sparse kernels' scalar loops.
  for (const c of cases) {
    for (const [sparse, width] of [[false, 3], [true, 3], [true, 1]] as Array<[boolean, number]>) {
      test(`${c.name}, ${sparse ? `sparse (IndexedSlices with duplicate rows, width ${width})` : 'dense'}, over 4 steps`, async () => {
        const random = randomSource(c.name.length * 17 + (sparse ? 1 : 0) + width);
        const initial = Float32Array.from({ length: rows * width }, () => random() * 2 - 1);
        const v = hb.variable(initial, { shape: [rows, width], name: `${c.name}_${sparse}_${width}` });
        const opt = c.make();
        const state: State = { v: Float32Array.from(initial) };
        c.slots.forEach((slot, i) => {
          const values = new Float32Array(slot.perRow ? rows : rows * width).fill(f(slot.init));
          if (i === 0) state.s0 = values;
          else state.s1 = values;
        });
        for (let step = 0; step < 4; step++) {
          if (sparse) {
            // rows 3 and 1 repeat; row 0 is touched only in the first step
            const indices = step === 0 ? [3, 0, 3, 1] : [1, 3, 1];
            const values = Float32Array.from({ length: indices.length * width }, () => random() * 2 - 1);
            await opt.applyGradients([[new hb.IndexedSlices(hb.tensor(values, [indices.length, width]), indices.map(BigInt)), v]]);
            applySparse(c.rule(step), state, width, indices, values);
          } else {
            const grad = Float32Array.from({ length: rows * width }, () => random() * 2 - 1);
            await opt.applyGradients([[hb.tensor(grad, [rows, width]), v]]);
            applyDense(c.rule(step), state, width, grad);
          }
          expectClose((await v.data()) as Float32Array, state.v, c.exact);
          for (const [i, slot] of c.slots.entries()) {
            const native = opt.getSlot(v, slot.name);
            expect(native).toBeDefined();
            expectClose((await native!.data()) as Float32Array, (i === 0 ? state.s0 : state.s1)!, c.exact);
          }
        }
        expect(opt.getSlotNames()).toEqual(c.slots.map((s) => s.name));
      });
    }
  }
});

describe('values worked by hand from TF\'s kernels', () => {
  test('Momentum: accum = accum * m + g; var -= lr * accum', async () => {
    const v = hb.variable([1, 2], { name: 'momentum_hand' });
    const opt = new hb.train.MomentumOptimizer({ learningRate: 0.5, momentum: 0.5 });
    await opt.applyGradients([[hb.tensor([1, 2]), v]]); // accum [1, 2]; var [1 - 0.5, 2 - 1] = [0.5, 1]
    expect(await v.array()).toEqual([0.5, 1]);
    await opt.applyGradients([[hb.tensor([1, 2]), v]]); // accum [1.5, 3]; var [0.5 - 0.75, 1 - 1.5] = [-0.25, -0.5]
    expect(await v.array()).toEqual([-0.25, -0.5]);
  });

  test('Adagrad: accum starts at 0.1; var -= lr * g / sqrt(accum)', async () => {
    const v = hb.variable([1], { name: 'adagrad_hand' });
    const opt = new hb.train.AdagradOptimizer({ learningRate: 0.3 });
    await opt.applyGradients([[hb.tensor([0.9]), v]]); // accum 0.1 + 0.81 = 0.91; var 1 - 0.27 / sqrt(0.91) = 0.71696...
    expect(((await v.data()) as Float32Array)[0]).toBeCloseTo(1 - 0.27 / Math.sqrt(0.91), 6);
    expect(((await opt.getSlot(v, 'accumulator')!.data()) as Float32Array)[0]).toBeCloseTo(0.91, 6);
  });

  test('Adam\'s first step moves each weight by about lr against its gradient\'s sign', async () => {
    // m = 0.1 g, v = 0.001 g^2, alpha = lr * sqrt(0.001) / 0.1: the step is lr * g / |g| (up to epsilon).
    const v = hb.variable([1, 1], { name: 'adam_hand' });
    const opt = new hb.train.AdamOptimizer({ learningRate: 0.001 });
    await opt.applyGradients([[hb.tensor([3, -0.5]), v]]);
    const got = (await v.data()) as Float32Array;
    expect(got[0]).toBeCloseTo(0.999, 6);
    expect(got[1]).toBeCloseTo(1.001, 6);
  });

  test('Adam (not lazy) moves rows a sparse gradient did not touch; LazyAdam does not', async () => {
    for (const lazy of [false, true]) {
      const v = hb.variable([[1], [1]], { name: `adam_rows_${lazy}` });
      const opt = new hb.train.AdamOptimizer({ learningRate: 0.1, lazy });
      await opt.applyGradients([[new hb.IndexedSlices(hb.tensor([[1]]), [1n]), v]]);
      const afterFirst = ((await v.data()) as Float32Array)[1];
      await opt.applyGradients([[new hb.IndexedSlices(hb.tensor([[1]]), [0n]), v]]);
      const afterSecond = ((await v.data()) as Float32Array)[1];
      if (lazy) expect(afterSecond).toBe(afterFirst);
      else expect(afterSecond).toBeLessThan(afterFirst); // its momentum keeps moving it
    }
  });

  test('FTRL: one step from var 0, accum 0.1, linear 0 with g = 1, lr = 1', async () => {
    // accum' = 1.1; linear = 1 - (sqrt(1.1) - sqrt(0.1)) * 0 = 1; quadratic = sqrt(1.1);
    // var = (0 - 1) / sqrt(1.1) = -0.95346...
    const v = hb.variable([0], { name: 'ftrl_hand' });
    const opt = new hb.train.FtrlOptimizer({ learningRate: 1 });
    await opt.applyGradients([[hb.tensor([1]), v]]);
    expect(((await v.data()) as Float32Array)[0]).toBeCloseTo(-1 / Math.sqrt(1.1), 6);
    // With l1 = 2 > |linear| the weight is clipped to exactly 0.
    const w = hb.variable([0], { name: 'ftrl_l1' });
    await new hb.train.FtrlOptimizer({ learningRate: 1, l1RegularizationStrength: 2 }).applyGradients([[hb.tensor([1]), w]]);
    expect(await w.array()).toEqual([0]);
  });

  test('RowwiseAdagrad keeps one accumulator per row: the mean of squared gradients', async () => {
    const v = hb.variable([[0, 0], [0, 0]], { name: 'rowwise_hand' });
    const opt = new hb.train.RowwiseAdagradOptimizer({ learningRate: 1 });
    await opt.applyGradients([[new hb.IndexedSlices(hb.tensor([[3, 4]]), [1n]), v]]);
    // accum[1] = (9 + 16) / 2 = 12.5; var[1] = -[3, 4] / sqrt(12.5)
    expect(await opt.getSlot(v, 'accumulator')!.array()).toEqual([0, 12.5]);
    const got = (await v.data()) as Float32Array;
    expect(Array.from(got.subarray(0, 2))).toEqual([0, 0]);
    expect(got[2]).toBeCloseTo(-3 / Math.sqrt(12.5), 6);
    expect(got[3]).toBeCloseTo(-4 / Math.sqrt(12.5), 6);
  });

  test('several pairs in one call, a skipped null gradient, and Adam\'s step count advancing once per call', async () => {
    const a = hb.variable([1], { name: 'pair_a' });
    const b = hb.variable([[1, 1]], { name: 'pair_b' });
    const c = hb.variable([5], { name: 'pair_c' });
    const opt = new hb.train.GradientDescentOptimizer({ learningRate: 1 });
    await opt.applyGradients([
      [hb.tensor([0.5]), a],
      [new hb.IndexedSlices(hb.tensor([[1, 2], [1, 2]]), [0n, 0n]), b],
      [null, c],
    ]);
    expect(await a.array()).toEqual([0.5]);
    expect(await b.array()).toEqual([[-1, -3]]);
    expect(await c.array()).toEqual([5]);
  });
});

describe('updates that must not happen', () => {
  test('a NaN or infinite gradient is refused before the variable or its slots change (dense, sparse, lookup)', async () => {
    const v = hb.variable([[1, 2], [3, 4]], { name: 'guarded' });
    const opt = new hb.train.AdagradOptimizer({ learningRate: 0.1 });
    await opt.applyGradients([[hb.tensor([[0.5, 0.5], [0.5, 0.5]]), v]]);
    const before = await v.array();
    const slot = await opt.getSlot(v, 'accumulator')!.array();
    await expect(opt.applyGradients([[hb.tensor([[0.5, NaN], [0.5, 0.5]]), v]])).rejects.toMatchObject({
      code: 'HB_ERR_NAN',
      message: 'applyGradients(guarded): the gradient is NaN or infinite at row 0, column 1; guarded was not changed',
    });
    await expect(opt.applyGradients([[new hb.IndexedSlices(hb.tensor([[1, 1], [Infinity, 1]]), [0n, 1n]), v]])).rejects.toMatchObject({
      code: 'HB_ERR_NAN',
      message: 'applyGradients(guarded): the gradient (IndexedSlices values) is NaN or infinite at row 1, column 0; guarded was not changed',
    });
    // Through the lookup's gradient, as a model computes it.
    const table = hb.variable([[1, 1], [2, 2], [3, 3]], { name: 'table' });
    const ids = hb.ragged(BigInt64Array.from([0n, 2n]), Int32Array.from([0, 1, 2]));
    const upstream = hb.tensor([[0.1, 0.1], [NaN, 0.1]]);
    const grad = await hb.nn.embeddingLookupSparseGrad(table, ids, upstream, { combiner: 'sum' });
    await expect(opt.applyGradients([[grad, table]])).rejects.toMatchObject({ code: 'HB_ERR_NAN', message: expect.stringMatching(/^applyGradients\(table\): .* is NaN or infinite at row 1, column 0; table was not changed$/) });
    expect(await table.array()).toEqual([[1, 1], [2, 2], [3, 3]]);
    expect(await v.array()).toEqual(before);
    expect(await opt.getSlot(v, 'accumulator')!.array()).toEqual(slot);
  });

  test('the first non-finite value is the one named, wherever it is (chunk and thread-block edges of the check)', async () => {
    // A gradient of 300000 x 1: the check reads 1024-float chunks whole and splits arrays
    // over 65536 floats between threads; the message names the first bad index whatever
    // other bad values follow it, in its chunk, in later chunks or in other blocks.
    const n = 300_000;
    const v = hb.variable(hb.initializers.zeros(), { shape: [n, 1], name: 'long' });
    const opt = new hb.train.GradientDescentOptimizer({ learningRate: 0.1 });
    const cases: Array<[number, number[]]> = [
      [0, [1, 1023, 200_000]], [1023, [1024]], [1024, [1025, 65_536]], [65_535, [65_536]], [65_536, [131_072, n - 1]],
      [131_071, []], [n - 1, []], [70_000, [70_000 + 3, 299_000]],
    ];
    for (const [first, later] of cases) {
      const g = new Float32Array(n).fill(0.5);
      g[first] = first % 2 ? -Infinity : NaN;
      for (const i of later) g[i] = Infinity;
      await expect(opt.applyGradients([[hb.tensor(g, [n, 1]), v]])).rejects.toThrow(`the gradient is NaN or infinite at row ${first}, column 0; long was not changed`);
    }
    await opt.applyGradients([[hb.tensor(new Float32Array(n).fill(0.5), [n, 1]), v]]);
    expect((await v.data())[n - 1]).toBeCloseTo(-0.05, 6);
  });

  test('a learning rate set to NaN or below 0 after construction is refused at the next update', async () => {
    const v = hb.variable([1, 2], { name: 'lr' });
    const opt = new hb.train.GradientDescentOptimizer({ learningRate: 0.1 });
    (opt as { learningRate: number }).learningRate = -1;
    await expect(opt.applyGradients([[hb.tensor([1, 1]), v]])).rejects.toThrow('GradientDescentOptimizer(GradientDescent): learningRate must be a finite number >= 0, got -1');
    (opt as { learningRate: number }).learningRate = NaN;
    await expect(opt.applyGradients([[hb.tensor([1, 1]), v]])).rejects.toThrow('GradientDescentOptimizer(GradientDescent): learningRate must be a finite number, got NaN');
    (opt as { learningRate: number }).learningRate = 0.5; // a schedule's next value is fine
    await opt.applyGradients([[hb.tensor([1, 1]), v]]);
    expect(await v.array()).toEqual([0.5, 1.5]);
  });

  test('applyGradients calls on one Adam that are not awaited in turn run in turn (beta powers advance once per call)', async () => {
    const concurrent = hb.variable([[0, 0]], { name: 'a' });
    const sequential = hb.variable([[0, 0]], { name: 'b' });
    const grads = [[1, -2], [0.5, 3], [-1, 1], [2, 2]];
    const one = new hb.train.AdamOptimizer({ learningRate: 0.1 });
    await Promise.all(grads.map((g) => one.applyGradients([[hb.tensor([g]), concurrent]])));
    const two = new hb.train.AdamOptimizer({ learningRate: 0.1 });
    for (const g of grads) await two.applyGradients([[hb.tensor([g]), sequential]]);
    expect(await concurrent.array()).toEqual(await sequential.array());
    expect(one.scalarState()).toEqual(two.scalarState());
  });
});

describe('optimizer errors name the argument', () => {
  test('hyperparameters out of range', () => {
    expect(() => new hb.train.GradientDescentOptimizer({ learningRate: NaN })).toThrow(/GradientDescentOptimizer: learningRate must be a finite number >= 0, got NaN/);
    expect(() => new hb.train.AdamOptimizer({ epsilon: 0 })).toThrow(/AdamOptimizer: epsilon must be a finite number > 0, got 0/);
    expect(() => new hb.train.AdamOptimizer({ beta1: 1 })).toThrow(/AdamOptimizer: beta1 must be in \[0, 1\)/);
    expect(() => new hb.train.FtrlOptimizer({ learningRate: 0.1, l1RegularizationStrength: -1 })).toThrow(/FtrlOptimizer: l1RegularizationStrength must be a finite number >= 0, got -1/);
    expect(() => new hb.train.FtrlOptimizer({ learningRate: 0.1, learningRatePower: 0.5 })).toThrow(/learningRatePower must be a finite number <= 0/);
    expect(() => new hb.train.AdagradOptimizer({ learningRate: 0.1, initialAccumulatorValue: 0 })).toThrow(/initialAccumulatorValue must be a finite number > 0/);
    expect(() => new hb.train.MomentumOptimizer({ learningRate: 0.1 } as never)).toThrow(/MomentumOptimizer: momentum must be a finite number >= 0, got undefined/);
  });

  test('gradients that do not fit the variable', async () => {
    const v = hb.variable([[1, 2], [3, 4]], { name: 'fit' });
    const opt = new hb.train.AdagradOptimizer({ learningRate: 0.1 });
    await expect(opt.applyGradients([[hb.tensor([1, 2, 3]), v]])).rejects.toThrow(/applyGradients\(fit\): the gradient's shape \[3\] does not match the variable's \[2, 2\]/);
    await expect(opt.applyGradients([[new hb.IndexedSlices(hb.tensor([[1, 2]]), [2n]), v]])).rejects.toThrow(
      /applyGradients\(fit\): gradient indices\[0\] = 2 is out of range: the variable has 2 rows/,
    );
    await expect(opt.applyGradients([[new hb.IndexedSlices(hb.tensor([[1, 2]]), [-1n]), v]])).rejects.toThrow(/indices\[0\] = -1 is out of range/);
    await expect(opt.applyGradients([[new hb.IndexedSlices(hb.tensor([[1, 2, 3]]), [0n]), v]])).rejects.toThrow(/IndexedSlices values \[1, 3\] must be \[1 indices, \.\.\.\[2\]\]/);
    await expect(opt.applyGradients([[hb.tensor(Int32Array.of(1, 2, 3, 4), [2, 2]), v]])).rejects.toThrow(/the gradient must be float32, got int32/);
    await expect(opt.applyGradients([[hb.tensor([1]), hb.tensor([1]) as hb.Variable]])).rejects.toThrow(/the second element must be an hb\.variable/);
    await expect(opt.applyGradients([[[1, 2] as unknown as hb.Tensor, v]])).rejects.toThrow(/applyGradients\(fit\): the gradient must be a tensor or hb\.IndexedSlices/);
    await expect(opt.applyGradients([[v, v]])).rejects.toThrow(/applyGradients\(fit\): the variable, its slots and the gradient must be different tensors/);
    expect(() => new hb.IndexedSlices(hb.tensor([[1, 2]]), [0n, 1n])).toThrow(/IndexedSlices: values has shape \[1,2\] but there are 2 indices/);
    // A call with one bad pair applies none of its pairs.
    const other = hb.variable([1], { name: 'untouched' });
    await expect(opt.applyGradients([[hb.tensor([1]), other], [hb.tensor([1]), v]])).rejects.toThrow(/does not match/);
    expect(await other.array()).toEqual([1]);
    // Nothing was applied by the failed calls.
    expect(await v.array()).toEqual([[1, 2], [3, 4]]);
  });
});
