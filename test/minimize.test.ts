// optimizer.minimize inside a compiled step against the eager path users can also take:
// the same gradients through embeddingLookupSparseGrad and applyGradients, whose rules are
// tested against TF's in optimizers.test.ts. The compiled step runs twice: with the
// lookup chain fused (one lookup kernel, one fused backward + sparse update) and with
// every op of the chain as it is (prune, unique, gather, combine, their gradients,
// sparse_apply). Both are bit-identical to the eager path over 3 steps.
import * as hb from '../lib';
import { lookupChain } from '../lib/embedding/lookup_chain';
import { gradients } from '../lib/graph/autodiff';
import { CompiledStep } from '../lib/graph/compiled_step';
import { Graph, SymbolicTensor, VariableStore, withGraph } from '../lib/graph/graph';
import { placeholder } from '../lib/graph/ops/sources';
import { relu } from '../lib/graph/ops/elementwise';
import { raggedFeed } from '../lib/graph/ragged_feed';
import { randomSource } from './support/reference';
import { pinDevice } from './support/devices';

// Checked against CPU references bit for bit / at CPU tolerances; test/cuda_plan.test.ts
// checks the CUDA kernels against these.
pinDevice('cpu');

const m = hb.math;
// Negative ids are pruned; row 3 repeats within and across examples; example 2 is empty.
const ids = hb.ragged(BigInt64Array.from([1n, 3n, 3n, 7n, 0n, 19n, 3n, -4n]), Int32Array.from([0, 2, 4, 4, 8]));
const batchSize = 4;

const head = (emb: SymbolicTensor, w: SymbolicTensor) => m.reduceMean(m.square(m.addConstant(m.matmul(emb, w), -0.5)));

function model(graph: Graph, table: hb.Variable, w: hb.Variable): SymbolicTensor {
  const feed = raggedFeed(graph, 'emb', () => ids, ids);
  return head(lookupChain(graph.variableTensor(table), feed, { combiner: 'mean', name: 'emb' }), graph.variableTensor(w));
}

const makers: Array<[string, () => hb.train.Optimizer]> = [
  ['GradientDescent', () => new hb.train.GradientDescentOptimizer({ learningRate: 0.3 })],
  ['Momentum', () => new hb.train.MomentumOptimizer({ learningRate: 0.2, momentum: 0.9 })],
  ['Momentum (Nesterov)', () => new hb.train.MomentumOptimizer({ learningRate: 0.2, momentum: 0.9, useNesterov: true })],
  ['Adagrad', () => new hb.train.AdagradOptimizer({ learningRate: 0.3 })],
  ['Adam', () => new hb.train.AdamOptimizer({ learningRate: 0.05 })],
  ['Adam (lazy)', () => new hb.train.AdamOptimizer({ learningRate: 0.05, lazy: true })],
  ['Ftrl', () => new hb.train.FtrlOptimizer({ learningRate: 0.3, l1RegularizationStrength: 0.01, l2RegularizationStrength: 0.01 })],
  ['RowwiseAdagrad', () => new hb.train.RowwiseAdagradOptimizer({ learningRate: 0.3 })],
];

