// hb.models (Wide & Deep, DeepFM, DCN-v2, DLRM over feature columns) learning a planted
// signal through the Estimator, and the layers they add (hb.layers.fmInteraction,
// hb.layers.crossNetworkV2) against plain-JS references, forward and backward.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { gradients } from '../lib/graph/autodiff';
import { CompiledStep } from '../lib/graph/compiled_step';
import { Graph, SymbolicTensor, VariableStore } from '../lib/graph/graph';
import { placeholder } from '../lib/graph/ops/sources';
import { dataset, EVAL, numDense, tables, TRAIN } from './support/planted_data';
import { pinDevice } from './support/devices';
import { randomSource } from './support/reference';

pinDevice('cpu');

const fc = hb.featureColumn;
const m = hb.math;

// ---------------------------------------------------------------------------------------
// Layers against plain-JS references (float64), values and gradients.

/**
 * Builds `build` over variables of the given values in a fresh graph, runs it once and
 * returns the output and d(sum(output^2))/d(each variable), plus the variables made by
 * the layer (by name, read after the run).
 */
async function runLayer(
  values: Float32Array[],
  shapes: number[][],
  build: (vars: SymbolicTensor[]) => SymbolicTensor,
  extra: string[] = [],
): Promise<{ out: Float32Array; grads: Float32Array[]; made: Map<string, { values: Float32Array; grad: Float32Array }> }> {
  const graph = new Graph(new VariableStore(), 'train', 'cpu');
  const vars = values.map((v, i) => hb.variable(v, { shape: shapes[i], name: `input_${i}` }));
  // A fed tensor the step reads (a plan needs a feed); it does not touch the layer.
  const feed = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 1], build: () => new Float32Array(3) });
  const out = build(vars.map((v) => graph.variableTensor(v)));
  const loss = m.add(m.reduceSum(m.square(out)), m.scale(m.reduceSum(feed), 0));
  const madeVars = extra.map((name) => {
    const v = graph.store.variables.get(name);
    if (!v) throw new Error(`no variable ${name}`);
    return v;
  });
  const grads = gradients(loss, [...vars, ...madeVars]);
  const gradOf = (v: hb.Variable) => grads.find((g) => g.variable === v)?.dense as SymbolicTensor;
  const step = new CompiledStep(graph, [out, ...vars.map(gradOf), ...madeVars.map(gradOf)]);
  const result = await step.run(await step.prepare({ features: { x: new Float32Array(3) } }));
  const outputs = result.outputs as Float32Array[];
  const made = new Map<string, { values: Float32Array; grad: Float32Array }>();
  for (let i = 0; i < madeVars.length; i++) made.set(extra[i], { values: (await madeVars[i].data()) as Float32Array, grad: outputs[1 + vars.length + i] });
  return { out: outputs[0], grads: outputs.slice(1, 1 + vars.length), made };
}

/** Central differences of a float64 JS function of flat parameter arrays. */
function numericGradients(f: (params: Float64Array[]) => number, params: Float64Array[]): Float64Array[] {
  const h = 1e-5;
  return params.map((p, which) =>
    Float64Array.from(p, (_, i) => {
      const plus = params.map((q) => q.slice());
      const minus = params.map((q) => q.slice());
      plus[which][i] += h;
      minus[which][i] -= h;
      return (f(plus) - f(minus)) / (2 * h);
    }),
  );
}

function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance = 1e-4): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const tol = tolerance * Math.max(1, Math.abs(expected[i]));
    if (!(Math.abs(actual[i] - expected[i]) <= tol)) throw new Error(`element ${i}: ${actual[i]} vs expected ${expected[i]} (tolerance ${tol})`);
  }
}

