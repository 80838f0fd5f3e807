// The CPU kernels a compiled model graph runs (native/exec/*_kernels.cc), one at a time
// through native.kernelRun, against plain-JS references. Float32 results are compared
// bit for bit where the reference can round as the kernel does (Math.fround after every
// operation), and with a tolerance where libm functions (exp, log, tanh) are involved.
import { spawnSync } from 'child_process';
import * as path from 'path';
import * as hb from '../lib';
import { KernelAttrValue, native, NativeTensorHandle } from '../lib/native';
import { randomSource } from './support/reference';
import { loadedAddonPath, pinDevice } from './support/devices';

// Checked against CPU references bit for bit / at CPU tolerances; test/cuda_plan.test.ts
// checks the CUDA kernels against these.
pinDevice('cpu');

const f = Math.fround;
const OP = 'model/layer_1/op'; // the graph op name every error must name
const SUM_BLOCK = 256; // dense_math.h's kSumBlock

type Output = number[] | NativeTensorHandle;

const input = (values: ArrayLike<number>, shape: number[]) => hb.tensor(Float32Array.from(values), shape).handle;

async function run(kernel: string, inputs: NativeTensorHandle[], outputs: Output[], attrs: Record<string, KernelAttrValue> = {}) {
  const handles = await native.kernelRun(kernel, inputs, outputs, attrs, OP);
  return Promise.all(
    handles.map(async (h) => {
      const t = new hb.Tensor(h as NativeTensorHandle);
      expect(t.dtype).toBe('float32');
      return { shape: [...t.shape], values: (await t.data()) as Float32Array };
    }),
  );
}

async function run1(kernel: string, inputs: NativeTensorHandle[], outputs: Output[], attrs: Record<string, KernelAttrValue> = {}) {
  return (await run(kernel, inputs, outputs, attrs))[0].values;
}

/** The kernel rejects with a message that names the op and matches `pattern`. */
async function expectError(kernel: string, inputs: NativeTensorHandle[], outputs: Output[], attrs: Record<string, KernelAttrValue>, pattern: RegExp) {
  const call = (async () => native.kernelRun(kernel, inputs, outputs, attrs, OP))();
  await expect(call).rejects.toThrow(pattern);
  await expect((async () => native.kernelRun(kernel, inputs, outputs, attrs, OP))()).rejects.toThrow(OP);
}

function randomValues(random: () => number, n: number, lo = -2, hi = 2): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * random();
  return out;
}

function expectExact(actual: ArrayLike<number>, expected: ArrayLike<number>) {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    if (!Object.is(actual[i], expected[i]) && !(actual[i] === expected[i])) {
      throw new Error(`element ${i}: got ${actual[i]}, expected ${expected[i]}`);
    }
  }
}

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, relative = 1e-6, absolute = 1e-6) {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i];
    const e = expected[i];
    if (Number.isNaN(e) && Number.isNaN(a)) continue;
    if (a === e) continue;
    if (!(Math.abs(a - e) <= absolute + relative * Math.abs(e))) throw new Error(`element ${i}: got ${a}, expected ${e}`);
  }
}

const size = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

function strides(shape: number[]): number[] {
  const s = new Array(shape.length).fill(1);
  for (let d = shape.length - 2; d >= 0; d--) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

function unravel(index: number, shape: number[]): number[] {
  const out = new Array(shape.length).fill(0);
  for (let d = shape.length - 1; d >= 0; d--) {
    out[d] = index % shape[d];
    index = Math.floor(index / shape[d]);
  }
  return out;
}

/** Offset in a tensor of `shape` (right-aligned, broadcast) of the index `at` into a bigger shape. */
function broadcastOffset(at: number[], shape: number[]): number {
  const s = strides(shape);
  const lead = at.length - shape.length;
  let offset = 0;
  for (let d = 0; d < shape.length; d++) offset += (shape[d] === 1 ? 0 : at[lead + d]) * s[d];
  return offset;
}

function broadcastShape(a: number[], b: number[]): number[] {
  const rank = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let k = 0; k < rank; k++) {
    const da = k < rank - a.length ? 1 : a[k - (rank - a.length)];
    const db = k < rank - b.length ? 1 : b[k - (rank - b.length)];
    out.push(da === 1 ? db : da);
  }
  return out;
}

/** dense_math.h's blocked float32 sum of terms in order. */
function blockedSum(terms: ArrayLike<number>): number {
  let total = 0;
  for (let first = 0; first < terms.length; first += SUM_BLOCK) {
    let s = 0;
    for (let i = first; i < Math.min(terms.length, first + SUM_BLOCK); i++) s = f(s + terms[i]);
    total = f(total + s);
  }
  return total;
}

// ---------------------------------------------------------------------------------------
// binary

const binaryOps: Array<[string, (a: number, b: number) => number]> = [
  ['add', (a, b) => f(a + b)],
  ['sub', (a, b) => f(a - b)],
  ['mul', (a, b) => f(a * b)],
  ['div', (a, b) => f(a / b)],
  ['squaredDifference', (a, b) => f(f(a - b) * f(a - b))],
  ['equal', (a, b) => (a === b ? 1 : 0)],
  ['greater', (a, b) => (a > b ? 1 : 0)],
  ['maximum', (a, b) => (a < b ? b : a)],
];

function binaryReference(op: (a: number, b: number) => number, a: Float32Array, aShape: number[], b: Float32Array, bShape: number[]) {
  const shape = broadcastShape(aShape, bShape);
  const out = new Float32Array(size(shape));
  for (let i = 0; i < out.length; i++) {
    const at = unravel(i, shape);
    out[i] = op(a[broadcastOffset(at, aShape)], b[broadcastOffset(at, bShape)]);
  }
  return { shape, out };
}

describe('binary', () => {
  const shapes: Array<[string, number[], number[]]> = [
    ['same shape', [3, 4], [3, 4]],
    ['[B,C] + [C] (bias row)', [5, 3], [3]],
    ['[B,C] * [B,1] (column)', [4, 6], [4, 1]],
    ['scalar b', [2, 3], []],
    ['scalar a', [1], [2, 3]],
    ['general [2,1,3] + [4,1]', [2, 1, 3], [4, 1]],
    ['[3,1] against [1,3]', [3, 1], [1, 3]],
    ['[C] against [B,C] (a broadcast)', [3], [5, 3]],
    ['rank 6', [2, 1, 2, 1, 3, 1], [2, 1, 2, 1, 2]],
    ['big bias row', [300, 257], [257]],
    ['big column', [300, 257], [300, 1]],
    ['big general', [60, 1, 257], [7, 1]],
  ];
  for (const [label, aShape, bShape] of shapes) {
    test(`${label}: every op matches the reference`, async () => {
      const random = randomSource(aShape.length * 31 + bShape.length);
      const a = randomValues(random, size(aShape));
      const b = randomValues(random, size(bShape));
      // Some equal pairs, so equal/greater/maximum see ties.
      for (let i = 0; i < Math.min(a.length, b.length); i += 3) a[i] = b[i];
      for (let op = 0; op < binaryOps.length; op++) {
        const { shape, out } = binaryReference(binaryOps[op][1], a, aShape, b, bShape);
        const [result] = await run('binary', [input(a, aShape), input(b, bShape)], [shape], { op: binaryOps[op][0] });
        expect(result.shape).toEqual(shape);
        try {
          expectExact(result.values, out);
        } catch (error) {
          throw new Error(`op ${binaryOps[op][0]}: ${(error as Error).message}`);
        }
      }
    });
  }

  test('a hand-worked broadcast: [2,1] + [3]', async () => {
    const out = await run1('binary', [input([10, 20], [2, 1]), input([1, 2, 3], [3])], [[2, 3]], { op: 'add' });
    expectExact(out, [11, 12, 13, 21, 22, 23]);
  });

  test('the gradient of a bias add is reduce_to_shape of dy (finite differences)', async () => {
    const random = randomSource(7);
    const a = randomValues(random, 12);
    const bias = randomValues(random, 3);
    const dy = randomValues(random, 12);
    const loss = async (b: Float32Array) => {
      const y = await run1('binary', [input(a, [4, 3]), input(b, [3])], [[4, 3]], { op: 'mul' });
      return y.reduce((s, v, i) => s + v * dy[i], 0);
    };
    // d/d bias of sum(dy * a * bias) = sum over rows of dy * a.
    const dyA = await run1('binary', [input(dy, [4, 3]), input(a, [4, 3])], [[4, 3]], { op: 'mul' });
    const grad = await run1('reduce_to_shape', [input(dyA, [4, 3])], [[3]]);
    const h = 1e-2;
    for (let c = 0; c < 3; c++) {
      const plus = Float32Array.from(bias);
      const minus = Float32Array.from(bias);
      plus[c] += h;
      minus[c] -= h;
      const numeric = ((await loss(plus)) - (await loss(minus))) / (f(bias[c] + h) - f(bias[c] - h));
      expect(grad[c]).toBeCloseTo(numeric, 3);
    }
  });

  test('errors name the op and the shapes', async () => {
    const a = input([1, 2, 3, 4, 5, 6], [2, 3]);
    const b = input([1, 2], [2]);
    await expectError('binary', [a, b], [[2, 3]], { op: 'add' }, /do not broadcast.*\[2, 3\].*\[2\]|\[2, 3\] and \[2\] do not broadcast/);
    await expectError('binary', [a, input([1, 2, 3], [3])], [[3, 2]], { op: 'add' }, /output has shape \[3, 2\], expected \[2, 3\]/);
    await expectError('binary', [a, input([1, 2, 3], [3])], [[6]], { op: 'add' }, /expected \[2, 3\]/);
    await expectError('binary', [a], [[2, 3]], { op: 'add' }, /kernel binary takes 2 inputs, got 1/);
    await expectError('binary', [a, a], [[2, 3], [2, 3]], { op: 'add' }, /kernel binary takes 1 outputs, got 2/);
    // Ops travel by name; the codes exist in C++ only.
    await expectError('binary', [a, a], [[2, 3]], { op: 'no_such_op' }, /attr 'op' of kernel binary must be one of 'add', 'sub', .*, got 'no_such_op'/);
    await expectError('binary', [a, a], [[2, 3]], { op: 3 }, /attr 'op' of kernel binary must be one of/);
    await expectError('binary', [a, a], [[2, 3]], { op: 'add', scale: 2 }, /kernel binary has no attr 'scale' \(it takes: op\)/);
    await expectError('binary', [a, a], [[2, 3]], {}, /attr 'op' of kernel binary is required/);
    await expectError('binary', [input([1, 2], [1, 1, 1, 1, 1, 1, 2]), input([1, 2], [2, 1])], [[1, 1, 1, 1, 1, 2, 2]], { op: 'add' }, /rank <= 6/);
    const ints = hb.tensor(new Int32Array([1, 2, 3, 4, 5, 6]), [2, 3]).handle;
    await expectError('binary', [a, ints], [[2, 3]], { op: 'add' }, /kernel binary input 1 \(b\) must be float32, got int32/);
  });
});

