// The graph's matmul kernels (native/exec/matmul_kernel.cc over native/kernels/sgemm_cpu.cc),
// through native.kernelRun, against a float64 reference. The GEMM sums in blocks with
// fused multiply-adds, so results are compared with a tolerance scaled by the sum of
// |a| * |b| over each dot product (the usual bound for a float32 dot product), not bit
// for bit.
import { spawnSync } from 'child_process';
import * as hb from '../lib';
import { KernelAttrValue, native, NativeTensorHandle } from '../lib/native';
import { randomSource } from './support/reference';
import { pinDevice } from './support/devices';

// Checked against CPU references bit for bit / at CPU tolerances; test/cuda_plan.test.ts
// checks the CUDA kernels against these.
pinDevice('cpu');

const OP = 'dense_1/matmul'; // the graph op name every error must name
const TOLERANCE = 1e-5;

type Output = number[] | NativeTensorHandle;

interface Case {
  m: number;
  n: number;
  k: number;
  transA: boolean;
  transB: boolean;
}

const input = (values: Float32Array, shape: number[]) => hb.tensor(values, shape).handle;

function randomMatrix(random: () => number, size: number): Float32Array {
  const values = new Float32Array(size);
  for (let i = 0; i < size; i++) values[i] = random() * 2 - 1;
  return values;
}

// op(A) is [m, k]: A is stored [m, k], or [k, m] when transposed; likewise B.
function storedShapes(c: Case) {
  return { a: c.transA ? [c.k, c.m] : [c.m, c.k], b: c.transB ? [c.n, c.k] : [c.k, c.n] };
}

// C = op(A) * op(B) (+ C0) in float64, with the sum of |products| per element for the tolerance.
function reference(c: Case, a: Float32Array, b: Float32Array, c0?: Float32Array) {
  const { m, n, k } = c;
  // op(A) as rows [m][k] and op(B) as columns [n][k], so the inner loop reads in order.
  const rowsA = new Float64Array(m * k);
  const colsB = new Float64Array(n * k);
  for (let i = 0; i < m; i++) for (let p = 0; p < k; p++) rowsA[i * k + p] = c.transA ? a[p * m + i] : a[i * k + p];
  for (let j = 0; j < n; j++) for (let p = 0; p < k; p++) colsB[j * k + p] = c.transB ? b[j * k + p] : b[p * n + j];
  const value = new Float64Array(m * n);
  const scale = new Float64Array(m * n);
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let sum = 0;
      let sumAbs = 0;
      for (let p = 0, x = i * k, y = j * k; p < k; p++, x++, y++) {
        const product = rowsA[x] * colsB[y];
        sum += product;
        // Not Math.abs: inside jest's sandbox it is a call V8 does not inline, 40x slower here.
        sumAbs += product < 0 ? -product : product;
      }
      const old = c0 ? c0[i * n + j] : 0;
      value[i * n + j] = sum + old;
      scale[i * n + j] = sumAbs + Math.abs(old);
    }
  }
  return { value, scale };
}

async function run(kernel: string, inputs: NativeTensorHandle[], outputs: Output[], attrs: Record<string, KernelAttrValue>, name = OP) {
  const handles = await native.kernelRun(kernel, inputs, outputs, attrs, name);
  expect(handles).toHaveLength(1);
  const t = new hb.Tensor(handles[0] as NativeTensorHandle);
  expect(t.dtype).toBe('float32');
  return { shape: [...t.shape], values: (await t.data()) as Float32Array, handle: handles[0] };
}

// The first element outside the tolerance, or null: one readable failure instead of
// thousands of expect() calls.
function firstMismatch(got: Float32Array, want: { value: Float64Array; scale: Float64Array }, n: number) {
  for (let e = 0; e < want.value.length; e++) {
    const allowed = TOLERANCE * want.scale[e] + 1e-30;
    if (!(Math.abs(got[e] - want.value[e]) <= allowed)) {
      return `C[${Math.floor(e / n)}, ${e % n}] = ${got[e]}, want ${want.value[e]} (within ${allowed})`;
    }
  }
  return null;
}

async function checkMatmul(c: Case, seed: number) {
  const random = randomSource(seed);
  const shapes = storedShapes(c);
  const a = randomMatrix(random, c.m * c.k);
  const b = randomMatrix(random, c.k * c.n);
  const result = await run('matmul', [input(a, shapes.a), input(b, shapes.b)], [[c.m, c.n]], { transposeA: c.transA, transposeB: c.transB });
  expect(result.shape).toEqual([c.m, c.n]);
  expect(firstMismatch(result.values, reference(c, a, b), c.n)).toBeNull();
}