describe('hb.layers.fmInteraction', () => {
  const batch = 3;
  const k = 4;
  const fields = 3;

  // The sum of the dot products of every pair of distinct fields, per example: the
  // definition, not the square-of-sum identity the layer uses.
  function fmReference(v: Float64Array[]): number[] {
    return Array.from({ length: batch }, (_, b) => {
      let s = 0;
      for (let i = 0; i < v.length; i++) for (let j = i + 1; j < v.length; j++) for (let c = 0; c < k; c++) s += v[i][b * k + c] * v[j][b * k + c];
      return s;
    });
  }

  test('gives the pairwise term of DeepFM, and its gradient, on concrete values', async () => {
    const random = randomSource(3);
    const values = Array.from({ length: fields }, () => Float32Array.from({ length: batch * k }, () => random() * 2 - 1));
    const { out, grads } = await runLayer(values, values.map(() => [batch, k]), (vars) => hb.layers.fmInteraction(vars));
    const v64 = values.map((v) => Float64Array.from(v));
    const expected = fmReference(v64);
    expect(out.length).toBe(batch);
    expectClose(out, expected);
    const reference = numericGradients((p) => fmReference(p).reduce((a, y) => a + y * y, 0), v64);
    grads.forEach((g, i) => expectClose(g, reference[i], 1e-3));
    // The reference is not trivially zero: the test can fail.
    expect(Math.max(...expected.map(Math.abs))).toBeGreaterThan(0.1);
  });

  test('one field has no pairs: zeros', async () => {
    const values = [Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])];
    const { out } = await runLayer(values, [[batch, k]], (vars) => hb.layers.fmInteraction(vars, { name: 'single' }));
    expect(Array.from(out)).toEqual([0, 0, 0]);
  });

  test('bad input is an Error naming the layer and the argument', () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const a = placeholder(graph, { name: 'a', dtype: 'float32', shape: [-1, 4], build: () => new Float32Array() });
    const b = placeholder(graph, { name: 'b', dtype: 'float32', shape: [-1, 3], build: () => new Float32Array() });
    const c = placeholder(graph, { name: 'c', dtype: 'float32', shape: [-1, 2, 2], build: () => new Float32Array() });
    expect(() => hb.layers.fmInteraction([])).toThrow(/^fm_interaction: embeddings must be a non-empty array/);
    expect(() => hb.layers.fmInteraction(a as never)).toThrow(TypeError);
    expect(() => hb.layers.fmInteraction([a, b], { name: 'fm' })).toThrow(/^fm: every embedding must have the same shape \[batch, k\]; embeddings\[1\] is \[batch, 3\] but embeddings\[0\] is \[batch, 4\]/);
    expect(() => hb.layers.fmInteraction([c, c])).toThrow(/fm_interaction: embeddings\[0\] must be \[batch, k\]/);
    expect(() => hb.layers.fmInteraction([a, 3 as never])).toThrow(/fm_interaction: embeddings\[1\] must be a symbolic tensor/);
    expect(() => hb.layers.fmInteraction([a, a], { nmae: 'x' } as never)).toThrow(/layers\.fmInteraction: unknown option 'nmae' \(did you mean 'name'\?\)/);
  });
});