// ---------------------------------------------------------------------------------------
// unary and unary_grad

const sigmoid = (x: number) => (x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x)));

// [op, name, reference, exact?, domain]
const unaryOps: Array<[number, string, (x: number, c: number) => number, boolean, [number, number]]> = [
  [0, 'relu', (x) => (x < 0 ? 0 : x), true, [-3, 3]],
  [1, 'sigmoid', (x) => sigmoid(x), false, [-20, 20]],
  [2, 'tanh', (x) => Math.tanh(x), false, [-3, 3]],
  [3, 'neg', (x) => -x, true, [-3, 3]],
  [4, 'scale', (x, c) => f(x * f(c)), true, [-3, 3]],
  [5, 'exp', (x) => Math.exp(x), false, [-5, 5]],
  [6, 'log', (x) => Math.log(x), false, [0.01, 10]],
  [7, 'square', (x) => f(x * x), true, [-3, 3]],
  [8, 'sqrt', (x) => f(Math.sqrt(x)), true, [0, 10]],
  [9, 'addConstant', (x, c) => f(x + f(c)), true, [-3, 3]],
];

// [op, reference of dx from (dy, v), whether v is the op's output]
const unaryGrads: Array<[number, (dy: number, v: number) => number, boolean]> = [
  [0, (dy, y) => (y > 0 ? dy : 0), true],
  [1, (dy, y) => f(f(dy * y) * f(1 - y)), true],
  [2, (dy, y) => f(dy * f(1 - f(y * y))), true],
  [5, (dy, y) => f(dy * y), true],
  [6, (dy, x) => f(dy / x), false],
  [7, (dy, x) => f(dy * f(2 * x)), false],
  [8, (dy, y) => f(f(0.5 * dy) / y), true],
];

describe('unary', () => {
  for (const [op, name, reference, exact, [lo, hi]] of unaryOps) {
    test(`${name} matches the reference`, async () => {
      const random = randomSource(op + 100);
      const n = 40000; // big enough to run on the pool
      const x = randomValues(random, n, lo, hi);
      x[0] = lo;
      x[1] = hi;
      if (lo < 0) x[2] = 0;
      const c = 0.37;
      const out = await run1('unary', [input(x, [200, 200])], [[n]], { op: name, c });
      const expected = Array.from(x, (v) => reference(v, c));
      if (exact) expectExact(out, expected);
      else expectClose(out, expected, 2e-6, 1e-7);
    });
  }

  test('sigmoid does not overflow for large |x|, and relu keeps NaN', async () => {
    const s = await run1('unary', [input([-100, -90, 0, 90, 100], [5])], [[5]], { op: 'sigmoid' });
    expect(Array.from(s)).toEqual([f(Math.exp(-100)), f(Math.exp(-90)), 0.5, 1, 1]);
    const r = await run1('unary', [input([NaN, -1, 2], [3])], [[3]], { op: 'relu' });
    expect(Number.isNaN(r[0])).toBe(true);
    expect(Array.from(r.subarray(1))).toEqual([0, 2]);
  });

  test('errors', async () => {
    const x = input([1, 2, 3], [3]);
    await expectError('unary', [x], [[4]], { op: 'relu' }, /input \[3\] and output \[4\] differ in size/);
    await expectError('unary', [x], [[3]], { op: 'no_such_op' }, /attr 'op' of kernel unary must be one of 'relu', .*'addConstant', got 'no_such_op'/);
    await expectError('unary', [x], [[3]], { op: 'scale' }, /unary op 'scale' needs attr c \(the constant\)/);
    await expectError('unary', [x], [[3]], { op: 'addConstant' }, /needs attr c/);
    await expectError('unary', [x], [[3]], { op: 'scale', c: Number.NaN }, /attr 'c' of kernel unary must be a finite number/);
    await expectError('unary', [x, x], [[3]], { op: 'relu' }, /kernel unary takes 1 inputs, got 2/);
    await expectError('unary', [x], [], { op: 'relu' }, /kernel unary takes 1 outputs, got 0/);
  });
});

describe('unary_grad', () => {
  for (const [op, reference, readsOutput] of unaryGrads) {
    const name = unaryOps[op][1];
    const [lo, hi] = unaryOps[op][4];
    test(`${name}: exact rounding, and finite differences of the forward kernel`, async () => {
      const random = randomSource(op + 200);
      const n = 64;
      // Away from relu's kink and sqrt's/log's pole.
      const x = randomValues(random, n, lo === 0 || lo === 0.01 ? 0.5 : lo, hi);
      if (op === 0) for (let i = 0; i < n; i++) if (Math.abs(x[i]) < 0.05) x[i] = 0.5;
      const dy = randomValues(random, n);
      const y = await run1('unary', [input(x, [n])], [[n]], { op: name });
      const v = readsOutput ? y : x;
      const dx = await run1('unary_grad', [input(dy, [n]), input(v, [n])], [[n]], { op: name });
      expectExact(dx, Array.from(dy, (g, i) => reference(g, v[i])));

      const h = 1e-2;
      const plus = Float32Array.from(x, (v) => v + h);
      const minus = Float32Array.from(x, (v) => v - h);
      const yPlus = await run1('unary', [input(plus, [n])], [[n]], { op: name });
      const yMinus = await run1('unary', [input(minus, [n])], [[n]], { op: name });
      for (let i = 0; i < n; i++) {
        const numeric = (dy[i] * (yPlus[i] - yMinus[i])) / (plus[i] - minus[i]);
        expect(Math.abs(dx[i] - numeric)).toBeLessThan(2e-3 * Math.max(1, Math.abs(numeric)));
      }
    });
  }

  test('relu passes dy where the output is positive', async () => {
    const dx = await run1('unary_grad', [input([1, 2, 3, 4], [4]), input([0, 0.5, 0, 7], [4])], [[4]], { op: 'relu' });
    expect(Array.from(dx)).toEqual([0, 2, 0, 4]);
  });

  test('errors', async () => {
    const x = input([1, 2, 3], [3]);
    await expectError('unary_grad', [x, x], [[3]], { op: 'neg' }, /op 'neg' has no gradient kernel/);
    await expectError('unary_grad', [x, x], [[3]], { op: 'addConstant' }, /op 'addConstant' has no gradient kernel/);
    await expectError('unary_grad', [x, input([1, 2], [2])], [[3]], { op: 'sigmoid' }, /dy \[3\], y \[2\] and dx \[3\] differ in size/);
    await expectError('unary_grad', [x, input([1, 2], [2])], [[3]], { op: 'square' }, /x \[2\]/);
    await expectError('unary_grad', [x], [[3]], { op: 'relu' }, /kernel unary_grad takes 2 inputs, got 1/);
  });
});

