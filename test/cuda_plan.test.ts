// Compiled steps on a GPU against the same steps on the CPU. Runs where a CUDA device is
// usable (HB_DEVICE=cuda on a GPU machine, a CUDA build: `npm install` where nvcc is found); skipped elsewhere.
// graph_kernels.test.ts and matmul_kernel.test.ts check the CPU kernels against plain-JS
// references; here each CUDA kernel must give the CPU's bits where both round the same
// float operations in the same order (CMakeLists.txt: no FMA contraction on either side),
// and stay within libm / cuBLAS tolerances where they cannot (exp, log, tanh, GEMM).
import * as hb from '../lib';
import { lookupChain } from '../lib/embedding/lookup_chain';
import { CompiledStep } from '../lib/graph/compiled_step';
import { Graph, VariableStore } from '../lib/graph/graph';
import { raggedFeed } from '../lib/graph/ragged_feed';
import { KernelAttrValue, native, NativeTensorHandle } from '../lib/native';
import { cudaEmulated, describeCuda } from './support/devices';
import { dataset, EVAL, numDense, tables, TRAIN } from './support/planted_data';
import { randomSource } from './support/reference';

const OP = 'model/layer_1/op';
type Input = [ArrayLike<number>, number[]];
interface Result {
  device: string;
  shape: number[];
  values: Float32Array;
}

const size = (shape: number[]) => shape.reduce((a, b) => a * b, 1);

function broadcastShape(a: number[], b: number[]): number[] {
  const rank = Math.max(a.length, b.length);
  return Array.from({ length: rank }, (_, k) => {
    const da = k < rank - a.length ? 1 : a[k - (rank - a.length)];
    const db = k < rank - b.length ? 1 : b[k - (rank - b.length)];
    return da === 1 ? db : da;
  });
}

function randomValues(random: () => number, n: number, lo = -2, hi = 2): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * random();
  return out;
}

const place = (device: string, [values, shape]: Input) => hb.tensor(Float32Array.from(values), shape, undefined, { device }).handle;

async function read(handles: Array<NativeTensorHandle | null>): Promise<Result[]> {
  return Promise.all(
    handles.map(async (h) => {
      const t = new hb.Tensor(h as NativeTensorHandle);
      return { device: t.device, shape: [...t.shape], values: (await t.data()) as Float32Array };
    }),
  );
}

/**
 * The kernel on the CPU and on the GPU with the same inputs. `outputs`: shapes (zeroed
 * outputs made on the inputs' device) or initial values (accumulators).
 */
async function onBoth(kernel: string, inputs: Input[], outputs: Array<number[] | Input>, attrs: Record<string, KernelAttrValue> = {}) {
  const results: Result[][] = [];
  for (const device of ['cpu', 'cuda']) {
    const outs = outputs.map((o) => (o.length === 2 && Array.isArray(o[1]) && typeof o[0] !== 'number' ? place(device, o as Input) : (o as number[])));
    results.push(await read(await native.kernelRun(kernel, inputs.map((i) => place(device, i)), outs, attrs, OP)));
  }
  const [cpu, gpu] = results;
  for (const g of gpu) expect(g.device).toBe('cuda:0');
  expect(gpu.map((g) => g.shape)).toEqual(cpu.map((c) => c.shape));
  return { cpu, gpu };
}

function expectSameBits(gpu: Result[], cpu: Result[]) {
  for (let o = 0; o < cpu.length; o++) {
    const a = gpu[o].values;
    const e = cpu[o].values;
    expect(a.length).toBe(e.length);
    for (let i = 0; i < e.length; i++) {
      if (!Object.is(a[i], e[i]) && !(a[i] === e[i]) && !(Number.isNaN(a[i]) && Number.isNaN(e[i]))) {
        throw new Error(`output ${o}, element ${i}: GPU ${a[i]}, CPU ${e[i]}`);
      }
    }
  }
}

function expectClose(gpu: Result[], cpu: Result[], relative: number, absolute: number) {
  for (let o = 0; o < cpu.length; o++) {
    const a = gpu[o].values;
    const e = cpu[o].values;
    expect(a.length).toBe(e.length);
    for (let i = 0; i < e.length; i++) {
      if (a[i] === e[i] || (Number.isNaN(a[i]) && Number.isNaN(e[i]))) continue;
      if (!(Math.abs(a[i] - e[i]) <= absolute + relative * Math.abs(e[i]))) throw new Error(`output ${o}, element ${i}: GPU ${a[i]}, CPU ${e[i]}`);
    }
  }
}