describe('hb.layers.crossNetworkV2', () => {
  const batch = 3;
  const d = 4;
  const layers = 2;

  // x_{l+1} = x0 * (x_l W_l + b_l) + x_l, W_l [d, d] row-major (input index first).
  function crossReference(x0: Float64Array, w: Float64Array[], b: Float64Array[]): Float64Array {
    let xl = x0.slice();
    for (let l = 0; l < w.length; l++) {
      const next = new Float64Array(batch * d);
      for (let r = 0; r < batch; r++) {
        for (let j = 0; j < d; j++) {
          let p = b[l][j];
          for (let i = 0; i < d; i++) p += xl[r * d + i] * w[l][i * d + j];
          next[r * d + j] = x0[r * d + j] * p + xl[r * d + j];
        }
      }
      xl = next;
    }
    return xl;
  }

  test('gives x0 * (x W + b) + x per layer, and the gradients of x, kernels and biases', async () => {
    const random = randomSource(5);
    const x = Float32Array.from({ length: batch * d }, () => random() * 2 - 1);
    const names = Array.from({ length: layers }, (_, l) => [`cross/kernel_${l}`, `cross/bias_${l}`]).flat();
    const { out, grads, made } = await runLayer(
      [x],
      [[batch, d]],
      ([xv]) =>
        hb.layers.crossNetworkV2(xv, layers, {
          name: 'cross',
          kernelInitializer: (l) => hb.initializers.randomUniform({ minval: -1, maxval: 1, seed: 10 + l }),
          biasInitializer: hb.initializers.randomUniform({ minval: -0.5, maxval: 0.5, seed: 20 }),
        }),
      names,
    );
    const w = [0, 1].map((l) => Float64Array.from(made.get(`cross/kernel_${l}`)!.values));
    const b = [0, 1].map((l) => Float64Array.from(made.get(`cross/bias_${l}`)!.values));
    expect(w[0].length).toBe(d * d);
    expect(b[0].length).toBe(d);
    // Seeded apart: the layers' kernels differ.
    expect(Array.from(w[0])).not.toEqual(Array.from(w[1]));
    expectClose(out, crossReference(Float64Array.from(x), w, b));
    const loss = (p: Float64Array[]) => crossReference(p[0], [p[1], p[3]], [p[2], p[4]]).reduce((a, y) => a + y * y, 0);
    const reference = numericGradients(loss, [Float64Array.from(x), w[0], b[0], w[1], b[1]]);
    expectClose(grads[0], reference[0], 1e-3);
    names.forEach((name, i) => expectClose(made.get(name)!.grad, reference[1 + i], 1e-3));
  });

  test('defaults: glorotUniform kernels, zero biases, names cross_network_v2, _1', () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 5], build: () => new Float32Array() });
    const y = hb.layers.crossNetworkV2(x, 2);
    hb.layers.crossNetworkV2(y, 1);
    expect(y.shape).toEqual(x.shape);
    expect([...graph.store.variables.keys()].sort()).toEqual([
      'cross_network_v2/bias_0', 'cross_network_v2/bias_1', 'cross_network_v2/kernel_0', 'cross_network_v2/kernel_1', 'cross_network_v2_1/bias_0', 'cross_network_v2_1/kernel_0',
    ]);
    expect(graph.store.variables.get('cross_network_v2/kernel_1')!.shape).toEqual([5, 5]);
  });

  test('bad input is an Error naming the layer and the argument', () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 4], build: () => new Float32Array() });
    const x3 = placeholder(graph, { name: 'x3', dtype: 'float32', shape: [-1, 2, 2], build: () => new Float32Array() });
    expect(() => hb.layers.crossNetworkV2(x, 0)).toThrow(RangeError);
    expect(() => hb.layers.crossNetworkV2(x, 0, { name: 'dcn' })).toThrow(/^dcn: numLayers must be an integer >= 1, got 0/);
    expect(() => hb.layers.crossNetworkV2(x, '2' as never)).toThrow(TypeError);
    expect(() => hb.layers.crossNetworkV2(x3, 1)).toThrow(/cross_network_v2: the input must be \[batch, features\], got \[batch, 2, 2\]/);
    expect(() => hb.layers.crossNetworkV2(undefined as never, 1)).toThrow(/cross_network_v2: the input must be a symbolic tensor/);
    expect(() => hb.layers.crossNetworkV2(x, 1, { kernelInitializer: 'glorot' as never })).toThrow(/cross_network_v2: kernelInitializer must be an hb\.initializers initializer/);
    expect(() => hb.layers.crossNetworkV2(x, 1, { name: 'c2', kernelInitializer: (() => 3) as never })).toThrow(/c2: kernelInitializer\(0\) must return an hb\.initializers initializer/);
    expect(() => hb.layers.crossNetworkV2(x, 1, { numLayers: 2 } as never)).toThrow(/layers\.crossNetworkV2: unknown option 'numLayers'/);
  });
});

// ---------------------------------------------------------------------------------------
// Models learning the planted signal (test/support/planted_data.ts: a logistic model of
// the ids of 'user' and 'item' and of log1p of I1..I4).

/** log1p(max(0, x)) / 2 - 1, as the planted model sees the counts. */
const logCounts = (values: Float32Array) => values.map((v) => Math.log1p(Math.max(0, v)) / 2 - 1);