// ---------------------------------------------------------------------------------------
// reduce_to_shape and broadcast_to

/** Sums `x` (shape s) down to shape t: each output's terms in row-major order, blocked. */
function reduceReference(x: Float32Array, s: number[], t: number[], scale = 1): Float32Array {
  const out = new Float32Array(size(t));
  const terms: number[][] = Array.from({ length: out.length }, () => []);
  for (let i = 0; i < x.length; i++) terms[broadcastOffset(unravel(i, s), t)].push(x[i]);
  for (let o = 0; o < out.length; o++) out[o] = f(blockedSum(terms[o]) * f(scale));
  return out;
}

function broadcastReference(x: Float32Array, t: number[], s: number[], scale = 1): Float32Array {
  const out = new Float32Array(size(s));
  for (let i = 0; i < out.length; i++) out[i] = f(x[broadcastOffset(unravel(i, s), t)] * f(scale));
  return out;
}

const reduceCases: Array<[string, number[], number[], number?]> = [
  ['[B,C] -> [C] (bias gradient)', [7, 5], [5]],
  ['[B,C] -> [1,C]', [7, 5], [1, 5]],
  ['[B,C] -> [B,1]', [7, 5], [7, 1]],
  ['[B,C] -> [] (reduce_sum)', [7, 5], []],
  ['[B,C] -> [1,1] times 1/35 (reduce_mean)', [7, 5], [1, 1], 1 / 35],
  ['[2,3,4] -> [1,3,1] (two reduced runs)', [2, 3, 4], [1, 3, 1]],
  ['[2,3,4] -> [2,1,4] (middle)', [2, 3, 4], [2, 1, 4]],
  ['[2,3,4,5] -> [3,1,5]', [2, 3, 4, 5], [3, 1, 5]],
  ['[4,1,3] -> [1,3] (size-1 dims)', [4, 1, 3], [1, 3]],
  ['no reduction, scaled', [2, 3], [2, 3], 0.5],
  ['[4096, 512] -> [512] (big bias gradient)', [4096, 512], [512]],
  ['[9000, 3] -> [3] (several row blocks)', [9000, 3], [3]],
  ['[9000, 300] -> [1, 300] (row blocks, column blocks)', [9000, 300], [1, 300]],
  ['[3, 9000] -> [3, 1] (long rows)', [3, 9000], [3, 1]],
  ['[100000] -> [] (blocked scalar)', [100000], []],
  ['[10, 3, 5000] -> [1, 3, 1] (long general sums)', [10, 3, 5000], [1, 3, 1]],
  ['[0, 4] -> [4] (nothing to sum)', [0, 4], [4]],
];

describe('reduce_to_shape', () => {
  for (const [label, s, t, scale] of reduceCases) {
    test(label, async () => {
      const random = randomSource(s.length * 7 + t.length);
      const x = randomValues(random, size(s));
      const attrs: Record<string, KernelAttrValue> = scale === undefined ? {} : { scale };
      const [result] = await run('reduce_to_shape', [input(x, s)], [t], attrs);
      expect(result.shape).toEqual(t);
      expectExact(result.values, reduceReference(x, s, t, scale));
    });
  }

  test('hand-worked: [[1,2,3],[4,5,6]] -> [3], [2,1] and []', async () => {
    const x = input([1, 2, 3, 4, 5, 6], [2, 3]);
    expectExact(await run1('reduce_to_shape', [x], [[3]]), [5, 7, 9]);
    expectExact(await run1('reduce_to_shape', [x], [[2, 1]]), [6, 15]);
    expectExact(await run1('reduce_to_shape', [x], [[]], { scale: 2 }), [42]);
  });

  test('the output is written whole even when a buffer is reused', async () => {
    const out = input([9, 9, 9], [3]);
    await run('reduce_to_shape', [input([], [0, 3])], [out]);
    expectExact((await new hb.Tensor(out).data()) as Float32Array, [0, 0, 0]);
  });

  test('errors', async () => {
    const x = input([1, 2, 3, 4, 5, 6], [2, 3]);
    await expectError('reduce_to_shape', [x], [[2]], {}, /shape \[2\] does not broadcast to \[2, 3\] \(dim 1\)/);
    await expectError('reduce_to_shape', [x], [[1, 2, 3]], {}, /\[1, 2, 3\] does not broadcast to \[2, 3\] \(higher rank\)/);
    await expectError('reduce_to_shape', [x, x], [[3]], {}, /kernel reduce_to_shape takes 1 inputs, got 2/);
  });
});

describe('broadcast_to', () => {
  const cases: Array<[number[], number[], number?]> = [
    [[3], [4, 3]],
    [[4, 1], [4, 3]],
    [[], [2, 3], 2],
    [[2, 1, 3], [2, 4, 3]],
    [[1, 3, 1], [2, 3, 4], 0.25],
    [[2, 3], [2, 3]],
    [[257], [300, 257]],
  ];
  for (const [t, s, scale] of cases) {
    test(`[${t}] -> [${s}]${scale ? ` times ${scale}` : ''}`, async () => {
      const random = randomSource(t.length + 3 * s.length);
      const x = randomValues(random, size(t));
      const attrs: Record<string, KernelAttrValue> = scale === undefined ? {} : { scale };
      const [result] = await run('broadcast_to', [input(x, t)], [s], attrs);
      expect(result.shape).toEqual(s);
      expectExact(result.values, broadcastReference(x, t, s, scale));
    });
  }

  test('is the adjoint of reduce_to_shape: <reduce(x), y> = <x, broadcast(y)>', async () => {
    const random = randomSource(11);
    const s = [3, 4, 5];
    const t = [4, 1];
    const x = randomValues(random, size(s));
    const y = randomValues(random, size(t));
    const rx = await run1('reduce_to_shape', [input(x, s)], [t]);
    const by = await run1('broadcast_to', [input(y, t)], [s]);
    const left = rx.reduce((acc, v, i) => acc + v * y[i], 0);
    const right = by.reduce((acc, v, i) => acc + v * x[i], 0);
    expect(left).toBeCloseTo(right, 4);
  });

  test('errors', async () => {
    await expectError('broadcast_to', [input([1, 2], [2])], [[2, 3]], {}, /shape \[2\] does not broadcast to \[2, 3\]/);
    await expectError('broadcast_to', [input([1, 2], [2])], [], {}, /kernel broadcast_to takes 1 outputs, got 0/);
  });
});

// ---------------------------------------------------------------------------------------
// bias_activation and activation_grad_bias: a dense layer's element-wise work fused. Each
// must give the bits of the kernels it stands for (binary add then unary; unary_grad then
// reduce_to_shape), which the tests above check against references.

const denseShapes: Array<[string, number[]]> = [
  ['[7, 5]', [7, 5]],
  ['[5] (rank 1)', [5]],
  ['[1, 1]', [1, 1]],
  ['[256, 8] (one whole row block)', [256, 8]],
  ['[257, 8] (a row past it)', [257, 8]],
  ['[256, 600] (one row block, several column blocks)', [256, 600]],
  ['[600, 300] (row blocks, rows wider than a column block)', [600, 300]],
  ['[2, 3, 4] (rank 3)', [2, 3, 4]],
  ['[1, 4] (one row)', [1, 4]],
  ['[9, 1] (one column)', [9, 1]],
  ['[0, 4] (no rows)', [0, 4]],
  ['[4, 0] (no columns)', [4, 0]],
];