describe('minimize in a compiled step equals eager applyGradients', () => {
  test.each(makers)('%s', async (_name, make) => {
    const random = randomSource(3);
    const t0 = Float32Array.from({ length: 20 * 4 }, () => random() - 0.5);
    const w0 = Float32Array.from({ length: 4 }, () => random() - 0.5);
    const paths = [{ fuse: true }, { fuse: false }].map(({ fuse }) => {
      const table = hb.variable(t0, { shape: [20, 4] });
      const w = hb.variable(w0, { shape: [4, 1] });
      const graph = new Graph(new VariableStore(), 'train', 'cpu');
      const loss = model(graph, table, w);
      const trainOp = make().minimize(loss);
      return { table, w, step: new CompiledStep(graph, [loss], trainOp.nodes, { fuse }) };
    });
    // The fused plan has one lookup kernel and one backward + update; the other keeps the chain.
    const kernels = (step: CompiledStep) => step.compiled.spec.steps.map((s) => s.kernel);
    expect(kernels(paths[0].step)).toEqual(expect.arrayContaining(['embedding_lookup', 'lookup_backward_apply']));
    expect(kernels(paths[0].step)).not.toEqual(expect.arrayContaining(['unique']));
    expect(paths[0].step.compiled.fused).toEqual(['embedding_lookup: emb', expect.stringMatching(/^lookup_backward_apply: /)]);
    expect(kernels(paths[1].step)).toEqual(expect.arrayContaining(['prune_ids', 'unique', 'gather_rows', 'segment_combine', 'segment_combine_grad', 'sparse_apply']));

    // Eager: the lookup, then the head's gradient with respect to its output (a variable
    // holding the lookup's values), then the table's sparse gradient and the updates.
    const eagerTable = hb.variable(t0, { shape: [20, 4] });
    const eagerW = hb.variable(w0, { shape: [4, 1] });
    const embedded = hb.variable(new Float32Array(batchSize * 4), { shape: [batchSize, 4] });
    const gradGraph = new Graph(new VariableStore(), 'train', 'cpu');
    const referenceLoss = head(gradGraph.variableTensor(embedded), gradGraph.variableTensor(eagerW));
    const grads = gradients(referenceLoss);
    const dW = grads.find((g) => g.variable === eagerW)?.dense as SymbolicTensor;
    const dEmb = grads.find((g) => g.variable === embedded)?.dense as SymbolicTensor;
    const gradStep = new CompiledStep(gradGraph, [referenceLoss, dW, dEmb]);
    const eagerOpt = make();

    const batch = { features: { emb: ids }, labels: new Float32Array(batchSize) };
    for (let step = 0; step < 3; step++) {
      await embedded.assign(await hb.nn.embeddingLookupSparse(eagerTable, ids, { combiner: 'mean' }));
      const g = await gradStep.run(await gradStep.prepare(batch));
      for (const path of paths) {
        const out = await path.step.run(await path.step.prepare(batch));
        expect((out.outputs[0] as Float32Array)[0]).toBe((g.outputs[0] as Float32Array)[0]);
      }
      const tableGrad = await hb.nn.embeddingLookupSparseGrad(eagerTable, ids, hb.tensor(g.outputs[2] as Float32Array, [batchSize, 4]), { combiner: 'mean' });
      await eagerOpt.applyGradients([
        [hb.tensor(g.outputs[1] as Float32Array, [4, 1]), eagerW],
        [tableGrad, eagerTable],
      ]);
    }
    for (const path of paths) {
      for (const [a, b] of [[path.table, eagerTable], [path.w, eagerW]] as const) {
        const x = (await a.data()) as Float32Array;
        const y = (await b.data()) as Float32Array;
        expect(Buffer.from(x.buffer).equals(Buffer.from(y.buffer))).toBe(true);
      }
    }
    // The table moved, and only in the rows the ids touched (Adam's non-lazy rule decays
    // every row's moments, but rows never seen have zero moments and stay put).
    const after = (await paths[0].table.data()) as Float32Array;
    const untouched = [2, 4, 5, 6, 8, 18];
    const changed = untouched.some((r) => after.slice(r * 4, r * 4 + 4).some((v, j) => v !== t0[r * 4 + j]));
    expect(changed).toBe(false);
    expect(after.slice(4, 8).some((v, j) => v !== t0[4 + j])).toBe(true);
  });
});

describe('crossNetwork', () => {
  test('one layer computes x0 * (x w) + b + x, and its variables train', async () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const random = randomSource(5);
    const input = Float32Array.from({ length: 3 * 4 }, () => random() - 0.5);
    const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 4], build: () => input });
    const y = await withGraph(graph, () => hb.layers.crossNetwork(x, 1, { name: 'cross' }));
    const w = graph.store.variables.get('cross/kernel_0') as hb.Variable;
    const step = new CompiledStep(graph, [y]);
    const out = (await step.run(await step.prepare({ features: { x: hb.tensor(input, [3, 4]) } }))).outputs[0] as Float32Array;
    const wv = (await w.data()) as Float32Array;
    for (let r = 0; r < 3; r++) {
      const row = input.slice(r * 4, r * 4 + 4);
      const dot = row.reduce((a, v, j) => a + v * wv[j], 0);
      for (let j = 0; j < 4; j++) expect(out[r * 4 + j]).toBeCloseTo(row[j] * dot + 0 + row[j], 5);
    }
    const loss = m.reduceSum(m.square(y));
    const names = gradients(loss).map((g) => g.variable.name).sort();
    expect(names).toEqual(['cross/bias_0', 'cross/kernel_0']);
  });
});