function inputs(options: { dims?: number[]; embeddingDim?: number } = {}): hb.models.ModelInputs {
  return {
    numeric: Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`, { normalizerFn: logCounts })),
    categorical: tables.map((t, i) => ({
      column: fc.categoricalColumnWithIdentity(t.name, t.vocabularySize),
      embedding: { initializer: hb.initializers.truncatedNormal({ stddev: 0.1, seed: 3 * SEED + i }) },
      dimension: options.dims?.[i],
    })),
    embeddingDim: options.embeddingDim ?? 8,
  };
}

const SEED = 1;
const quiet = () => new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, tfRandomSeed: 7 + SEED });
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'hb-models-'));

/** Every variable and optimizer slot the latest checkpoint in `dir` holds, by name. */
async function checkpointNames(dir: string): Promise<string[]> {
  const latest = fs.readdirSync(dir).filter((f) => f.endsWith('.safetensors')).sort().pop() as string;
  return [...(await hb.estimator.loadCheckpoint(path.join(dir, latest))).tensors.keys()];
}

/** Evaluates on held-out rows, trains, evaluates again. */
async function learn(modelFn: hb.estimator.ModelFn, steps = 300, modelDir?: string): Promise<{ before: hb.estimator.EvaluateResult; after: hb.estimator.EvaluateResult; est: hb.estimator.Estimator }> {
  const est = new hb.estimator.Estimator({ modelFn, modelDir, config: quiet() });
  const evalInput = dataset(4096, EVAL, 1024);
  const before = await est.evaluate(evalInput);
  await est.train(dataset(256 * steps, TRAIN), { maxSteps: steps });
  const after = await est.evaluate(evalInput);
  expect(after.globalStep).toBe(steps);
  return { before, after, est };
}

function expectLearned(before: hb.estimator.EvaluateResult, after: hb.estimator.EvaluateResult): void {
  // From about 0.5 to well above it (the planted model itself scores about 0.87 on these rows;
  // the models reach 0.75 to 0.82 in these few steps).
  expect(before.auc).toBeLessThan(0.65);
  expect(after.auc).toBeGreaterThan(0.7);
  expect(after.loss).toBeLessThan(before.loss - 0.05);
  expect(after.meanProbability).toBeGreaterThan(0.05);
  expect(after.meanProbability).toBeLessThan(0.95);
}

describe('hb.models learn a planted signal', () => {
  test('wideAndDeepModelFn: FTRL on the linear part, Adagrad on the deep part', async () => {
    const dir = tmp();
    const { before, after, est } = await learn(hb.models.wideAndDeepModelFn({ inputs: inputs(), hiddenUnits: [16], seed: SEED }), undefined, dir);
    expectLearned(before, after);
    const names = [...est.variables.keys()];
    expect(names).toEqual(
      expect.arrayContaining([
        'linear/linear_model/user/weights', 'linear/linear_model/item/weights', 'linear/linear_model/numeric/kernel', 'linear/linear_model/bias_weights',
        'user_embedding/embedding_weights', 'item_embedding/embedding_weights', 'dnn/hiddenlayer_0/kernel', 'dnn/logits/kernel',
      ]),
    );
    // The linear part's table is its own (one weight per id), not the embedding's.
    expect(est.variables.get('linear/linear_model/user/weights')!.shape).toEqual([2000, 1]);
    expect(est.variables.get('user_embedding/embedding_weights')!.shape).toEqual([2000, 8]);
    // Each part had its optimizer: FTRL slots on the linear variables only, Adagrad's on the rest.
    const slots = (await checkpointNames(dir)).filter((n) => !est.variables.has(n) && n !== 'global_step');
    expect(slots).toEqual(expect.arrayContaining(['linear/linear_model/user/weights/Ftrl', 'linear/linear_model/bias_weights/Ftrl', 'user_embedding/embedding_weights/Adagrad', 'dnn/logits/kernel/Adagrad']));
    expect(slots.filter((s) => s.startsWith('linear/')).every((s) => /\/Ftrl(_1)?$/.test(s))).toBe(true);
    expect(slots.filter((s) => !s.startsWith('linear/')).every((s) => /\/Adagrad$/.test(s))).toBe(true);
    // The linear weights moved off their zeros.
    const linear = (await est.variables.get('linear/linear_model/user/weights')!.data()) as Float32Array;
    expect(linear.some((v) => v !== 0)).toBe(true);
  });

  test('deepFMModelFn: first-order term + FM + MLP over shared embeddings', async () => {
    const dir = tmp();
    const { before, after, est } = await learn(hb.models.deepFMModelFn({ inputs: inputs(), hiddenUnits: [16], seed: SEED }), undefined, dir);
    expectLearned(before, after);
    expect([...est.variables.keys()]).toEqual(expect.arrayContaining(['linear/linear_model/item/weights', 'item_embedding/embedding_weights', 'dnn/hiddenlayer_0/kernel']));
    // One optimizer by default (Adagrad) for all.
    const slots = (await checkpointNames(dir)).filter((n) => !est.variables.has(n) && n !== 'global_step');
    expect(slots.length).toBeGreaterThan(4);
    expect(slots.every((s) => /\/Adagrad$/.test(s))).toBe(true);
  });

  test('dcnModelFn: DCN-v2 cross layers then an MLP', async () => {
    const { before, after, est } = await learn(hb.models.dcnModelFn({ inputs: inputs(), crossLayers: 2, hiddenUnits: [16], seed: SEED }));
    expectLearned(before, after);
    // x0 = 4 numeric + 2 x 8 embedding values.
    expect(est.variables.get('cross/kernel_1')!.shape).toEqual([20, 20]);
    expect(est.variables.get('cross/bias_0')!.shape).toEqual([20]);
  });

  test('dlrmModelFn over feature columns (inputs)', async () => {
    // DLRM reads the ids' signal through dot products only: it learns slower than the
    // models with a linear or a concatenated path, so a higher learning rate (makeOptimizer).
    const modelFn = hb.models.dlrmModelFn({
      inputs: inputs({ embeddingDim: 4 }),
      bottomMlp: [8, 4],
      topMlp: [8],
      makeOptimizer: () => new hb.train.AdagradOptimizer({ learningRate: 0.2 }),
      seed: SEED,
    });
    const { before, after } = await learn(modelFn, 400);
    expectLearned(before, after);
  });
});

describe('hb.models: default embedding initializers', () => {
  // The embeddings' initial values, made by one evaluation (no training step).
  async function initialEmbeddings(modelFn: hb.estimator.ModelFn): Promise<Map<string, Float32Array>> {
    const est = new hb.estimator.Estimator({ modelFn, config: quiet() });
    await est.evaluate(dataset(256, EVAL, 256));
    const out = new Map<string, Float32Array>();
    for (const [name, v] of est.variables) if (name.endsWith('_embedding/embedding_weights')) out.set(name, (await v.data()) as Float32Array);
    expect([...out.keys()].sort()).toEqual(['item_embedding/embedding_weights', 'user_embedding/embedding_weights']);
    return out;
  }
  const stddev = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0) / v.length);
  const largest = (v: Float32Array) => v.reduce((s, x) => Math.max(s, Math.abs(x)), 0);
  // No `initializer` in the embedding options: each model's own default.
  const plainInputs = (embedding: hb.featureColumn.EmbeddingColumnOptions = {}): hb.models.ModelInputs => ({
    numeric: Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`, { normalizerFn: logCounts })),
    categorical: tables.map((t) => ({ column: fc.categoricalColumnWithIdentity(t.name, t.vocabularySize), embedding })),
    embeddingDim: 8,
  });
  const rowsOf = (name: string) => tables.find((t) => name.startsWith(`${t.name}_`))!.vocabularySize;

  test('DLRM: uniform in +-sqrt(1 / rows) per table, over inputs and over names', async () => {
    const overInputs = await initialEmbeddings(hb.models.dlrmModelFn({ inputs: plainInputs(), bottomMlp: [8, 8], topMlp: [8], seed: SEED }));
    const overNames = await initialEmbeddings(
      hb.models.dlrmModelFn({ denseFeatures: Array.from({ length: numDense }, (_, i) => `I${i + 1}`), tables: tables.map((t) => ({ name: t.name, numBuckets: t.vocabularySize })), embeddingDim: 8, bottomMlp: [8, 8], topMlp: [8] }),
    );
    for (const values of [overInputs, overNames]) {
      for (const [name, v] of values) {
        const bound = Math.sqrt(1 / rowsOf(name));
        expect(largest(v)).toBeLessThanOrEqual(bound);
        expect(largest(v)).toBeGreaterThan(0.95 * bound);
        expect(stddev(v)).toBeCloseTo(bound / Math.sqrt(3), 3); // a uniform's
      }
    }
  });

  test('DeepFM: normal, stddev 0.01; DCN: uniform in +-0.05; Wide & Deep: TF\'s 1 / sqrt(dimension)', async () => {
    for (const v of (await initialEmbeddings(hb.models.deepFMModelFn({ inputs: plainInputs(), hiddenUnits: [8], seed: SEED }))).values()) {
      expect(largest(v)).toBeLessThanOrEqual(0.02); // truncated at 2 stddev
      expect(stddev(v)).toBeGreaterThan(0.007);
      expect(stddev(v)).toBeLessThan(0.011);
    }
    for (const v of (await initialEmbeddings(hb.models.dcnModelFn({ inputs: plainInputs(), crossLayers: 1, hiddenUnits: [8], seed: SEED }))).values()) {
      expect(largest(v)).toBeLessThanOrEqual(0.05);
      expect(largest(v)).toBeGreaterThan(0.045);
    }
    for (const v of (await initialEmbeddings(hb.models.wideAndDeepModelFn({ inputs: plainInputs(), hiddenUnits: [8], seed: SEED }))).values()) {
      expect(stddev(v)).toBeGreaterThan(0.25); // 1 / sqrt(8) = 0.35, truncated at 2 stddev
      expect(largest(v)).toBeLessThanOrEqual(2 / Math.sqrt(8));
    }
  });

  test('an initializer in the embedding options wins', async () => {
    const given = plainInputs({ initializer: hb.initializers.constant(0.25) });
    for (const modelFn of [
      hb.models.dlrmModelFn({ inputs: given, bottomMlp: [8, 8], topMlp: [8], seed: SEED }),
      hb.models.deepFMModelFn({ inputs: given, hiddenUnits: [8], seed: SEED }),
      hb.models.dcnModelFn({ inputs: given, crossLayers: 1, hiddenUnits: [8], seed: SEED }),
    ]) {
      for (const v of (await initialEmbeddings(modelFn)).values()) expect(v.every((x) => x === 0.25)).toBe(true);
    }
  });
});