const transposes: Array<[boolean, boolean]> = [
  [false, false],
  [true, false],
  [false, true],
  [true, true],
];
const label = ([transA, transB]: [boolean, boolean]) => `transA=${+transA} transB=${+transB}`;

describe('matmul kernel', () => {
  test('a product worked by hand, exact in float32', async () => {
    // [[1, 2, 3], [4, 5, 6]] x [[1, 0], [0, 1], [2, -1]] = [[7, -1], [16, -1]]
    const a = input(Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3]);
    const b = input(Float32Array.from([1, 0, 0, 1, 2, -1]), [3, 2]);
    const { shape, values } = await run('matmul', [a, b], [[2, 2]], {});
    expect(shape).toEqual([2, 2]);
    expect(Array.from(values)).toEqual([7, -1, 16, -1]);
    // The same product from transposed storage: A^T stored [3, 2], B^T stored [2, 3].
    const aT = input(Float32Array.from([1, 4, 2, 5, 3, 6]), [3, 2]);
    const bT = input(Float32Array.from([1, 0, 2, 0, 1, -1]), [2, 3]);
    expect(Array.from((await run('matmul', [aT, bT], [[2, 2]], { transposeA: true, transposeB: true })).values)).toEqual([7, -1, 16, -1]);
    const one = await run('matmul', [input(Float32Array.from([3]), [1, 1]), input(Float32Array.from([-2.5]), [1, 1])], [[1, 1]], {});
    expect(Array.from(one.values)).toEqual([-7.5]);
  });

  describe.each(transposes)('transA=%s transB=%s', (transA, transB) => {
    // Odd sizes, sizes around the micro-tiles (4x8, 6x16, 14x32) and cache blocks
    // (KC = 256, MC = 448-480, NC = 512-1024), a vector (m = 1), a dot product.
    const sizes: Array<[number, number, number]> = [
      [1, 1, 1],
      [1, 1, 300],
      [1, 64, 37],
      [64, 1, 37],
      [2, 3, 5],
      [13, 31, 7],
      [14, 32, 256],
      [15, 33, 257],
      [37, 53, 71],
      [100, 17, 513],
      [6, 1040, 40],
      [481, 40, 260],
    ];
    test.each(sizes)('%i x %i x %i', async (m, n, k) => {
      await checkMatmul({ m, n, k, transA, transB }, m * 1000003 + n * 1009 + k + (transA ? 7 : 0) + (transB ? 13 : 0));
    });

    test('512 x 256 x 300, split over threads', async () => {
      await checkMatmul({ m: 512, n: 256, k: 300, transA, transB }, 42);
    });
  });

  test('blocks crossed in every dimension at once: 463 x 1031 x 517', async () => {
    await checkMatmul({ m: 463, n: 1031, k: 517, transA: false, transB: false }, 5);
    await checkMatmul({ m: 463, n: 1031, k: 517, transA: true, transB: true }, 6);
  });

  test('k = 0 gives zeros, whatever the output held', async () => {
    const a = input(new Float32Array(0), [3, 0]);
    const b = input(new Float32Array(0), [0, 4]);
    const { shape, values } = await run('matmul', [a, b], [[3, 4]], {});
    expect(shape).toEqual([3, 4]);
    expect(Array.from(values)).toEqual(new Array(12).fill(0));
    const stale = input(new Float32Array(12).fill(NaN), [3, 4]);
    expect(Array.from((await run('matmul', [a, b], [stale], {})).values)).toEqual(new Array(12).fill(0));
    // m = 0 or n = 0: an empty output.
    const empty = await run('matmul', [input(new Float32Array(0), [0, 5]), input(new Float32Array(10), [5, 2])], [[0, 2]], {});
    expect(empty.shape).toEqual([0, 2]);
    expect(empty.values).toHaveLength(0);
  });

  test('an output given as a tensor is overwritten: NaN or Infinity there does not leak in', async () => {
    const c: Case = { m: 20, n: 40, k: 30, transA: false, transB: true };
    const random = randomSource(9);
    const a = randomMatrix(random, c.m * c.k);
    const b = randomMatrix(random, c.k * c.n);
    const stale = new Float32Array(c.m * c.n);
    for (let i = 0; i < stale.length; i++) stale[i] = i % 2 ? NaN : Infinity;
    const out = input(stale, [c.m, c.n]);
    const result = await run('matmul', [input(a, [c.m, c.k]), input(b, [c.n, c.k])], [out], { transposeA: false, transposeB: true });
    expect(firstMismatch(result.values, reference(c, a, b), c.n)).toBeNull();
    // Written in place: the tensor passed in holds the product.
    const again = (await new hb.Tensor(out).data()) as Float32Array;
    expect(Array.from(again)).toEqual(Array.from(result.values));
  });

  describe.each(transposes)('matmul_accumulate, %s %s', (transA, transB) => {
    test('adds the product into the output it is given', async () => {
      const c: Case = { m: 45, n: 70, k: 300, transA, transB };
      const random = randomSource(11 + +transA + 2 * +transB);
      const shapes = storedShapes(c);
      const a = randomMatrix(random, c.m * c.k);
      const b = randomMatrix(random, c.k * c.n);
      const c0 = randomMatrix(random, c.m * c.n);
      const out = input(c0.slice(), [c.m, c.n]);
      const result = await run('matmul_accumulate', [input(a, shapes.a), input(b, shapes.b)], [out], { transposeA: transA, transposeB: transB });
      expect(firstMismatch(result.values, reference(c, a, b, c0), c.n)).toBeNull();
      // Twice: C0 + 2 A B.
      const twice = await run('matmul_accumulate', [input(a, shapes.a), input(b, shapes.b)], [out], { transposeA: transA, transposeB: transB });
      const once = reference(c, a, b);
      const want = { value: once.value.map((v, e) => c0[e] + 2 * v), scale: once.scale.map((s, e) => Math.abs(c0[e]) + 2 * s) };
      expect(firstMismatch(twice.values, want, c.n)).toBeNull();
    });
  });

  test('matmul_accumulate with k = 0 leaves the output as it was', async () => {
    const c0 = Float32Array.from([1, -2, 3, NaN]);
    const out = input(c0, [2, 2]);
    const { values } = await run('matmul_accumulate', [input(new Float32Array(0), [2, 0]), input(new Float32Array(0), [0, 2])], [out], {});
    expect(Array.from(values)).toEqual([1, -2, 3, NaN]);
  });

  describe('few columns of C (the narrow loop: each panel of rows times each column on its own)', () => {
    for (const t of transposes) {
      test(`${label(t)}: 1, 3, 8, 9 and 16 columns, one panel and many, one depth block and three`, async () => {
        let seed = 11;
        for (const [m, n, k] of [[1, 1, 5], [14, 1, 700], [333, 3, 64], [1030, 8, 300], [50, 9, 513], [700, 16, 260]] as const) {
          await checkMatmul({ m, n, k, transA: t[0], transB: t[1] }, seed++);
        }
      });
    }
  });

  test('a [4096, 13] x [13, 512] layer (a small k over many rows)', async () => {
    await checkMatmul({ m: 4096, n: 512, k: 13, transA: false, transB: false }, 13);
  });

  // A dense layer's forward in one kernel: the bias and activation go over each piece of
  // the product as the GEMM finishes it. Bit for bit matmul then bias_activation, over the
  // GEMM's ways of cutting C: one piece (small), pieces of rows, of columns (N > M), the
  // narrow loop's row ranges (N <= 16), and K = 0 (the activation of the bias alone).
  describe('matmul_bias_activation', () => {
    // [4096, 8, 300]: the narrow loop's row ranges on several threads.
    const shapes: Array<[number, number, number]> = [[7, 5, 3], [600, 300, 200], [64, 2000, 100], [1030, 8, 300], [4096, 8, 300], [4096, 1, 256], [700, 16, 260], [5, 7, 0]];
    for (const t of transposes) {
      test(`${label(t)}: relu, sigmoid and tanh give matmul then bias_activation, bit for bit`, async () => {
        const random = randomSource(31);
        for (const [m, n, k] of shapes) {
          const c: Case = { m, n, k, transA: t[0], transB: t[1] };
          const stored = storedShapes(c);
          const a = input(randomMatrix(random, m * k), stored.a);
          const b = input(randomMatrix(random, k * n), stored.b);
          const bias = input(randomMatrix(random, n), [n]);
          const product = await run('matmul', [a, b], [[m, n]], { transposeA: t[0], transposeB: t[1] });
          for (const op of ['relu', 'sigmoid', 'tanh']) {
            const fused = await run('matmul_bias_activation', [a, b, bias], [[m, n]], { transposeA: t[0], transposeB: t[1], op });
            expect(fused.shape).toEqual([m, n]);
            const unfused = await run('bias_activation', [product.handle as NativeTensorHandle, bias], [[m, n]], { op });
            expect(Buffer.from(fused.values.buffer).equals(Buffer.from(unfused.values.buffer))).toBe(true);
          }
        }
      });
    }

    test(`every transpose: matmul_activation_grad_bias gives matmul then activation_grad_bias, bit for bit`, async () => {
      const random = randomSource(37);
      for (const t of transposes) {
        for (const [m, n, k] of shapes) {
          const c: Case = { m, n, k, transA: t[0], transB: t[1] };
          const stored = storedShapes(c);
          const a = input(randomMatrix(random, m * k), stored.a);
          const b = input(randomMatrix(random, k * n), stored.b);
          const product = await run('matmul', [a, b], [[m, n]], { transposeA: t[0], transposeB: t[1] });
          for (const op of ['relu', 'sigmoid', 'tanh', 'square']) {
            // y for relu: zeros where the forward's input was negative.
            const v = input(randomMatrix(random, m * n).map((x) => (op === 'relu' && x < 0 ? 0 : x)), [m, n]);
            const fused = await native.kernelRun('matmul_activation_grad_bias', [a, b, v], [[m, n], [n]], { transposeA: t[0], transposeB: t[1], op }, OP);
            const unfused = await native.kernelRun('activation_grad_bias', [product.handle as NativeTensorHandle, v], [[m, n], [n]], { op }, OP);
            for (let o = 0; o < 2; o++) {
              const got = (await new hb.Tensor(fused[o] as NativeTensorHandle).data()) as Float32Array;
              const want = (await new hb.Tensor(unfused[o] as NativeTensorHandle).data()) as Float32Array;
              expect([m, n, k, op, o, Buffer.from(got.buffer).equals(Buffer.from(want.buffer))]).toEqual([m, n, k, op, o, true]);
            }
          }
        }
      }
    });

    test('an output of rank 0 is an error naming the op, in a child process (it once read past the shape and crashed)', () => {
      const script = `
        const hb = require(${JSON.stringify(require.resolve('../dist'))});
        const { native } = require(${JSON.stringify(require.resolve('../dist/native'))});
        const a = hb.tensor(Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3]).handle;
        const b = hb.tensor(Float32Array.from([1, 2, 3, 4, 5, 6]), [3, 2]).handle;
        const bias = hb.tensor(Float32Array.from([1, 2]), [2]).handle;
        native.kernelRun('matmul_bias_activation', [a, b, bias], [[]], { op: 'relu' }, 'mlp/l1')
          .then(() => console.log('resolved'), (e) => console.log(e.message));
      `;
      const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 });
      expect([result.status, result.signal]).toEqual([0, null]);
      expect(result.stdout).toMatch(/mlp\/l1: kernel matmul_bias_activation writes a \[M, N\] output, got \[\]/);
    });

    test('errors name the op: a bias of the wrong shape, an activation that takes a constant, a bad product', async () => {
      const a = input(Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3]);
      const b = input(Float32Array.from([1, 2, 3, 4, 5, 6]), [3, 2]);
      await expect(run('matmul_bias_activation', [a, b, input(Float32Array.from([1, 2, 3]), [3])], [[2, 2]], { op: 'relu' }, 'mlp/l1')).rejects.toThrow(
        /mlp\/l1: kernel matmul_bias_activation: the bias has shape \[3\], expected \[2\] \(the output's columns\)/,
      );
      await expect(run('matmul_bias_activation', [a, b, input(Float32Array.from([1, 2]), [2])], [[2, 2]], { op: 'scale' }, 'mlp/l1')).rejects.toThrow(
        /mlp\/l1: matmul_bias_activation: op 'scale' takes a constant/,
      );
      await expect(run('matmul_bias_activation', [a, a, input(Float32Array.from([1, 2]), [2])], [[2, 2]], { op: 'relu' }, 'mlp/l1')).rejects.toThrow(
        /mlp\/l1: kernel matmul_bias_activation inner dimensions differ/,
      );
      await expect(run('matmul_bias_activation', [a, b], [[2, 2]], { op: 'relu' }, 'mlp/l1')).rejects.toThrow(/takes 3 inputs, got 2/);
      for (const shape of [[4], [2, 2, 1]]) {
        await expect(run('matmul_bias_activation', [a, b, input(Float32Array.from([1, 2]), [2])], [shape], { op: 'relu' }, 'mlp/l1')).rejects.toThrow(
          /mlp\/l1: kernel matmul_bias_activation writes a \[M, N\] output, got \[/,
        );
      }
      // The backward's: a bias gradient or y of the wrong shape, an activation without a gradient.
      const y = input(Float32Array.from([1, 0, 2, 3]), [2, 2]);
      const grad = (inputs: NativeTensorHandle[], outputs: number[][], op = 'relu') =>
        native.kernelRun('matmul_activation_grad_bias', inputs, outputs, { op }, 'mlp/l1_grad');
      await expect(grad([a, b, y], [[2, 2], [3]])).rejects.toThrow(/mlp\/l1_grad: matmul_activation_grad_bias: the bias gradient has shape \[3\], expected \[2\]/);
      await expect(grad([a, b, input(Float32Array.from([1, 2]), [1, 2])], [[2, 2], [2]])).rejects.toThrow(/y \[1, ?2\] and dz \[2, ?2\] must have one shape/);
      await expect(grad([a, b, y], [[2, 2], [2]], 'neg')).rejects.toThrow(/op 'neg' has no gradient kernel/);
      await expect(grad([a, a, y], [[2, 2], [2]])).rejects.toThrow(/mlp\/l1_grad: kernel matmul_activation_grad_bias inner dimensions differ/);
      await expect(grad([a, b, input(Float32Array.from([1, 0, 2, 3]), [4])], [[4], [2]])).rejects.toThrow(
        /mlp\/l1_grad: kernel matmul_activation_grad_bias writes a \[M, N\] dz, got \[4\]/,
      );
    });
  });

  describe('errors name the op and the shapes, before anything is written', () => {
    const a23 = () => input(Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3]);
    const b32 = () => input(Float32Array.from([1, 2, 3, 4, 5, 6]), [3, 2]);

    test('a rank-1 input', async () => {
      const vector = input(Float32Array.from([1, 2, 3]), [3]);
      await expect(run('matmul', [vector, b32()], [[1, 2]], {})).rejects.toThrow(
        /dense_1\/matmul: kernel matmul multiplies rank-2 tensors, got A \[3\] and B \[3, ?2\]/,
      );
      await expect(run('matmul_accumulate', [a23(), vector], [[2, 1]], {}, 'tower/dot')).rejects.toThrow(
        /tower\/dot: kernel matmul_accumulate multiplies rank-2 tensors/,
      );
    });

    test('inner dimensions that differ', async () => {
      await expect(run('matmul', [a23(), a23()], [[2, 3]], {})).rejects.toThrow(
        /dense_1\/matmul: kernel matmul inner dimensions differ: A \[2, ?3\] and B \[2, ?3\] give 3 and 2/,
      );
      // Transposing makes them agree: [2, 3] x [2, 3]^T = [2, 2].
      const ok = await run('matmul', [a23(), a23()], [[2, 2]], { transposeA: false, transposeB: true });
      expect(Array.from(ok.values)).toEqual([14, 32, 32, 77]);
      await expect(run('matmul', [a23(), b32()], [[3, 3]], { transposeA: true, transposeB: false }, 'layer_7/matmul')).rejects.toThrow(
        /layer_7\/matmul: kernel matmul inner dimensions differ: A \[2, ?3\] \(transposed\) and B \[3, ?2\] give 2 and 3/,
      );
    });

    test('an output of the wrong shape, untouched', async () => {
      await expect(run('matmul', [a23(), b32()], [[2, 3]], {})).rejects.toThrow(
        /dense_1\/matmul: kernel matmul output of A \[2, ?3\] times B \[3, ?2\] must be \[2, 2\], got \[2, ?3\]/,
      );
      const out = input(Float32Array.from([9, 9, 9, 9, 9, 9, 9, 9]), [4, 2]);
      await expect(run('matmul_accumulate', [a23(), b32()], [out], {}, 'head/logits')).rejects.toThrow(
        /head\/logits: kernel matmul_accumulate output .* must be \[2, 2\], got \[4, ?2\]/,
      );
      expect(Array.from((await new hb.Tensor(out).data()) as Float32Array)).toEqual(new Array(8).fill(9));
      await expect(run('matmul', [a23(), b32()], [[4]], {})).rejects.toThrow(/dense_1\/matmul: .*must be \[2, 2\], got \[4\]/);
    });

    test('transpose attributes other than booleans, and the wrong number of tensors', async () => {
      await expect(run('matmul', [a23(), b32()], [[2, 2]], { transposeA: 2 as never })).rejects.toThrow(
        /dense_1\/matmul: attr 'transposeA' of kernel matmul must be a boolean/,
      );
      await expect(run('matmul', [a23(), b32()], [[2, 2]], { transposeB: 1 as never })).rejects.toThrow(/attr 'transposeB' of kernel matmul must be a boolean/);
      await expect(run('matmul', [a23()], [[2, 2]], {})).rejects.toThrow(/dense_1\/matmul: kernel matmul takes 2 inputs, got 1/);
    });
  });

  // sgemm_cpu.cc picks AVX-512, AVX2+FMA or portable code at run time; HB_SGEMM_ISA caps
  // the choice at process start, so each path runs in a child process of its own (a
  // path the CPU lacks falls back to the next one down, and is still checked). Each
  // child reports its worst error and a digest of the bits of every product.
  function runChild(env: Record<string, string>) {
    const script = `
      const hb = require(${JSON.stringify(require.resolve('../dist'))});
      const { native } = require(${JSON.stringify(require.resolve('../dist/native'))});
      let seed = 7;
      const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
      // The last ones have few columns (sgemm_cpu.cc's narrow loop, N <= 16 on AVX-512,
      // <= 8 on AVX2): one panel or many, rows in several ranges on the pool, depth blocks.
      const cases = [[1, 1, 1], [7, 33, 5], [37, 53, 71], [15, 65, 300], [300, 70, 600], [13, 300, 1000],
        [1, 1, 600], [29, 1, 300], [100, 3, 513], [2000, 8, 600], [64, 16, 1024], [45, 9, 257], [17, 17, 40]];
      (async () => {
        let worst = 0;
        let digest = 2166136261;
        for (const [m, n, k] of cases) {
          for (const [ta, tb] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
            const a = Float32Array.from({ length: m * k }, () => random() * 2 - 1);
            const b = Float32Array.from({ length: k * n }, () => random() * 2 - 1);
            const c0 = Float32Array.from({ length: m * n }, () => random() * 2 - 1);
            const out = hb.tensor(c0.slice(), [m, n]).handle;
            const [h] = await native.kernelRun('matmul_accumulate',
              [hb.tensor(a, ta ? [k, m] : [m, k]).handle, hb.tensor(b, tb ? [n, k] : [k, n]).handle], [out], { transposeA: ta === 1, transposeB: tb === 1 });
            const got = await new hb.Tensor(h).data();
            for (const bits of new Uint32Array(got.buffer, got.byteOffset, got.length)) digest = Math.imul(digest ^ bits, 16777619) >>> 0;
            for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
              let sum = c0[i * n + j], scale = Math.abs(c0[i * n + j]);
              for (let p = 0; p < k; p++) {
                const x = ta ? a[p * m + i] : a[i * k + p];
                const y = tb ? b[j * k + p] : b[p * n + j];
                sum += x * y;
                scale += Math.abs(x * y);
              }
              worst = Math.max(worst, Math.abs(got[i * n + j] - sum) / scale);
            }
          }
        }
        console.log(JSON.stringify({ worst, digest }));
      })().catch((e) => { console.error(e); process.exit(1); });
    `;
    const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, ...env } });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    return JSON.parse(result.stdout.trim()) as { worst: number; digest: number };
  }

  test('every code path is within tolerance; AVX2 and AVX-512 give the same bits, with any number of threads', () => {
    const portable = runChild({ HB_SGEMM_ISA: 'portable' });
    const avx2 = runChild({ HB_SGEMM_ISA: 'avx2' });
    const best = runChild({});
    const bestOneThread = runChild({ HB_NUM_THREADS: '1' });
    const tilesOnly = runChild({ HB_SGEMM_NARROW: '0' });
    const avx2TilesOnly = runChild({ HB_SGEMM_ISA: 'avx2', HB_SGEMM_NARROW: '0' });
    for (const child of [portable, avx2, best, bestOneThread, tilesOnly, avx2TilesOnly]) expect(child.worst).toBeLessThan(TOLERANCE);
    // Both vector kernels sum each depth block of 256 in order with fused multiply-adds,
    // and a thread computes whole elements, so neither the CPU nor the thread count
    // changes a result.
    expect(avx2.digest).toBe(best.digest);
    expect(bestOneThread.digest).toBe(best.digest);
    // Products of few columns sum each element the same way outside the tiles.
    expect(tilesOnly.digest).toBe(best.digest);
    expect(avx2TilesOnly.digest).toBe(best.digest);
  });
});