describe("dense layers: each bias add and activation fused, forward and backward", () => {
  const init = (seed: number, limit: number) => hb.initializers.randomUniform({ minval: -limit, maxval: limit, seed });
  const random = randomSource(11);
  const xs = Float32Array.from({ length: 6 * 5 }, () => random() - 0.5);
  const batch = { features: { x: hb.tensor(xs, [6, 5]) } };

  async function trainBoth(model: (x: SymbolicTensor) => SymbolicTensor) {
    const paths = [];
    for (const fuse of [true, false]) {
      const graph = new Graph(new VariableStore(), 'train', 'cpu');
      const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 5], build: () => xs });
      const loss = await withGraph(graph, () => model(x));
      const trainOp = new hb.train.AdagradOptimizer({ learningRate: 0.2 }).minimize(loss);
      paths.push({ graph, step: new CompiledStep(graph, [loss], trainOp.nodes, { fuse }) });
    }
    const losses: number[][] = [[], []];
    for (let s = 0; s < 3; s++) {
      for (const [i, path] of paths.entries()) {
        const out = await path.step.run(await path.step.prepare(batch));
        losses[i].push((out.outputs[0] as Float32Array)[0]);
      }
    }
    // The same bits: every loss and every variable after the updates.
    expect(losses[0]).toEqual(losses[1]);
    expect(losses[0][2]).toBeLessThan(losses[0][0]);
    for (const [name, v] of paths[0].graph.store.variables) {
      const other = paths[1].graph.store.variables.get(name) as hb.Variable;
      const a = (await v.data()) as Float32Array;
      const b = (await other.data()) as Float32Array;
      expect(Buffer.from(a.buffer).equals(Buffer.from(b.buffer))).toBe(true);
    }
    return paths[0].step;
  }

  test('relu, tanh and sigmoid layers (one wider than a column block) train bit for bit as unfused', async () => {
    const step = await trainBoth((x) => {
      let h = hb.layers.dense(x, 7, { activation: 'relu', kernelInitializer: init(1, 1), biasInitializer: init(2, 0.5), name: 'l1' });
      h = hb.layers.dense(h, 300, { activation: 'tanh', kernelInitializer: init(3, 0.3), biasInitializer: init(4, 0.5), name: 'l2' });
      h = hb.layers.dense(h, 3, { activation: 'sigmoid', kernelInitializer: init(5, 0.1), biasInitializer: init(6, 0.5), name: 'l3' });
      h = hb.layers.dense(h, 1, { kernelInitializer: init(7, 1), name: 'out' });
      return m.reduceMean(m.square(m.addConstant(h, -0.5)));
    });
    const fused = step.compiled.fused;
    // Each layer's product is read by its bias add alone: product, bias and activation in one kernel.
    expect(fused.filter((f) => f.includes('bias_') && !f.startsWith('activation_grad_bias'))).toEqual([
      'matmul_bias_relu: relu', 'matmul_bias_tanh: tanh', 'matmul_bias_sigmoid: sigmoid',
    ]);
    // The three layers' dy come from the matmuls of the layers above (their dX): fused with
    // them. The loss's square with the output's bias has its dy from the loss.
    expect(fused.filter((f) => f.startsWith('matmul_activation_grad_bias: '))).toHaveLength(3);
    expect(fused.filter((f) => f.startsWith('activation_grad_bias: '))).toHaveLength(1);
    const kernels = step.compiled.spec.steps.map((s) => s.kernel);
    expect(kernels.filter((k) => k === 'matmul_bias_activation')).toHaveLength(3);
    expect(kernels.filter((k) => k === 'matmul_activation_grad_bias')).toHaveLength(3);
    expect(kernels).not.toContain('bias_activation');
    expect(kernels).not.toContain('unary_grad');
  });

  test('a bias added first keeps its add (its NaN payload would differ), and trains the same', async () => {
    const step = await trainBoth((x) => {
      const store = x.graph.store;
      const w = x.graph.variableTensor(store.getOrCreate('swapped/kernel', [5, 4], init(10, 1), true, x.graph.device));
      const b = x.graph.variableTensor(store.getOrCreate('swapped/bias', [4], init(11, 0.5), true, x.graph.device));
      return m.reduceMean(m.square(relu(m.add(b, m.matmul(x, w)))));
    });
    expect(step.compiled.fused.some((f) => f.startsWith('bias_'))).toBe(false);
    expect(step.compiled.fused).toContainEqual(expect.stringMatching(/^activation_grad_bias: /));
  });

  test('a sum the step fetches is not computed twice', () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 5], build: () => xs });
    const w = graph.variableTensor(graph.store.getOrCreate('f/kernel', [5, 4], init(12, 1), true, 'cpu'));
    const b = graph.variableTensor(graph.store.getOrCreate('f/bias', [4], init(13, 0.5), true, 'cpu'));
    const product = m.matmul(x, w);
    const sum = m.add(product, b);
    const kept = new CompiledStep(graph, [relu(sum), sum]);
    expect(kept.compiled.fused).toEqual([]);
    const fusedAlone = new CompiledStep(graph, [relu(sum)]);
    expect(fusedAlone.compiled.fused).toEqual([expect.stringMatching(/^matmul_bias_relu: /)]);
    // A product the step fetches keeps its matmul; the bias add and activation still fuse.
    const productKept = new CompiledStep(graph, [relu(sum), product]);
    expect(productKept.compiled.fused).toEqual([expect.stringMatching(/^bias_relu: /)]);
    expect(productKept.compiled.spec.steps.map((s) => s.kernel)).toEqual(expect.arrayContaining(['matmul', 'bias_activation']));
  });

  test('a sum read elsewhere too keeps its add and activation (nothing computed twice)', async () => {
    const step = await trainBoth((x) => {
      const w = hb.layers.dense(x, 4, { kernelInitializer: init(8, 1), biasInitializer: init(9, 0.5), name: 'pre' });
      return m.add(m.reduceMean(m.square(relu(w))), m.reduceMean(w));
    });
    // Nor does the backward fuse: the sum's gradient adds up two paths before its bias's.
    expect(step.compiled.fused).toEqual([]);
    expect(step.compiled.spec.steps.map((s) => s.kernel)).toEqual(expect.arrayContaining(['binary', 'unary']));
  });
});