describe('hb.models: seeds, predictions, optimizers', () => {
  test("dlrmModelFn over inputs with numericTransform 'log1p' is the model over names, bit for bit", async () => {
    const run = async (modelFn: hb.estimator.ModelFn) => {
      const est = new hb.estimator.Estimator({ modelFn, config: quiet() });
      await est.train(dataset(1024, TRAIN), { steps: 3 });
      const values = new Map<string, number[]>();
      for (const [name, v] of est.variables) values.set(name, Array.from((await v.data()) as Float32Array));
      return values;
    };
    const mlps = { bottomMlp: [8, 4], topMlp: [8], seed: 3 };
    const byNames = await run(
      hb.models.dlrmModelFn({ denseFeatures: Array.from({ length: numDense }, (_, i) => `I${i + 1}`), tables: tables.map((t) => ({ name: t.name, numBuckets: t.vocabularySize })), embeddingDim: 4, ...mlps }),
    );
    const byInputs = await run(
      hb.models.dlrmModelFn({
        inputs: {
          numeric: Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`)),
          categorical: tables.map((t) => ({ column: fc.categoricalColumnWithIdentity(t.name, t.vocabularySize), embedding: { combiner: 'sum' as const } })),
          embeddingDim: 4,
          numericTransform: 'log1p',
        },
        ...mlps,
      }),
    );
    expect([...byInputs.keys()].sort()).toEqual([...byNames.keys()].sort());
    expect(byInputs.size).toBeGreaterThan(6);
    for (const [name, values] of byNames) expect(byInputs.get(name)).toEqual(values);
    // Without the transform the raw counts go in: another model.
    const raw = await run(
      hb.models.dlrmModelFn({
        inputs: {
          numeric: Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`)),
          categorical: tables.map((t) => ({ column: fc.categoricalColumnWithIdentity(t.name, t.vocabularySize), embedding: { combiner: 'sum' as const } })),
          embeddingDim: 4,
        },
        ...mlps,
      }),
    );
    expect(raw.get('bottom_mlp_0/kernel')).not.toEqual(byNames.get('bottom_mlp_0/kernel'));
  });

  test('the same seeds give the same parameters; another seed other ones', async () => {
    const run = async (seed: number) => {
      const est = new hb.estimator.Estimator({ modelFn: hb.models.dcnModelFn({ inputs: inputs(), crossLayers: 1, hiddenUnits: [8], seed }), config: quiet() });
      await est.train(dataset(1024, TRAIN), { steps: 3 });
      return (await est.variables.get('cross/kernel_0')!.data()) as Float32Array;
    };
    const a = await run(5);
    expect(Array.from(await run(5))).toEqual(Array.from(a));
    expect(Array.from(await run(6))).not.toEqual(Array.from(a));
  });

  test('predict gives probs; makeOptimizer and makeWideOptimizer are used', async () => {
    const made: string[] = [];
    const modelFn = hb.models.wideAndDeepModelFn({
      inputs: inputs(),
      hiddenUnits: [8],
      makeOptimizer: () => (made.push('deep'), new hb.train.AdamOptimizer({ learningRate: 0.01 })),
      makeWideOptimizer: () => (made.push('wide'), new hb.train.GradientDescentOptimizer({ learningRate: 0.1 })),
    });
    const dir = tmp();
    const est = new hb.estimator.Estimator({ modelFn, modelDir: dir, config: quiet() });
    await est.train(dataset(512, TRAIN), { steps: 2 });
    expect(made.sort()).toEqual(['deep', 'wide']);
    const slots = (await checkpointNames(dir)).filter((n) => !est.variables.has(n));
    expect(slots.some((s) => s.startsWith('linear/'))).toBe(false);
    expect(slots).toEqual(expect.arrayContaining(['dnn/logits/kernel/Adam']));
    const rows: Array<Record<string, number | Float32Array>> = [];
    for await (const p of est.predict(dataset(1024, EVAL, 256))) rows.push(p);
    expect(rows.length).toBe(1024);
    expect(Object.keys(rows[0])).toEqual(['probs']);
    expect(rows.every((r) => (r.probs as number) > 0 && (r.probs as number) < 1)).toBe(true);
  });
});