describe('bias_activation', () => {
  for (const [label, shape] of denseShapes) {
    test(`${label}: relu, sigmoid and tanh give binary add then unary, bit for bit`, async () => {
      const random = randomSource(shape.reduce((a, b) => a + b, 3));
      const n = shape[shape.length - 1];
      const x = input(randomValues(random, size(shape)), shape);
      const bias = input(randomValues(random, n), [n]);
      const [sum] = await run('binary', [x, bias], [shape], { op: 'add' });
      for (const op of ['relu', 'sigmoid', 'tanh']) {
        const [fused] = await run('bias_activation', [x, bias], [shape], { op });
        expect(fused.shape).toEqual(shape);
        const expected = await run1('unary', [input(sum.values, shape)], [shape], { op });
        expectExact(fused.values, expected);
      }
    });
  }

  test('relu of x + b, hand-worked (NaN kept)', async () => {
    const y = await run1('bias_activation', [input([1, -2, 3, NaN, 0.5, -4], [2, 3]), input([0.5, 1, -3], [3])], [[2, 3]], { op: 'relu' });
    expectExact(y, [1.5, 0, 0, NaN, 1.5, 0]);
  });

  test('errors', async () => {
    const x = input([1, 2, 3, 4, 5, 6], [2, 3]);
    await expectError('bias_activation', [x, input([1, 2], [2])], [[2, 3]], { op: 'relu' }, /the bias has shape \[2\], expected \[3\] \(x's last dim\)/);
    await expectError('bias_activation', [x, input([1, 2, 3], [1, 3])], [[2, 3]], { op: 'relu' }, /the bias has shape \[1, 3\], expected \[3\]/);
    await expectError('bias_activation', [x, input([1, 2, 3], [3])], [[3, 2]], { op: 'relu' }, /x \[2, 3\] and y \[3, 2\] must have one shape/);
    await expectError('bias_activation', [x, input([1, 2, 3], [3])], [[2, 3]], { op: 'scale' }, /op 'scale' takes a constant/);
    await expectError('bias_activation', [x], [[2, 3]], { op: 'relu' }, /kernel bias_activation takes 2 inputs, got 1/);
  });
});

describe('activation_grad_bias', () => {
  for (const [label, shape] of denseShapes) {
    test(`${label}: gives unary_grad then reduce_to_shape, bit for bit`, async () => {
      const random = randomSource(shape.reduce((a, b) => a + b, 5));
      const n = shape[shape.length - 1];
      const dy = input(randomValues(random, size(shape)), shape);
      for (const op of ['relu', 'sigmoid', 'tanh', 'square']) {
        // y for relu: zeros where the forward's input was negative.
        const v = input(randomValues(random, size(shape)).map((x) => (op === 'relu' && x < 0 ? 0 : x)), shape);
        const [dz, db] = await run('activation_grad_bias', [dy, v], [shape, [n]], { op });
        expect([dz.shape, db.shape]).toEqual([shape, [n]]);
        const [unfused] = await run('unary_grad', [dy, v], [shape], { op });
        expectExact(dz.values, unfused.values);
        expectExact(db.values, await run1('reduce_to_shape', [input(unfused.values, shape)], [[n]]));
      }
    });
  }

  test('no rows or no columns: zeros or nothing, in a child process (once a division by zero, SIGFPE)', () => {
    // The fused path split dz's rows into blocks of none; the process died, so the check
    // runs where a crash cannot take jest down with it.
    const nativePath = JSON.stringify(path.resolve(__dirname, '../dist/native.js'));
    const indexPath = JSON.stringify(path.resolve(__dirname, '../dist/index.js'));
    const script = `
      const hb = require(${indexPath});
      const { native } = require(${nativePath});
      (async () => {
        const out = [];
        for (const shape of [[0, 4], [4, 0], [0, 0]]) {
          const t = hb.tensor(new Float32Array(shape[0] * shape[1]), shape, undefined, { device: 'cpu' }).handle;
          const [dz, db] = await native.kernelRun('activation_grad_bias', [t, t], [shape, [shape[1]]], { op: 'relu' }, 'x');
          out.push([...new hb.Tensor(db).shape].join('x') + ':' + Array.from(await new hb.Tensor(db).data()).join(','));
          const [y] = await native.kernelRun('bias_activation', [t, hb.tensor(new Float32Array(shape[1]), [shape[1]], undefined, { device: 'cpu' }).handle], [shape], { op: 'relu' }, 'x');
          out.push([...new hb.Tensor(y).shape].join('x'));
        }
        console.log(out.join(' '));
      })().catch((e) => { console.error(e); process.exit(1); });
    `;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, HB_ADDON: loadedAddonPath() }, timeout: 60_000 });
    expect({ signal: r.signal, status: r.status, stderr: r.stderr.trim() }).toEqual({ signal: null, status: 0, stderr: '' });
    expect(r.stdout.trim()).toBe('4:0,0,0,0 0x4 0: 4x0 0: 0x0');
  });

  test('the bias gradient is written whole when a buffer is reused', async () => {
    const db = input([9, 9, 9], [3]);
    await run('activation_grad_bias', [input([], [0, 3]), input([], [0, 3])], [[0, 3], db], { op: 'relu' });
    expectExact((await new hb.Tensor(db).data()) as Float32Array, [0, 0, 0]);
  });

  test('errors', async () => {
    const x = input([1, 2, 3, 4, 5, 6], [2, 3]);
    await expectError('activation_grad_bias', [x, x], [[2, 3], [2]], { op: 'relu' }, /the bias gradient has shape \[2\], expected \[3\] \(dy's last dim\)/);
    await expectError('activation_grad_bias', [x, input([1, 2, 3], [3])], [[2, 3], [3]], { op: 'relu' }, /dy \[2, 3\], y \[3\] and dz \[2, 3\] must have one shape/);
    await expectError('activation_grad_bias', [x, x], [[2, 3], [3]], { op: 'neg' }, /op 'neg' has no gradient kernel/);
    await expectError('activation_grad_bias', [x, x], [[2, 3]], { op: 'relu' }, /kernel activation_grad_bias takes 2 outputs, got 1/);
  });
});

// ---------------------------------------------------------------------------------------
// concat, split_axis, copy

function concatReference(parts: Float32Array[], shapes: number[][], axis: number) {
  const outShape = [...shapes[0]];
  outShape[axis] = shapes.reduce((s, sh) => s + sh[axis], 0);
  const out = new Float32Array(size(outShape));
  for (let i = 0; i < out.length; i++) {
    const at = unravel(i, outShape);
    let k = 0;
    let along = at[axis];
    while (along >= shapes[k][axis]) along -= shapes[k++][axis];
    const local = [...at];
    local[axis] = along;
    out[i] = parts[k][broadcastOffset(local, shapes[k])];
  }
  return { outShape, out };
}

describe('concat and split_axis', () => {
  const cases: Array<[number, number[][]]> = [
    [0, [[2, 3], [1, 3], [4, 3]]],
    [1, [[2, 3], [2, 1], [2, 5]]],
    [1, [[2, 3, 2], [2, 4, 2]]],
    [2, [[2, 3, 2], [2, 3, 1], [2, 3, 0], [2, 3, 3]]],
    [0, [[5]]],
    [1, [[500, 64], [500, 13], [500, 200]]],
  ];
  for (const [axis, shapes] of cases) {
    test(`axis ${axis} of ${JSON.stringify(shapes)}; splitting gives the parts back`, async () => {
      const random = randomSource(axis + shapes.length);
      const parts = shapes.map((s) => randomValues(random, size(s)));
      const { outShape, out } = concatReference(parts, shapes, axis);
      const [result] = await run('concat', parts.map((p, k) => input(p, shapes[k])), [outShape], { axis });
      expect(result.shape).toEqual(outShape);
      expectExact(result.values, out);
      // split_axis (concat's gradient) gives every part back in one call.
      const split = await run('split_axis', [input(result.values, outShape)], shapes, { axis });
      split.forEach((piece, k) => {
        expect(piece.shape).toEqual(shapes[k]);
        expectExact(piece.values, parts[k]);
      });
    });
  }

  test('split_axis errors', async () => {
    const x = input([1, 2, 3, 4, 5, 6], [2, 3]);
    await expectError('split_axis', [x], [[2, 1], [2, 1]], { axis: 1 }, /the outputs' dims on axis 1 add up to 2, but the input \[2, 3\] has 3/);
    await expectError('split_axis', [x], [[2, 1], [1, 2]], { axis: 1 }, /output 1 has shape \[1, 2\], which does not fit input \[2, 3\] along axis 1/);
    await expectError('split_axis', [x], [[2, 3]], { axis: 2 }, /axis 2 must be an integer in \[0, 2\)/);
  });

  test('hand-worked', async () => {
    const out = await run1('concat', [input([1, 2, 3, 4], [2, 2]), input([5, 6], [2, 1])], [[2, 3]], { axis: 1 });
    expectExact(out, [1, 2, 5, 3, 4, 6]);
    const [left, middle, right] = await run('split_axis', [input([1, 2, 3, 4, 5, 6], [2, 3])], [[2, 1], [2, 1], [2, 1]], { axis: 1 });
    expectExact(left.values, [1, 4]);
    expectExact(middle.values, [2, 5]);
    expectExact(right.values, [3, 6]);
  });

  test('concat errors', async () => {
    const a = input([1, 2, 3, 4], [2, 2]);
    const b = input([1, 2, 3], [3, 1]);
    await expectError('concat', [a, b], [[2, 3]], { axis: 1 }, /input 1 has shape \[3, 1\], which does not fit output \[2, 3\] along axis 1/);
    await expectError('concat', [a, a], [[2, 5]], { axis: 1 }, /dims on axis 1 add up to 4, but the output \[2, 5\] has 5/);
    await expectError('concat', [a, a], [[2, 4]], { axis: 2 }, /axis 2 must be an integer in \[0, 2\)/);
    await expectError('concat', [a, a], [[2, 4]], { axis: -1 }, /axis -1 must be an integer/);
    await expectError('concat', [a, a], [[2, 4]], { axis: 0.5 }, /must be an integer/);
    await expectError('concat', [a, a], [[2, 4]], {}, /attr 'axis' of kernel concat is required/);
    await expectError('concat', [a, input([1, 2], [2])], [[2, 3]], { axis: 1 }, /input 1 has shape \[2\]/);
    await expectError('concat', [], [[2, 4]], { axis: 0 }, /takes 1 or more inputs and 1 output, got 0 and 1/);
  });

});

describe('copy', () => {
  test('reshapes into a new buffer', async () => {
    const random = randomSource(5);
    for (const n of [6, 4096 * 3 + 17]) {
      const x = randomValues(random, n);
      const [result] = await run('copy', [input(x, [n])], [[1, n]]);
      expect(result.shape).toEqual([1, n]);
      expectExact(result.values, x);
    }
  });

  test('errors', async () => {
    await expectError('copy', [input([1, 2, 3], [3])], [[2, 2]], {}, /input \[3\] and output \[2, 2\] differ in size/);
    await expectError('copy', [input([1], [1])], [[1], [1]], {}, /kernel copy takes 1 outputs, got 2/);
  });
});

// ---------------------------------------------------------------------------------------
// losses

describe('sigmoid_xent', () => {
  test("TF's documented values", async () => {
    // tf.nn.sigmoid_cross_entropy_with_logits's docstring example.
    const logits = [1, -1, 0, 1, -1, 0, 0];
    const labels = [0, 0, 0, 1, 1, 1, 0.5];
    const out = await run1('sigmoid_xent', [input(labels, [7]), input(logits, [7])], [[7]]);
    const expected = [1.3132617, 0.3132617, 0.6931472, 0.3132617, 1.3132617, 0.6931472, 0.6931472];
    expectClose(out, expected, 1e-6);
  });

  test('hand-computed [[1,-1],[-2,2]] and extreme logits', async () => {
    const out = await run1('sigmoid_xent', [input([1, 0, 0, 1], [2, 2]), input([1, -1, -2, 2], [2, 2])], [[2, 2]]);
    const l1 = Math.log1p(Math.exp(-1));
    const l2 = Math.log1p(Math.exp(-2));
    expectClose(out, [l1, l1, l2, l2], 1e-6);
    const extreme = await run1('sigmoid_xent', [input([0, 1, 1, 0], [4]), input([100, -100, 100, -100], [4])], [[4]]);
    expectClose(extreme, [100, 100, 0, 0], 1e-6, 1e-30);
  });

  test('random values against the formula', async () => {
    const random = randomSource(21);
    const n = 50000;
    const x = randomValues(random, n, -30, 30);
    const z = Float32Array.from({ length: n }, () => (random() < 0.5 ? 0 : 1));
    const out = await run1('sigmoid_xent', [input(z, [n]), input(x, [n])], [[n]]);
    const expected = Array.from(x, (v, i) => Math.max(v, 0) - v * z[i] + Math.log1p(Math.exp(-Math.abs(v))));
    expectClose(out, expected, 1e-6, 1e-7);
  });

  test('the gradient is dy * (sigmoid(x) - z), and matches finite differences', async () => {
    const random = randomSource(22);
    const n = 32;
    const x = randomValues(random, n, -4, 4);
    const z = Float32Array.from({ length: n }, () => (random() < 0.5 ? 0 : 1));
    const dy = randomValues(random, n);
    const dx = await run1('sigmoid_xent_grad', [input(dy, [n]), input(z, [n]), input(x, [n])], [[n]]);
    expectClose(dx, Array.from(x, (v, i) => dy[i] * (sigmoid(v) - z[i])), 1e-6, 1e-7);
    const h = 1e-2;
    const plus = Float32Array.from(x, (v) => v + h);
    const minus = Float32Array.from(x, (v) => v - h);
    const lp = await run1('sigmoid_xent', [input(z, [n]), input(plus, [n])], [[n]]);
    const lm = await run1('sigmoid_xent', [input(z, [n]), input(minus, [n])], [[n]]);
    for (let i = 0; i < n; i++) {
      const numeric = (dy[i] * (lp[i] - lm[i])) / (plus[i] - minus[i]);
      expect(Math.abs(dx[i] - numeric)).toBeLessThan(2e-3);
    }
  });

  test('errors', async () => {
    const a = input([1, 2, 3], [3]);
    const b = input([1, 2], [2]);
    await expectError('sigmoid_xent', [a, b], [[3]], {}, /labels \[3\], logits \[2\] and output \[3\] differ in size/);
    await expectError('sigmoid_xent', [a, a], [[2]], {}, /differ in size/);
    await expectError('sigmoid_xent', [a], [[3]], {}, /kernel sigmoid_xent takes 2 inputs, got 1/);
    await expectError('sigmoid_xent_grad', [a, a, b], [[3]], {}, /dy \[3\], labels \[3\], logits \[2\] and output \[3\] differ in size/);
    await expectError('sigmoid_xent_grad', [a, a], [[3]], {}, /kernel sigmoid_xent_grad takes 3 inputs, got 2/);
  });
});

describe('weighted_mean', () => {
  test('SUM_BY_NONZERO_WEIGHTS, hand-worked', async () => {
    const v = input([1, 2, 3, 4], [4]);
    expectExact(await run1('weighted_mean', [v, input([1, 0, 2, 0], [4])], [[]]), [3.5]);
    expectExact(await run1('weighted_mean', [v, input([2], [1])], [[1]]), [5]);
    expectExact(await run1('weighted_mean', [v, input([0], [])], [[]]), [0]);
    expectExact(await run1('weighted_mean', [v, input([0, 0, 0, 0], [4])], [[]]), [0]);
    expectExact(await run1('weighted_mean', [v], [[]]), [2.5]);
    expectExact(await run1('weighted_mean', [input([], [0])], [[]]), [0]);
    // Negative weights count as present.
    expectExact(await run1('weighted_mean', [v, input([-1, 0, 0, 1], [4])], [[]]), [1.5]);
  });

  test('a big batch: blocked float32 sum over the nonzero count', async () => {
    const random = randomSource(31);
    const n = 20000;
    const v = randomValues(random, n, 0, 3);
    const w = Float32Array.from({ length: n }, () => (random() < 0.3 ? 0 : f(random())));
    const present = w.reduce((c, x) => c + (x !== 0 ? 1 : 0), 0);
    const out = await run1('weighted_mean', [input(v, [n]), input(w, [n])], [[]]);
    expectExact(out, [f(blockedSum(Array.from(v, (x, i) => f(x * w[i]))) / present)]);
    const plain = await run1('weighted_mean', [input(v, [n, 1])], [[1]]);
    expectExact(plain, [f(blockedSum(v) / n)]);
  });

  test('the gradient is (dy / count) * w, and matches finite differences', async () => {
    const w = input([1, 0, 2, 0], [4]);
    expectExact(await run1('weighted_mean_grad', [input([3], []), w], [[4]]), [1.5, 0, 3, 0]);
    expectExact(await run1('weighted_mean_grad', [input([3], [])], [[4]]), [0.75, 0.75, 0.75, 0.75]);
    expectExact(await run1('weighted_mean_grad', [input([3], [1]), input([2], [1])], [[3]]), [2, 2, 2]);
    expectExact(await run1('weighted_mean_grad', [input([3], [1]), input([0, 0], [2])], [[2]]), [0, 0]);

    const random = randomSource(32);
    const n = 6;
    const values = randomValues(random, n);
    const weights = Float32Array.from([0.5, 0, 2, 1, 0, 3]);
    const grad = await run1('weighted_mean_grad', [input([1], []), input(weights, [n])], [[n]]);
    const h = 1e-2;
    for (let i = 0; i < n; i++) {
      const plus = Float32Array.from(values);
      const minus = Float32Array.from(values);
      plus[i] += h;
      minus[i] -= h;
      const lp = await run1('weighted_mean', [input(plus, [n]), input(weights, [n])], [[]]);
      const lm = await run1('weighted_mean', [input(minus, [n]), input(weights, [n])], [[]]);
      expect(grad[i]).toBeCloseTo((lp[0] - lm[0]) / (plus[i] - minus[i]), 3);
    }
  });

  test('errors', async () => {
    const v = input([1, 2, 3, 4], [4]);
    await expectError('weighted_mean', [v, input([1, 2, 3], [3])], [[]], {}, /weights \[3\] must have 1 element or one per value \(4 values\)/);
    await expectError('weighted_mean', [v], [[2]], {}, /the output \[2\] must be a scalar/);
    await expectError('weighted_mean', [v, v, v], [[]], {}, /kernel weighted_mean takes 2 inputs, got 3/);
    await expectError('weighted_mean', [], [[]], {}, /kernel weighted_mean takes 2 inputs, got 0/);
    await expectError('weighted_mean_grad', [v], [[4]], {}, /dy \[4\] must be a scalar/);
    await expectError('weighted_mean_grad', [input([1], []), input([1, 2], [2])], [[4]], {}, /weights \[2\] must have 1 element or one per value \(4 outputs\)/);
    await expectError('weighted_mean_grad', [input([1], [])], [[4], [4]], {}, /kernel weighted_mean_grad takes 1 outputs, got 2/);
  });
});

// ---------------------------------------------------------------------------------------
// dot_interaction

function interactionReference(t: Float32Array, batch: number, features: number, width: number) {
  const pairs = (features * (features - 1)) / 2;
  const out = new Float32Array(batch * pairs);
  for (let b = 0; b < batch; b++) {
    let p = 0;
    for (let i = 1; i < features; i++) {
      for (let j = 0; j < i; j++) {
        let s = 0;
        for (let k = 0; k < width; k++) s = f(s + f(t[(b * features + i) * width + k] * t[(b * features + j) * width + k]));
        out[b * pairs + p++] = s;
      }
    }
  }
  return out;
}

function interactionGradReference(dz: Float32Array, t: Float32Array, batch: number, features: number, width: number) {
  const pairs = (features * (features - 1)) / 2;
  const pair = (i: number, j: number) => (i * (i - 1)) / 2 + j;
  const out = new Float32Array(t.length);
  for (let b = 0; b < batch; b++) {
    for (let i = 0; i < features; i++) {
      for (let k = 0; k < width; k++) {
        let s = 0;
        for (let j = 0; j < features; j++) {
          if (j === i) continue;
          const g = dz[b * pairs + (j < i ? pair(i, j) : pair(j, i))];
          s = f(s + f(g * t[(b * features + j) * width + k]));
        }
        out[(b * features + i) * width + k] = s;
      }
    }
  }
  return out;
}

/** Feature i's vectors of a [batch, F * D] tensor, as [batch, D]. */
function featureColumns(t: Float32Array, batch: number, features: number, width: number, i: number): Float32Array {
  const out = new Float32Array(batch * width);
  for (let b = 0; b < batch; b++) out.set(t.subarray((b * features + i) * width, (b * features + i + 1) * width), b * width);
  return out;
}

describe('dot_interaction', () => {
  const cases: Array<[number, number, number]> = [
    [3, 4, 5],
    [2, 1, 3],
    [5, 2, 1],
    [700, 9, 16],
    [37, 27, 64], // DLRM's 26 tables + the bottom MLP; examples run in blocks of 16 on the CPU
    [37, 27, 16], // Criteo Kaggle DLRM's width: the AVX-512 gradient's blocked path (351 pairs: 21 tiles of 16 and 15 more)
    [32, 2, 16], // the blocked path with one pair
    [16, 1, 16], // and with none (every gradient zero)
    [37, 27, 8], // widths not a multiple of 16: the blocked path's last chunk of columns is cut
    [33, 7, 24],
    [17, 3, 5],
    [17, 4, 48], // a multiple of 16 past 16 that has no row loop of its own: blocked, three whole chunks
    [16, 3, 1],
    [20, 5, 16],
    [18, 6, 32],
    [17, 4, 128],
  ];
  for (const [batch, features, width] of cases) {
    test(`B=${batch} F=${features} D=${width}: forward and gradient match the references`, async () => {
      const random = randomSource(batch + features * 10 + width);
      const pairs = (features * (features - 1)) / 2;
      const t = randomValues(random, batch * features * width);
      const [z] = await run('dot_interaction', [input(t, [batch, features * width])], [[batch, pairs]], { features });
      expect(z.shape).toEqual([batch, pairs]);
      expectExact(z.values, interactionReference(t, batch, features, width));
      const dz = randomValues(random, batch * pairs);
      const dt = await run1('dot_interaction_grad', [input(dz, [batch, pairs]), input(t, [batch, features * width])], [[batch, features * width]], { features });
      expectExact(dt, interactionGradReference(dz, t, batch, features, width));
      // The same vectors as F inputs of [batch, D] (how graphs pass them): the same bits,
      // and one gradient per input.
      const pieces = Array.from({ length: features }, (_, i) => featureColumns(t, batch, features, width, i));
      const [zList] = await run('dot_interaction', pieces.map((x) => input(x, [batch, width])), [[batch, pairs]], { features });
      expectExact(zList.values, z.values);
      const dxs = await run('dot_interaction_grad', [input(dz, [batch, pairs]), ...pieces.map((x) => input(x, [batch, width]))], pieces.map(() => [batch, width]), { features });
      expect(dxs).toHaveLength(features);
      dxs.forEach((dx, i) => expectExact(dx.values, featureColumns(dt, batch, features, width, i)));
      // prefix: rows of [vector 0, the pairs] (DLRM's top MLP input), and a gradient of
      // those rows: vector 0's is dy's first D columns plus the pairs' part.
      const withPrefix = (pre: Float32Array, rest: Float32Array, restWidth: number) =>
        Float32Array.from({ length: batch * (width + restWidth) }, (_, e) => {
          const [b, c] = [Math.floor(e / (width + restWidth)), e % (width + restWidth)];
          return c < width ? pre[b * width + c] : rest[b * restWidth + c - width];
        });
      const dyPrefix = randomValues(random, batch * width);
      const dy = withPrefix(dyPrefix, dz, pairs);
      for (const stacked of [true, false]) {
        const inputs = stacked ? [input(t, [batch, features * width])] : pieces.map((x) => input(x, [batch, width]));
        const [zp] = await run('dot_interaction', inputs, [[batch, width + pairs]], { features, prefix: true });
        expectExact(zp.values, withPrefix(pieces[0], z.values, pairs));
        const outputs = stacked ? [[batch, features * width]] : pieces.map(() => [batch, width]);
        const grads = await run('dot_interaction_grad', [input(dy, [batch, width + pairs]), ...inputs], outputs, { features, prefix: true });
        const perFeature = stacked ? pieces.map((_, i) => featureColumns(grads[0].values, batch, features, width, i)) : grads.map((g) => g.values);
        perFeature.forEach((g, i) => {
          const expected = featureColumns(dt, batch, features, width, i);
          expectExact(g, i === 0 ? expected.map((v, e) => f(dyPrefix[e] + v)) : expected);
        });
      }
    });
  }

  test('prefix with one feature (no pairs) and with no examples', async () => {
    const x = [1, -2, 3, 4, 5, -6];
    expectExact(await run1('dot_interaction', [input(x, [3, 2])], [[3, 2]], { features: 1, prefix: true }), x);
    const dx = await run1('dot_interaction_grad', [input([0.5, 1, 2, 3, -1, 0], [3, 2]), input(x, [3, 2])], [[3, 2]], { features: 1, prefix: true });
    expectExact(dx, [0.5, 1, 2, 3, -1, 0]);
    const empty = input([], [0, 2]);
    const [z] = await run('dot_interaction', [empty, empty, empty], [[0, 5]], { features: 3, prefix: true });
    expect(z.shape).toEqual([0, 5]);
    const grads = await run('dot_interaction_grad', [input([], [0, 5]), empty, empty, empty], [[0, 2], [0, 2], [0, 2]], { features: 3, prefix: true });
    expect(grads.map((g) => g.shape)).toEqual([[0, 2], [0, 2], [0, 2]]);
  });

  test('prefix: shapes are checked against [batch, D + pairs]', async () => {
    const t = input([1, 2, 3, 4, 5, 6], [1, 6]);
    await expectError('dot_interaction', [t], [[1, 3]], { features: 3, prefix: true }, /the output has shape \[1, 3\], expected \[1, 5\] \(feature vector 0, then the pairs\)/);
    await expectError('dot_interaction_grad', [input([1, 2, 3], [1, 3]), t], [[1, 6]], { features: 3, prefix: true }, /dZ has shape \[1, 3\], expected \[1, 5\]/);
  });

  test('hand-worked pair order: (1,0), (2,0), (2,1)', async () => {
    // Vectors a=[1,2], b=[3,4], c=[5,6]: b.a=11, c.a=17, c.b=39.
    const z = await run1('dot_interaction', [input([1, 2, 3, 4, 5, 6], [1, 6])], [[1, 3]], { features: 3 });
    expectExact(z, [11, 17, 39]);
  });

  test('the gradient matches finite differences of the forward kernel', async () => {
    const random = randomSource(41);
    const [batch, features, width] = [2, 4, 3];
    const pairs = 6;
    const t = randomValues(random, batch * features * width);
    const dz = randomValues(random, batch * pairs);
    const dt = await run1('dot_interaction_grad', [input(dz, [batch, pairs]), input(t, [batch, features * width])], [[batch, features * width]], { features });
    const loss = async (values: Float32Array) => {
      const z = await run1('dot_interaction', [input(values, [batch, features * width])], [[batch, pairs]], { features });
      return z.reduce((s, v, i) => s + v * dz[i], 0);
    };
    const h = 1e-2;
    for (let e = 0; e < t.length; e++) {
      const plus = Float32Array.from(t);
      const minus = Float32Array.from(t);
      plus[e] += h;
      minus[e] -= h;
      const numeric = ((await loss(plus)) - (await loss(minus))) / (plus[e] - minus[e]);
      expect(dt[e]).toBeCloseTo(numeric, 3);
    }
  });

  test('errors', async () => {
    const t = input(new Float32Array(12), [2, 6]);
    await expectError('dot_interaction', [t], [[2, 3]], { features: 4 }, /the input \[2, 6\] should be \[batch, F \* D\] with F = 4/);
    await expectError('dot_interaction', [t], [[2, 3]], { features: 0 }, /attrs\[0\] \(the number of features F\) must be an integer in \[1, 65536\], got 0/);
    await expectError('dot_interaction', [t], [[2, 3]], { features: 2.5 }, /must be an integer/);
    await expectError('dot_interaction', [t], [[2, 3]], {}, /attr 'features' of kernel dot_interaction is required/);
    await expectError('dot_interaction', [t], [[2, 2]], { features: 3 }, /the output has shape \[2, 2\], expected \[2, 3\]/);
    await expectError('dot_interaction', [input(new Float32Array(6), [6])], [[1, 3]], { features: 3 }, /should be \[batch, F \* D\]/);
    await expectError('dot_interaction_grad', [input(new Float32Array(4), [2, 2]), t], [[2, 6]], { features: 3 }, /dZ has shape \[2, 2\], expected \[2, 3\]/);
    await expectError('dot_interaction_grad', [input(new Float32Array(6), [2, 3]), t], [[2, 5]], { features: 3 }, /the output has shape \[2, 5\], expected T's \[2, 6\]/);
    await expectError('dot_interaction_grad', [t], [[2, 6]], { features: 3 }, /kernel dot_interaction_grad takes dZ and 1 or more inputs/);
  });

  test('errors of the form with one input per feature', async () => {
    const x = input(new Float32Array(8), [2, 4]);
    const dz = input(new Float32Array(6), [2, 3]);
    await expectError('dot_interaction', [x, x], [[2, 3]], { features: 3 }, /2 feature inputs, but F \(attrs\[0\]\) is 3/);
    await expectError('dot_interaction', [x, input(new Float32Array(6), [2, 3]), x], [[2, 3]], { features: 3 }, /feature input 1 has shape \[2, 3\], but feature input 0 has \[2, 4\]/);
    await expectError('dot_interaction', [x, x, input(new Float32Array(12), [3, 4])], [[2, 3]], { features: 3 }, /feature input 2 has shape \[3, 4\]/);
    await expectError('dot_interaction', [input(new Float32Array(8), [8]), x, x], [[2, 3]], { features: 3 }, /feature input 0 should be \[batch, D\], got \[8\]/);
    await expectError('dot_interaction_grad', [dz, x, x, x], [[2, 4], [2, 4]], { features: 3 }, /2 outputs for 3 feature inputs/);
    await expectError('dot_interaction_grad', [dz, x, x, x], [[2, 4], [2, 4], [2, 5]], { features: 3 }, /the output 2 has shape \[2, 5\], expected T's \[2, 4\]/);
    await expectError('dot_interaction_grad', [input(new Float32Array(4), [2, 2]), x, x, x], [[2, 4], [2, 4], [2, 4]], { features: 3 }, /dZ has shape \[2, 2\], expected \[2, 3\]/);
  });
});

// ---------------------------------------------------------------------------------------
// metrics

/** TF's _confusion_matrix_at_thresholds, directly: O(n * T). */
function confusionReference(labels: ArrayLike<number>, predictions: ArrayLike<number>, thresholds: ArrayLike<number>, weights?: ArrayLike<number>) {
  const T = thresholds.length;
  const tp = new Array(T).fill(0);
  const fn = new Array(T).fill(0);
  const tn = new Array(T).fill(0);
  const fp = new Array(T).fill(0);
  for (let s = 0; s < T; s++) {
    for (let i = 0; i < predictions.length; i++) {
      const w = weights === undefined ? 1 : weights.length === 1 ? weights[0] : weights[i];
      const positive = labels[i] !== 0;
      const predicted = predictions[i] > thresholds[s];
      if (positive && predicted) tp[s] += w;
      else if (positive) fn[s] += w;
      else if (predicted) fp[s] += w;
      else tn[s] += w;
    }
  }
  return { tp, fn, tn, fp };
}

/** tf.metrics.auc's thresholds: [-eps, 1/(T-1), ..., (T-2)/(T-1), 1 + eps]. */
function aucThresholds(count: number): Float32Array {
  const eps = 1e-7;
  const t = new Float32Array(count);
  for (let i = 1; i < count - 1; i++) t[i] = i / (count - 1);
  t[0] = -eps;
  t[count - 1] = 1 + eps;
  return t;
}

describe('auc_accumulate', () => {
  const accumulators = (count: number) => [0, 1, 2, 3].map(() => input(new Float32Array(count), [count]));
  const read = async (handles: NativeTensorHandle[]) => Promise.all(handles.map(async (h) => Array.from((await new hb.Tensor(h).data()) as Float32Array)));

  test('hand-worked counts at unsorted thresholds, strict >, accumulated over two batches', async () => {
    const labels = input([1, 0, 1, 0, 1, 1], [6]);
    const predictions = input([0.9, 0.8, 0.4, 0.2, 0.6, 0.5], [6]);
    const thresholds = input([0.5, 0.1, 0.85], [3]);
    const acc = accumulators(3);
    await run('auc_accumulate', [labels, predictions, thresholds], acc);
    // t=0.5: 0.9 (+), 0.8 (-), 0.6 (+) are predicted positive; 0.5 (+) is not (strict >).
    // t=0.1: every prediction is positive. t=0.85: only 0.9.
    expect(await read(acc)).toEqual([
      [2, 4, 1], // tp
      [2, 0, 3], // fn
      [1, 0, 2], // tn
      [1, 2, 0], // fp
    ]);
    await run('auc_accumulate', [labels, predictions, thresholds], acc);
    expect(await read(acc)).toEqual([
      [4, 8, 2],
      [4, 0, 6],
      [2, 0, 4],
      [2, 4, 0],
    ]);
  });

  test('weights (per value and broadcast); nonzero labels are positive', async () => {
    const labels = input([1, 0, -1, 0, 0.3, 1], [6]);
    const predictions = input([0.9, 0.8, 0.4, 0.2, 0.6, 0.5], [6]);
    const thresholds = input([0.5, 0.1, 0.85], [3]);
    const acc = accumulators(3);
    await run('auc_accumulate', [labels, predictions, thresholds, input([1, 2, 0.5, 1, 1, 3], [6])], acc);
    // positives: 0.9 (w 1), 0.4 (w .5), 0.6 (w 1), 0.5 (w 3); negatives: 0.8 (w 2), 0.2 (w 1).
    expect(await read(acc)).toEqual([
      [2, 5.5, 1],
      [3.5, 0, 4.5],
      [1, 0, 3],
      [2, 3, 0],
    ]);
    const acc2 = accumulators(3);
    await run('auc_accumulate', [labels, predictions, thresholds, input([2], [1])], acc2);
    expect(await read(acc2)).toEqual([
      [4, 8, 2],
      [4, 0, 6],
      [2, 0, 4],
      [2, 4, 0],
    ]);
  });

  test("random batches with tf.metrics.auc's 200 thresholds, predictions at 0 and 1", async () => {
    const random = randomSource(51);
    const n = 10000; // more than one block of predictions
    const thresholds = aucThresholds(200);
    const labels = Float32Array.from({ length: n }, () => (random() < 0.3 ? 1 : 0));
    const predictions = Float32Array.from({ length: n }, () => f(random()));
    predictions[0] = 0;
    predictions[1] = 1;
    predictions[2] = thresholds[57]; // a tie
    const weights = Float32Array.from({ length: n }, () => Math.floor(random() * 4));
    for (const w of [undefined, weights]) {
      const acc = accumulators(200);
      const inputs = [input(labels, [n]), input(predictions, [n, 1]), input(thresholds, [200])];
      if (w) inputs.push(input(w, [n]));
      await run('auc_accumulate', inputs, acc);
      const ref = confusionReference(labels, predictions, thresholds, w);
      const [tp, fn, tn, fp] = await read(acc);
      // Integer weights: float32 sums are exact, whatever the order.
      expect(tp).toEqual(ref.tp);
      expect(fn).toEqual(ref.fn);
      expect(tn).toEqual(ref.tn);
      expect(fp).toEqual(ref.fp);
    }
    const realWeights = Float32Array.from({ length: n }, () => f(random()));
    const acc = accumulators(200);
    await run('auc_accumulate', [input(labels, [n]), input(predictions, [n]), input(thresholds, [200]), input(realWeights, [n])], acc);
    const ref = confusionReference(labels, predictions, thresholds, realWeights);
    const got = await read(acc);
    [ref.tp, ref.fn, ref.tn, ref.fp].forEach((expected, k) => expectClose(got[k], expected, 1e-5, 1e-3));
  });

  test('errors leave the accumulators untouched', async () => {
    const labels = input([1, 0], [2]);
    const thresholds = input([0.5], [1]);
    const acc = accumulators(1);
    await expectError('auc_accumulate', [labels, input([0.5, 1.5], [2]), thresholds], acc, {}, /predictions must be in \[0, 1\], got 1\.5 at index 1/);
    await expectError('auc_accumulate', [labels, input([-0.1, 0.5], [2]), thresholds], acc, {}, /predictions must be in \[0, 1\], got -0\.1 at index 0/);
    await expectError('auc_accumulate', [labels, input([0.2, NaN], [2]), thresholds], acc, {}, /predictions must be in \[0, 1\], got nan at index 1/);
    expect(await read(acc)).toEqual([[0], [0], [0], [0]]);
    const p = input([0.2, 0.7], [2]);
    await expectError('auc_accumulate', [labels, p, input([NaN], [1])], acc, {}, /threshold 0 is NaN/);
    await expectError('auc_accumulate', [input([1], [1]), p, thresholds], acc, {}, /labels \[1\] and predictions \[2\] differ in size/);
    await expectError('auc_accumulate', [labels, p, input([0.1, 0.2], [2])], acc, {}, /accumulator tp \[1\] must have one element per threshold \(2\)/);
    await expectError('auc_accumulate', [labels, p, thresholds, input([1, 2, 3], [3])], acc, {}, /weights \[3\] must have 1 element or one per value \(2\)/);
    await expectError('auc_accumulate', [labels, p], acc, {}, /kernel auc_accumulate takes 4 inputs, got 2/);
    await expectError('auc_accumulate', [labels, p, thresholds], acc.slice(0, 3), {}, /kernel auc_accumulate takes 4 outputs, got 3/);
    expect(await read(acc)).toEqual([[0], [0], [0], [0]]);
  });
});

describe('mean_accumulate', () => {
  test('total += sum(v * w), count += sum(w)', async () => {
    const total = input([0], [1]);
    const count = input([0], [1]);
    const values = input([1, 2, 3], [3]);
    await run('mean_accumulate', [values, input([1, 0, 2], [3])], [total, count]);
    await run('mean_accumulate', [values, input([1, 0, 2], [3])], [total, count]);
    expect(Array.from((await new hb.Tensor(total).data()) as Float32Array)).toEqual([14]);
    expect(Array.from((await new hb.Tensor(count).data()) as Float32Array)).toEqual([6]);
    const [t, c] = await run('mean_accumulate', [values], [[1], [1]]);
    expect([t.values[0], c.values[0]]).toEqual([6, 3]);
    const [tw, cw] = await run('mean_accumulate', [values, input([0.5], [1])], [[1], [1]]);
    expect([tw.values[0], cw.values[0]]).toEqual([3, 1.5]);
  });

  test('a big batch sums in float32 blocks', async () => {
    const random = randomSource(61);
    const n = 12345;
    const v = randomValues(random, n);
    const w = randomValues(random, n, 0, 1);
    const [t, c] = await run('mean_accumulate', [input(v, [n]), input(w, [n])], [[1], [1]]);
    expectExact(t.values, [blockedSum(Array.from(v, (x, i) => f(x * w[i])))]);
    expectExact(c.values, [blockedSum(w)]);
  });

  test('errors', async () => {
    const v = input([1, 2, 3], [3]);
    await expectError('mean_accumulate', [v, input([1, 2], [2])], [[1], [1]], {}, /weights \[2\] must have 1 element or one per value \(3\)/);
    await expectError('mean_accumulate', [v], [[2], [1]], {}, /total \[2\] and count \[1\] must have one element each/);
    await expectError('mean_accumulate', [v], [[1]], {}, /kernel mean_accumulate takes 2 outputs, got 1/);
  });
});

describe('assert_finite', () => {
  test('passes finite values', async () => {
    const x = randomValues(randomSource(71), 50000);
    await expect(native.kernelRun('assert_finite', [input(x, [50000])], [], {}, OP)).resolves.toEqual([]);
    await expect(native.kernelRun('assert_finite', [input([], [0])], [], {}, OP)).resolves.toEqual([]);
  });

  test('names the op, the first bad index and its value', async () => {
    const x = new Float32Array(20000);
    x[5] = NaN;
    await expectError('assert_finite', [input(x, [20000])], [], {}, new RegExp(`^${OP} is NaN or infinite \\(nan at index 5 of \\[20000\\]\\); no update was applied$`));
    x[5] = 0;
    x[15000] = -Infinity;
    x[9000] = Infinity;
    await expectError('assert_finite', [input(x, [100, 200])], [], {}, /is NaN or infinite \(inf at index 9000 of \[100, 200\]\)/);
    x[9000] = 0;
    await expectError('assert_finite', [input(x, [20000])], [], {}, /\(-inf at index 15000 /);
  });

  test('errors', async () => {
    const x = input([1], [1]);
    await expectError('assert_finite', [x], [[1]], {}, /kernel assert_finite takes 0 outputs, got 1/);
    await expectError('assert_finite', [], [], {}, /kernel assert_finite takes 1 inputs, got 0/);
  });
});