describeCuda('compiled-step kernels on CUDA against the CPU kernels', () => {
  test('binary: every op under every broadcast pattern, bit for bit', async () => {
    const shapes: Array<[number[], number[]]> = [
      [[3, 4], [3, 4]],
      [[300, 257], [257]],
      [[300, 257], [300, 1]],
      [[2, 3], []],
      [[1], [2, 3]],
      [[60, 1, 257], [7, 1]],
      [[3], [5, 3]],
      [[2, 1, 2, 1, 3, 1], [2, 1, 2, 1, 2]],
    ];
    const random = randomSource(1);
    for (const [aShape, bShape] of shapes) {
      const a = randomValues(random, size(aShape));
      const b = randomValues(random, size(bShape));
      for (let i = 0; i < Math.min(a.length, b.length); i += 3) a[i] = b[i]; // ties for equal / greater / maximum
      for (const op of ['add', 'sub', 'mul', 'div', 'squaredDifference', 'equal', 'greater', 'maximum']) {
        const { cpu, gpu } = await onBoth('binary', [[a, aShape], [b, bShape]], [broadcastShape(aShape, bShape)], { op });
        expectSameBits(gpu, cpu);
      }
    }
  });

  test('unary and unary_grad: exact where the op is IEEE arithmetic, within 2e-6 for libm functions', async () => {
    const domains: Array<[string, number, number]> = [
      ['relu', -3, 3], ['sigmoid', -20, 20], ['tanh', -3, 3], ['neg', -3, 3], ['scale', -3, 3],
      ['exp', -5, 5], ['log', 0.01, 10], ['square', -3, 3], ['sqrt', 0, 10], ['addConstant', -3, 3],
    ];
    const libm = new Set(['sigmoid', 'tanh', 'exp', 'log']);
    const random = randomSource(2);
    const n = 40000;
    for (const [op, lo, hi] of domains) {
      const x = randomValues(random, n, lo, hi);
      x[0] = Number.NaN;
      const { cpu, gpu } = await onBoth('unary', [[x, [200, 200]]], [[n]], { op, c: 0.37 });
      if (libm.has(op)) expectClose(gpu, cpu, 2e-6, 1e-7);
      else expectSameBits(gpu, cpu);
    }
    for (const op of ['relu', 'sigmoid', 'tanh', 'exp', 'log', 'square', 'sqrt']) {
      const v = randomValues(random, n, 0.01, 3);
      const dy = randomValues(random, n);
      const { cpu, gpu } = await onBoth('unary_grad', [[dy, [n]], [v, [n]]], [[n]], { op });
      expectSameBits(gpu, cpu);
    }
  });

  test('reduce_to_shape and broadcast_to: blocked sums in the CPU order, bit for bit', async () => {
    const cases: Array<[number[], number[], number?]> = [
      [[4096, 512], [512]],
      [[9000, 3], [3]],
      [[9000, 300], [1, 300]],
      [[3, 9000], [3, 1]],
      [[100000], []],
      [[10, 3, 5000], [1, 3, 1]],
      [[2, 3, 4, 5], [3, 1, 5]],
      [[7, 5], [1, 1], 1 / 35],
      [[0, 4], [4]],
    ];
    const random = randomSource(3);
    for (const [s, t, scale] of cases) {
      const attrs: Record<string, KernelAttrValue> = scale === undefined ? {} : { scale };
      const reduced = await onBoth('reduce_to_shape', [[randomValues(random, size(s)), s]], [t], attrs);
      expectSameBits(reduced.gpu, reduced.cpu);
      const broadcast = await onBoth('broadcast_to', [[randomValues(random, size(t)), t]], [s], attrs);
      expectSameBits(broadcast.gpu, broadcast.cpu);
    }
  });

  test("a dense layer's fused bias_activation and activation_grad_bias: the CPU's bits (libm activations: its values)", async () => {
    const random = randomSource(4);
    for (const shape of [[4096, 512], [600, 300], [256, 600], [2, 3, 4], [9, 1], [1, 4], [5], [0, 4], [4, 0]]) {
      const n = shape[shape.length - 1];
      const x = randomValues(random, size(shape));
      const bias = randomValues(random, n);
      const dy = randomValues(random, size(shape));
      for (const op of ['relu', 'sigmoid', 'tanh']) {
        const forward = await onBoth('bias_activation', [[x, shape], [bias, [n]]], [shape], { op });
        if (op === 'relu') expectSameBits(forward.gpu, forward.cpu);
        else expectClose(forward.gpu, forward.cpu, 2e-6, 1e-7);
        // The backward from the CPU's forward output, so both read the same y.
        const backward = await onBoth('activation_grad_bias', [[dy, shape], [forward.cpu[0].values, shape]], [shape, [n]], { op });
        expectSameBits(backward.gpu, backward.cpu);
      }
    }
  });

  test('concat, split_axis and copy move the same values', async () => {
    const random = randomSource(4);
    const parts: Input[] = [[randomValues(random, 64 * 13), [64, 13]], [randomValues(random, 64 * 8 * 26), [64, 208]], [randomValues(random, 64), [64, 1]]];
    const joined = await onBoth('concat', parts, [[64, 222]], { axis: 1 });
    expectSameBits(joined.gpu, joined.cpu);
    const split = await onBoth('split_axis', [[joined.cpu[0].values, [64, 222]]], [[64, 13], [64, 208], [64, 1]], { axis: 1 });
    expectSameBits(split.gpu, split.cpu);
    split.gpu.forEach((part, k) => expect(Array.from(part.values)).toEqual(Array.from(parts[k][0])));
    const rows = await onBoth('concat', [[randomValues(random, 6), [2, 3]], [randomValues(random, 3), [1, 3]]], [[3, 3]], { axis: 0 });
    expectSameBits(rows.gpu, rows.cpu);
    const copied = await onBoth('copy', [[parts[1][0], [64, 208]]], [[1, 64 * 208]]);
    expectSameBits(copied.gpu, copied.cpu);
  });

  test('sigmoid cross-entropy and its gradient', async () => {
    const random = randomSource(5);
    const n = 5000;
    const labels = Float32Array.from({ length: n }, () => (random() < 0.3 ? 1 : 0));
    const logits = randomValues(random, n, -30, 30);
    logits.set([100, -100, 0, 90], 0);
    const forward = await onBoth('sigmoid_xent', [[labels, [n]], [logits, [n]]], [[n]]);
    expectClose(forward.gpu, forward.cpu, 2e-6, 1e-7);
    const backward = await onBoth('sigmoid_xent_grad', [[randomValues(random, n), [n]], [labels, [n]], [logits, [n]]], [[n]]);
    expectClose(backward.gpu, backward.cpu, 2e-6, 1e-7);
  });

  test('dot_interaction and its gradient, bit for bit', async () => {
    const random = randomSource(6);
    // [3, 100, 130]: rows too large for shared memory (the kernels that read global memory).
    for (const [batch, features, width] of [[1, 3, 2], [64, 27, 64], [257, 5, 3], [0, 3, 2], [5, 1, 4], [3, 100, 130]]) {
      const pairs = (features * (features - 1)) / 2;
      const t = randomValues(random, batch * features * width);
      const forward = await onBoth('dot_interaction', [[t, [batch, features * width]]], [[batch, pairs]], { features });
      expectSameBits(forward.gpu, forward.cpu);
      const dz = randomValues(random, batch * pairs);
      const backward = await onBoth('dot_interaction_grad', [[dz, [batch, pairs]], [t, [batch, features * width]]], [[batch, features * width]], { features });
      expectSameBits(backward.gpu, backward.cpu);
      // One input per feature (a graph's form; staged side by side on the GPU): the same bits.
      const pieces: Input[] = Array.from({ length: features }, (_, i) => {
        const x = new Float32Array(batch * width);
        for (let b = 0; b < batch; b++) x.set(t.subarray((b * features + i) * width, (b * features + i + 1) * width), b * width);
        return [x, [batch, width]];
      });
      const listForward = await onBoth('dot_interaction', pieces, [[batch, pairs]], { features });
      expectSameBits(listForward.gpu, forward.cpu);
      expectSameBits(listForward.cpu, forward.cpu);
      const listBackward = await onBoth('dot_interaction_grad', [[dz, [batch, pairs]], ...pieces], pieces.map(() => [batch, width]), { features });
      expectSameBits(listBackward.gpu, listBackward.cpu);
      listBackward.gpu.forEach((dx, i) => {
        for (let b = 0; b < batch; b++) {
          const row = backward.cpu[0].values.subarray((b * features + i) * width, (b * features + i + 1) * width);
          expect(Array.from(dx.values.subarray(b * width, (b + 1) * width))).toEqual(Array.from(row));
        }
      });
      // prefix: rows of [vector 0, the pairs], both input forms.
      const dy = randomValues(random, batch * (width + pairs));
      for (const inputs of [[[t, [batch, features * width]] as Input], pieces]) {
        const prefixed = await onBoth('dot_interaction', inputs, [[batch, width + pairs]], { features, prefix: true });
        expectSameBits(prefixed.gpu, prefixed.cpu);
        const outputs = inputs.length === 1 ? [[batch, features * width]] : pieces.map(() => [batch, width]);
        const prefixedGrad = await onBoth('dot_interaction_grad', [[dy, [batch, width + pairs]], ...inputs], outputs, { features, prefix: true });
        expectSameBits(prefixedGrad.gpu, prefixedGrad.cpu);
      }
    }
  });

  test('matmul and matmul_accumulate through cuBLAS, every transpose, within 1e-5 of the sum of |products|', async () => {
    const random = randomSource(7);
    for (const [m, n, k] of [[45, 70, 300], [4096, 512, 13], [1, 1, 1], [3, 4, 0]]) {
      for (const [transA, transB] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
        const a = randomValues(random, m * k, -1, 1);
        const b = randomValues(random, k * n, -1, 1);
        const aShape = transA ? [k, m] : [m, k];
        const bShape = transB ? [n, k] : [k, n];
        const at = (i: number, p: number) => (transA ? a[p * m + i] : a[i * k + p]);
        const bt = (p: number, j: number) => (transB ? b[j * k + p] : b[p * n + j]);
        const c0 = randomValues(random, m * n);
        for (const kernel of ['matmul', 'matmul_accumulate']) {
          const out: number[] | Input = kernel === 'matmul' ? [m, n] : [c0, [m, n]];
          const { cpu, gpu } = await onBoth(kernel, [[a, aShape], [b, bShape]], [out], { transposeA: transA === 1, transposeB: transB === 1 });
          for (let i = 0; i < m; i += Math.max(1, m >> 6)) {
            for (let j = 0; j < n; j++) {
              let scale = kernel === 'matmul' ? 0 : Math.abs(c0[i * n + j]);
              for (let p = 0; p < k; p++) scale += Math.abs(at(i, p) * bt(p, j));
              const e = i * n + j;
              if (!(Math.abs(gpu[0].values[e] - cpu[0].values[e]) <= 1e-5 * scale + 1e-30)) {
                throw new Error(`${kernel} ${m}x${n}x${k} trans ${transA}${transB}: C[${i}, ${j}] GPU ${gpu[0].values[e]}, CPU ${cpu[0].values[e]}`);
              }
            }
          }
        }
      }
    }
  });

  test("matmul_bias_activation and matmul_activation_grad_bias on the GPU: its matmul, then its bias_activation / activation_grad_bias, bit for bit", async () => {
    const random = randomSource(9);
    const cases: Array<[number, number, number, boolean, boolean]> = [
      [45, 70, 300, false, false], [45, 70, 300, true, false], [45, 70, 300, false, true], [45, 70, 300, true, true],
      [4096, 512, 13, true, false], [3, 4, 0, false, false],
    ];
    for (const [m, n, k, transposeA, transposeB] of cases) {
      const a = place('cuda', [randomValues(random, m * k, -1, 1), transposeA ? [k, m] : [m, k]]);
      const b = place('cuda', [randomValues(random, k * n, -1, 1), transposeB ? [n, k] : [k, n]]);
      const bias = place('cuda', [randomValues(random, n), [n]]);
      const attrs = { transposeA, transposeB };
      const [product] = await native.kernelRun('matmul', [a, b], [[m, n]], attrs, OP);
      for (const op of ['relu', 'tanh']) {
        const unfused = await read(await native.kernelRun('bias_activation', [product as NativeTensorHandle, bias], [[m, n]], { op }, OP));
        const fused = await read(await native.kernelRun('matmul_bias_activation', [a, b, bias], [[m, n]], { ...attrs, op }, OP));
        expect(fused[0].device).toBe('cuda:0');
        expectSameBits(fused, unfused);
        // The backward's: the product as dy, then activation_grad_bias.
        const y = place('cuda', [randomValues(random, m * n), [m, n]]);
        const gradUnfused = await read(await native.kernelRun('activation_grad_bias', [product as NativeTensorHandle, y], [[m, n], [n]], { op }, OP));
        const gradFused = await read(await native.kernelRun('matmul_activation_grad_bias', [a, b, y], [[m, n], [n]], { ...attrs, op }, OP));
        expect(gradFused.map((g) => g.device)).toEqual(['cuda:0', 'cuda:0']);
        expectSameBits(gradFused, gradUnfused);
      }
    }
  });

  test('matmul with K = 0 writes zeros over a stale output; matmul_accumulate leaves it as it was', async () => {
    const empty = (shape: number[]) => place('cuda', [[], shape]);
    const stale = place('cuda', [[Number.NaN, 1, 2, 3, 4, 5], [2, 3]]);
    const [product] = await read(await native.kernelRun('matmul', [empty([2, 0]), empty([0, 3])], [stale], {}, OP));
    expect(Array.from(product.values)).toEqual([0, 0, 0, 0, 0, 0]);
    const kept = place('cuda', [[Number.NaN, 1, 2, 3, 4, 5], [2, 3]]);
    const [sum] = await read(await native.kernelRun('matmul_accumulate', [empty([2, 0]), empty([0, 3])], [kept], {}, OP));
    expect(Array.from(sum.values)).toEqual([Number.NaN, 1, 2, 3, 4, 5]);
  });

  test('host-only kernels (metrics, weighted mean, assert_finite) take CUDA tensors and agree with the CPU', async () => {
    const random = randomSource(8);
    const n = 3000;
    const labels = Float32Array.from({ length: n }, () => (random() < 0.4 ? 1 : 0));
    const predictions = randomValues(random, n, 0, 1);
    const weights = randomValues(random, n, 0, 2);
    const thresholds = Float32Array.from({ length: 200 }, (_, i) => (i === 0 ? -1e-7 : i === 199 ? 1 + 1e-7 : i / 199));
    const zeros: Input = [new Float32Array(200), [200]];
    const auc = await onBoth('auc_accumulate', [[labels, [n]], [predictions, [n]], [thresholds, [200]], [weights, [n]]], [zeros, zeros, zeros, zeros]);
    expectSameBits(auc.gpu, auc.cpu);
    const mean = await onBoth('weighted_mean', [[predictions, [n]], [weights, [n]]], [[]]);
    expectSameBits(mean.gpu, mean.cpu);
    const x = new Float32Array(100);
    x[42] = Number.NaN;
    const onGpu = hb.tensor(x, [100], undefined, { device: 'cuda' }).handle;
    await expect((async () => native.kernelRun('assert_finite', [onGpu], [], {}, OP))()).rejects.toThrow(/model\/layer_1\/op is NaN or infinite \(nan at index 42 of \[100\]\)/);
  });

  test('inputs on two devices are an Error naming the op', async () => {
    const a = hb.tensor(Float32Array.from([1, 2]), [2], undefined, { device: 'cuda' }).handle;
    const b = hb.tensor(Float32Array.from([1, 2]), [2], undefined, { device: 'cpu' }).handle;
    await expect((async () => native.kernelRun('binary', [a, b], [[2]], { op: 'add' }, OP))()).rejects.toThrow(/model\/layer_1\/op: .*must all be on one device/);
  });
});