describe('hb.models refuse bad configs with an Error naming the model and the argument', () => {
  test('deepFMModelFn: embeddings of one dimension, two fields at least', () => {
    expect(() => hb.models.deepFMModelFn({ inputs: inputs({ dims: [8, 4] }), hiddenUnits: [8] })).toThrow(
      /^deepFMModelFn: every categorical input must have the same embedding dimension for the factorization machine; 'user' has 8 but 'item' has 4/,
    );
    const one = inputs();
    one.categorical = one.categorical.slice(0, 1);
    expect(() => hb.models.deepFMModelFn({ inputs: one, hiddenUnits: [8] })).toThrow(/deepFMModelFn: the factorization machine needs at least two categorical inputs/);
    expect(() => hb.models.deepFMModelFn({ inputs: inputs({ dims: [4, 4] }), hiddenUnits: [8] })).not.toThrow();
  });

  test('unknown keys, bad units, bad columns', () => {
    expect(() => hb.models.wideAndDeepModelFn({ inputs: inputs(), hiddenUnit: [8] } as never)).toThrow(/wideAndDeepModelFn: unknown option 'hiddenUnit' \(did you mean 'hiddenUnits'\?\)/);
    expect(() => hb.models.wideAndDeepModelFn({ inputs: inputs(), hiddenUnits: [8, 0] })).toThrow(/wideAndDeepModelFn: hiddenUnits must be an array of integers >= 1, got \[8,0\]/);
    expect(() => hb.models.dcnModelFn({ inputs: inputs(), crossLayers: 0, hiddenUnits: [] })).toThrow(/^dcnModelFn: crossLayers must be an integer >= 1, got 0/);
    expect(() => hb.models.dcnModelFn({ inputs: { ...inputs(), embeddingDim: 0 }, crossLayers: 1, hiddenUnits: [] })).toThrow(/dcnModelFn: inputs\.embeddingDim must be an integer >= 1, got 0/);
    const user = fc.categoricalColumnWithIdentity('user', 10);
    expect(() => hb.models.dcnModelFn({ inputs: { numeric: [user as never], categorical: [], embeddingDim: 4 }, crossLayers: 1, hiddenUnits: [] })).toThrow(
      /dcnModelFn: inputs\.numeric\[0\] must be a dense feature column .*categorical column 'user'/,
    );
    expect(() => hb.models.dcnModelFn({ inputs: { numeric: [], categorical: [{ column: user }, { column: user }], embeddingDim: 4 }, crossLayers: 1, hiddenUnits: [] })).toThrow(
      /dcnModelFn: categorical column 'user' is given twice/,
    );
    expect(() => hb.models.dcnModelFn({ inputs: { numeric: [], categorical: [{ column: 'user' as never }], embeddingDim: 4 }, crossLayers: 1, hiddenUnits: [] })).toThrow(
      /dcnModelFn: inputs\.categorical\[0\]\.column must be a categorical column/,
    );
    expect(() => hb.models.dcnModelFn({ inputs: { numeric: [], categorical: [{ column: user, embedding: { combiner: 'max' as never } }], embeddingDim: 4 }, crossLayers: 1, hiddenUnits: [] })).toThrow(
      /dcnModelFn: inputs\.categorical\[0\] \('user'\): embeddingColumn: combiner must be/,
    );
    expect(() => hb.models.dcnModelFn({ inputs: { numeric: [], categorical: [], embeddingDim: 4 }, crossLayers: 1, hiddenUnits: [] })).toThrow(/dcnModelFn: inputs has no feature/);
    expect(() => hb.models.dcnModelFn({ inputs: inputs(), crossLayers: 1, hiddenUnits: [], makeWideOptimizer: () => new hb.train.FtrlOptimizer({ learningRate: 0.1 }) })).toThrow(
      /dcnModelFn: makeWideOptimizer is for models with a linear part/,
    );
    expect(() => hb.models.wideAndDeepModelFn({ inputs: inputs(), hiddenUnits: [], makeOptimizer: 'adam' as never })).toThrow(/wideAndDeepModelFn: makeOptimizer must be a function/);
  });

  test('dlrmModelFn: inputs or names, not both; dimensions that fit the interaction', () => {
    expect(() => hb.models.dlrmModelFn({ inputs: inputs({ embeddingDim: 4 }), bottomMlp: [8], topMlp: [] })).toThrow(/bottom MLP must end at embeddingDim \(4\), got 8/);
    expect(() => hb.models.dlrmModelFn({ inputs: inputs({ embeddingDim: 4, dims: [4, 8] }), bottomMlp: [4], topMlp: [] })).toThrow(/dlrmModelFn: every embedding must have inputs\.embeddingDim \(4\) dimensions.*'item' has 8/);
    expect(() => hb.models.dlrmModelFn({ inputs: { ...inputs({ embeddingDim: 4 }), numeric: [] }, bottomMlp: [4], topMlp: [] })).toThrow(/dlrmModelFn: inputs\.numeric must name at least one dense column/);
    expect(() => hb.models.dlrmModelFn({ inputs: inputs({ embeddingDim: 4 }), tables: [], bottomMlp: [4], topMlp: [] } as never)).toThrow(/dlrmModelFn: give either inputs .* not both; got inputs and tables/);
    expect(() => hb.models.dlrmModelFn({ denseFeatures: [], tables: [], embeddingDim: 4, bottomMlp: [4], topMlp: [], topMLP: [] } as never)).toThrow(/dlrmModelFn: unknown option 'topMLP'/);
  });
});