// ---------------------------------------------------------------------------------------
// A whole model, as users run it: RunConfig({ device }).

const fc = hb.featureColumn;
const { ModeKeys } = hb.estimator;
const m = hb.math;

function makeModelFn(embDevice = '') {
  const dense = Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`));
  const sparse = tables.map((t) =>
    fc.embeddingColumn(fc.categoricalColumnWithIdentity(t.name, t.vocabularySize), 8, { initializer: hb.initializers.truncatedNormal({ stddev: 0.1, seed: 3 }), embDevice }),
  );
  return (features: Record<string, unknown>, labels: unknown, mode: hb.estimator.Mode) => {
    const x = m.concat([m.log(m.addConstant(hb.nn.relu(fc.DenseFeatures(dense)(features)), 1)), fc.DenseFeatures(sparse)(features)], 1);
    const h = hb.layers.dense(x, 16, { activation: hb.nn.relu, kernelInitializer: hb.initializers.glorotUniform({ seed: 1 }) });
    const logits = hb.layers.dense(h, 1, { kernelInitializer: hb.initializers.glorotUniform({ seed: 2 }) });
    const probs = hb.nn.sigmoid(logits);
    if (mode === ModeKeys.PREDICT) return hb.estimator.EstimatorSpec({ mode, predictions: { probs } });
    const y = labels as hb.SymbolicTensor;
    const loss = hb.losses.sigmoidCrossEntropy(y, logits);
    if (mode === ModeKeys.EVAL) return hb.estimator.EstimatorSpec({ mode, loss, evalMetricOps: { auc: hb.metrics.auc(y, probs) } });
    const opt = new hb.train.AdagradOptimizer({ learningRate: 0.1 });
    return hb.estimator.EstimatorSpec({ mode, loss, trainOp: opt.minimize(loss) });
  };
}

function estimatorOn(device: hb.DeviceSpec, embDevice = '') {
  return new hb.estimator.Estimator({ modelFn: makeModelFn(embDevice), config: new hb.estimator.RunConfig({ device, log: () => undefined, progressBar: false }) });
}

async function valuesOf(est: hb.estimator.Estimator): Promise<Map<string, { device: string; values: Float32Array }>> {
  const out = new Map<string, { device: string; values: Float32Array }>();
  for (const [name, v] of est.variables) out.set(name, { device: v.device, values: (await v.data()) as Float32Array });
  return out;
}

describeCuda('the lookup chain in a CUDA plan', () => {
  // Fused (one lookup kernel, one backward + update) and unfused (the id ops run on the
  // host with copies, gather_rows and sparse_apply on the device): after 3 Adagrad steps
  // each gives the CPU plan's tables bit for bit, with the table on the GPU or in host
  // memory (embDevice: 'cpu').
  const ids = hb.ragged(BigInt64Array.from([3n, 9n, 9n, -1n, 0n, 17n, 3n]), Int32Array.from([0, 3, 3, 7]), Float32Array.from([1, 0.5, 2, 1, 0, 1.5, 1]));
  async function train(device: string, tableDevice: string, fuse: boolean) {
    const random = randomSource(13);
    const t0 = Float32Array.from({ length: 20 * 4 }, () => random() - 0.5);
    const table = hb.variable(t0, { shape: [20, 4], device: tableDevice });
    const graph = new Graph(new VariableStore(), 'train', device);
    const feed = raggedFeed(graph, 'f', () => ids, ids);
    const out = lookupChain(graph.variableTensor(table), feed, { combiner: 'sqrtn', maxNorm: 0.8, name: 'f' });
    const loss = hb.math.reduceMean(hb.math.square(hb.math.addConstant(out, -0.2)));
    const step = new CompiledStep(graph, [loss, out], new hb.train.AdagradOptimizer({ learningRate: 0.2 }).minimize(loss).nodes, { fuse });
    const seen: Float32Array[] = [];
    for (let i = 0; i < 3; i++) seen.push(...((await step.run(await step.prepare({ features: { f: ids } }))).outputs as Float32Array[]));
    return { seen: seen.map((a) => Array.from(a)), table: Array.from((await table.data()) as Float32Array) };
  }
  test.each([[true], [false]])('fuse: %s', async (fuse) => {
    const cpu = await train('cpu', 'cpu', fuse);
    for (const tableDevice of ['cuda:0', 'cpu']) {
      const gpu = await train('cuda:0', tableDevice, fuse);
      expect(gpu.seen).toEqual(cpu.seen);
      expect(gpu.table).toEqual(cpu.table);
    }
  });
});

describeCuda('a CUDA step waits for the device once, not once per update', () => {
  // `tables` tables, each looked up and updated (Adagrad, fused), under one dense weight.
  function stepWithTables(device: string, tables: number) {
    const ids = hb.ragged(BigInt64Array.from([3n, 9n, 9n, 0n, 17n, 3n]), Int32Array.from([0, 3, 3, 6]));
    const graph = new Graph(new VariableStore(), 'train', device);
    const outs = Array.from({ length: tables }, (_, k) => {
      const table = hb.variable(Float32Array.from({ length: 20 * 4 }, (_, i) => 0.01 * ((i + k) % 13)), { shape: [20, 4], name: `waits_table_${k}`, device });
      return lookupChain(graph.variableTensor(table), raggedFeed(graph, `f${k}`, () => ids, ids), { combiner: 'sum', name: `f${k}` });
    });
    const w = hb.variable(Float32Array.from([0.5, -0.5, 0.25, 1]), { shape: [4, 1], name: 'waits_dense', device });
    const logits = hb.math.matmul(outs.reduce((a, b) => hb.math.add(a, b)), graph.variableTensor(w));
    const loss = hb.math.reduceMean(hb.math.square(hb.math.addConstant(logits, -0.3)));
    const step = new CompiledStep(graph, [loss], new hb.train.AdagradOptimizer({ learningRate: 0.1 }).minimize(loss).nodes);
    const features = Object.fromEntries(Array.from({ length: tables }, (_, k) => [`f${k}`, ids]));
    return async () => step.run(await step.prepare({ features }));
  }

  (cudaEmulated ? test : test.skip)('host waits per step do not grow with the tables and weights it updates (emulated device: it counts them)', async () => {
    const perStep = async (tables: number) => {
      const run = stepWithTables('cuda:0', tables);
      await run();  // the first run makes the plan's buffers
      const before = native.cudaEmulation().hostWaits;
      for (let i = 0; i < 3; i++) await run();
      return (native.cudaEmulation().hostWaits - before) / 3;
    };
    const two = await perStep(2);
    const eight = await perStep(8);
    // The loss fetched back, the gradient checks' one word, the step's end and the ids'
    // host-side work: not a copy and a check per update (3 waits each before).
    expect(eight).toBe(two);
    expect(two).toBeLessThanOrEqual(10);
  });

  // A finite loss whose gradient is not: d sqrt(h)/dh is infinite at h = 0, and h = 0 * out
  // makes the lookup output's gradient inf * 0 = NaN. The table's update is refused on the
  // device as on the CPU, with the same error, and the table keeps its values; fused (one
  // backward + update kernel) and not (IndexedSlices to sparse_apply).
  // (The CPU's fused update checks the IndexedSlices its backward made; the GPU's checks
  // the lookup output's gradient, which never leaves the device.)
  test.each([
    [true, { cpu: 'the gradient \\(IndexedSlices values\\)', 'cuda:0': 'the gradient of its lookup output' }],
    [false, { cpu: 'the gradient \\(IndexedSlices values\\)', 'cuda:0': 'the gradient \\(IndexedSlices values\\)' }],
  ])('a gradient that is not finite fails the step naming the table, which is not changed (fuse: %s)', async (fuse, whatOn) => {
    const ids = hb.ragged(BigInt64Array.from([3n, 9n, 0n]), Int32Array.from([0, 2, 3]));
    for (const device of ['cpu', 'cuda:0']) {
      const t0 = Float32Array.from({ length: 20 * 4 }, (_, i) => 0.01 * i);
      const table = hb.variable(t0, { shape: [20, 4], name: `guarded_${device.replace(':', '')}`, device });
      const graph = new Graph(new VariableStore(), 'train', device);
      const out = lookupChain(graph.variableTensor(table), raggedFeed(graph, 'f', () => ids, ids), { combiner: 'sum', name: 'f' });
      const loss = hb.math.reduceSum(hb.math.sqrt(hb.math.scale(out, 0)));
      const step = new CompiledStep(graph, [loss], new hb.train.AdagradOptimizer({ learningRate: 0.1 }).minimize(loss).nodes, { fuse });
      const name = `[^ ]*guarded_${device.replace(':', '')}[_0-9]*`;
      await expect(step.run(await step.prepare({ features: { f: ids } }))).rejects.toMatchObject({
        code: 'HB_ERR_NAN',
        message: expect.stringMatching(new RegExp(`^applyGradients\\(${name}\\): ${whatOn[device as 'cpu' | 'cuda:0']} is NaN or infinite at row 0, column 0; ${name} was not changed$`)),
      });
      expect(Array.from((await table.data()) as Float32Array)).toEqual(Array.from(t0));
    }
  });

  // Every update kernel reads the skip flag: the fused columns (Adagrad), whole rows
  // (maxNorm, RowwiseAdagrad), a row with more than 64 entries (the long-segment kernels),
  // non-lazy Adam's decay and move over every row, and the dense updates; variable and
  // slots keep their values. On the GPU the checks are queued, not waited for: the failing
  // step's waits (emulated device) are the step's own and the one read of the checks and of
  // the failed one's index, 4 (8 when each check was waited for, the step stopping at it).
  const WAITS_OF_A_FAILED_STEP = 4;
  const optimizers: Array<[string, () => hb.train.Optimizer, boolean]> = [
    ['Adagrad', () => new hb.train.AdagradOptimizer({ learningRate: 0.1 }), false],
    ['Adagrad, maxNorm', () => new hb.train.AdagradOptimizer({ learningRate: 0.1 }), true],
    ['RowwiseAdagrad', () => new hb.train.RowwiseAdagradOptimizer({ learningRate: 0.1 }), false],
    ['Adam (not lazy)', () => new hb.train.AdamOptimizer({ learningRate: 0.1 }), false],
    ['Momentum', () => new hb.train.MomentumOptimizer({ learningRate: 0.1, momentum: 0.9 }), false],
  ];
  test.each(optimizers)('gradients that are not finite: the step fails, the table, a dense weight and their slots keep their values (%s)', async (_, makeOptimizer, clipped) => {
    // Row 3 is looked up 70 times (past the 64 entries the short-segment kernels take).
    const hot = 70;
    const ids = hb.ragged(BigInt64Array.from([...Array.from({ length: hot }, () => 3n), 9n, 0n]), Int32Array.from([0, hot, hot + 1, hot + 2]));
    const waits: number[] = [];
    for (const device of ['cpu', 'cuda:0']) {
      const t0 = Float32Array.from({ length: 20 * 4 }, (_, i) => 0.01 * i);
      const w0 = Float32Array.from([0.5, -0.5, 0.25, 1]);
      const tag = device.replace(':', '');
      const table = hb.variable(t0, { shape: [20, 4], name: `guarded_table_${tag}`, device });
      const w = hb.variable(w0, { shape: [4, 1], name: `guarded_w_${tag}`, device });
      const build = () => {
        const graph = new Graph(new VariableStore(), 'train', device);
        const out = lookupChain(graph.variableTensor(table), raggedFeed(graph, 'f', () => ids, ids), { combiner: 'sum', maxNorm: clipped ? 0.5 : 0, name: 'f' });
        const logits = hb.math.matmul(out, graph.variableTensor(w));
        // d sqrt(0 * x) / dx is infinity times 0: NaN for w's gradient and the lookup's.
        const loss = hb.math.reduceSum(hb.math.sqrt(hb.math.scale(logits, 0)));
        const optimizer = makeOptimizer();
        const step = new CompiledStep(graph, [loss], optimizer.minimize(loss).nodes);
        return { step, optimizer };
      };
      const slotsOf = async (optimizer: hb.train.Optimizer) => {
        const out: number[][] = [];
        for (const v of [table, w]) {
          for (const name of optimizer.getSlotNames()) out.push(Array.from((await optimizer.getSlot(v, name)!.data()) as Float32Array));
        }
        return out;
      };
      const { step, optimizer } = build();
      const prepared = await step.prepare({ features: { f: ids } });
      const slotsBefore = await slotsOf(optimizer);
      const waitsBefore = cudaEmulated ? native.cudaEmulation().hostWaits : 0;
      await expect(step.run(prepared)).rejects.toMatchObject({
        code: 'HB_ERR_NAN',
        message: expect.stringMatching(new RegExp(`guarded_(table|w)_${tag}[_0-9]* was not changed$`)),
      });
      if (cudaEmulated && device !== 'cpu') waits.push(native.cudaEmulation().hostWaits - waitsBefore);
      expect(Array.from((await table.data()) as Float32Array)).toEqual(Array.from(t0));
      expect(Array.from((await w.data()) as Float32Array)).toEqual(Array.from(w0));
      expect(await slotsOf(optimizer)).toEqual(slotsBefore);
    }
    if (waits.length) expect(waits[0]).toBeLessThanOrEqual(WAITS_OF_A_FAILED_STEP);
  });
});

describeCuda('GPU work the executor did not wait for, read from elsewhere', () => {
  // The GPU's executor ends a task with its work queued, not done: a copy made on another
  // thread (the CPU executor copying a GPU tensor into a CPU one) waits for that work first.
  test('an eager lookup\'s result copied into a CPU variable', async () => {
    const table = hb.variable(Float32Array.from({ length: 20 * 4 }, (_, i) => i + 1), { shape: [20, 4], device: 'cuda:0' });
    const ids = hb.ragged(BigInt64Array.from([3n, 9n]), Int32Array.from([0, 1, 2]));
    const out = await hb.nn.embeddingLookupSparse(table, ids, { combiner: 'sum' });
    const cpu = hb.variable(out, { device: 'cpu' });
    expect(Array.from((await cpu.data()) as Float32Array)).toEqual([13, 14, 15, 16, 37, 38, 39, 40]);
  });

  test('an eager update, then its variable assigned to a CPU variable', async () => {
    const w = hb.variable(Float32Array.from([1, 2, 3, 4]), { shape: [4], device: 'cuda:0' });
    await new hb.train.GradientDescentOptimizer({ learningRate: 0.5 }).applyGradients([[hb.tensor(Float32Array.from([1, 1, 1, 1]), [4], 'float32', { device: 'cuda:0' }), w]]);
    const cpu = hb.variable(Float32Array.from([0, 0, 0, 0]), { shape: [4], device: 'cpu' });
    await cpu.assign(w);
    expect(Array.from((await cpu.data()) as Float32Array)).toEqual([0.5, 1.5, 2.5, 3.5]);
  });

  // Copies into the device go through page-locked chunks that are written again only once
  // the device has copied out of them: 72 assigns of 1 MiB (36 chunks' worth, past the 64
  // MiB kept), a read every 8 (the device catches up, chunks free up), then every value.
  test('many copies into the device in a row, through reused page-locked chunks, each lands', async () => {
    const n = 1 << 18;
    const targets = Array.from({ length: 72 }, () => hb.variable(new Float32Array(n), { shape: [n], device: 'cuda:0' }));
    for (let k = 0; k < targets.length; k++) {
      await targets[k].assign(hb.tensor(new Float32Array(n).fill(k + 1), [n], 'float32', { device: 'cpu' }));
      if (k % 8 === 7) await targets[k - 3].read().then((t) => t.dispose());
    }
    for (let k = 0; k < targets.length; k++) {
      const values = (await targets[k].data()) as Float32Array;
      if (values[0] !== k + 1 || values[n - 1] !== k + 1) throw new Error(`target ${k}: ${values[0]} .. ${values[n - 1]}, not ${k + 1}`);
    }
  });
});

describeCuda('an Estimator on CUDA', () => {
  test('trains on the GPU with the CPU run\'s parameters to within float rounding', async () => {
    const gpu = estimatorOn('cuda');
    const cpu = estimatorOn('cpu');
    expect(gpu.device).toBe('cuda:0');
    await gpu.train(dataset(4096, TRAIN), { steps: 8 });
    await cpu.train(dataset(4096, TRAIN), { steps: 8 });
    const g = await valuesOf(gpu);
    const c = await valuesOf(cpu);
    expect([...g.keys()].sort()).toEqual([...c.keys()].sort());
    for (const [name, { device, values }] of g) {
      expect(device).toBe('cuda:0');
      const want = c.get(name)!.values;
      let worst = 0;
      for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(values[i] - want[i]));
      if (worst > 1e-4) throw new Error(`${name}: GPU and CPU parameters differ by ${worst} after 8 steps`);
    }
    const evalInput = dataset(2048, EVAL, 1024);
    const [eg, ec] = [await gpu.evaluate(evalInput), await cpu.evaluate(evalInput)];
    expect(Math.abs(eg.loss - ec.loss)).toBeLessThan(1e-4);
    expect(Math.abs(eg.auc - ec.auc)).toBeLessThan(1e-3);
  });

  test('learns the planted signal: eval AUC well above 0.5, loss falls', async () => {
    const est = estimatorOn('cuda');
    const evalInput = dataset(4096, EVAL, 1024);
    const before = await est.evaluate(evalInput);
    await est.train(dataset(40_000, TRAIN), { maxSteps: 150 });
    const after = await est.evaluate(evalInput);
    expect(after.auc).toBeGreaterThan(0.7);
    expect(after.loss).toBeLessThan(before.loss - 0.05);
    let rows = 0;
    for await (const p of est.predict(() => hb.data.Dataset.synthetic({ numDense, tables, numSamples: 300, seed: 11 }).batch(128))) {
      expect(p.probs as number).toBeGreaterThan(0);
      rows++;
    }
    expect(rows).toBe(300);
  });

  test("tables in host memory (embDevice: 'cpu') with the MLP on the GPU", async () => {
    const est = estimatorOn('cuda', 'cpu');
    await est.train(dataset(4096, TRAIN), { steps: 5 });
    const after = await valuesOf(est);
    const tableNames = [...after.keys()].filter((k) => k.endsWith('embedding_weights'));
    expect(tableNames.length).toBe(2);
    for (const [name, { device }] of after) expect(device).toBe(tableNames.includes(name) ? 'cpu' : 'cuda:0');
    const reference = estimatorOn('cpu');
    await reference.train(dataset(4096, TRAIN), { steps: 5 });
    const want = await valuesOf(reference);
    for (const name of tableNames) {
      const got = after.get(name)!.values;
      const expected = want.get(name)!.values;
      for (let i = 0; i < got.length; i++) if (Math.abs(got[i] - expected[i]) > 1e-4) throw new Error(`${name}[${i}]: ${got[i]} on the GPU model, ${expected[i]} on the CPU one`);
    }
  });

  test('a table on the GPU under a CPU model is an Error naming the column', async () => {
    const est = estimatorOn('cpu', 'cuda');
    await expect(est.train(dataset(1024, TRAIN), { steps: 1 })).rejects.toThrow(/feature column '(item|user)_embedding': embedding table '.*' is on cuda:0 but the model runs on cpu/);
  });
});
