// optimizer.minimize inside a compiled step (fused lookup backward + sparse update for
// the table, dense rule for the layer, one native call) against the eager path users can
// also take: the same gradients through embeddingLookupSparseGrad and applyGradients,
// whose rules are tested against TF's in optimizers.test.ts. Bit-identical over 3 steps.
import * as hb from '../lib';
import { gradients } from '../lib/graph/autodiff';
import { CompiledStep } from '../lib/graph/compiled_step';
import { Graph, SymbolicTensor, VariableStore, withGraph } from '../lib/graph/graph';
import { placeholder } from '../lib/graph/ops/sources';
import { embeddingLookupNode } from '../lib/graph/ops/embedding';
import { randomSource } from './support/reference';
import { pinDevice } from './support/devices';

// Checked against CPU references bit for bit / at CPU tolerances; test/cuda_plan.test.ts
// checks the CUDA kernels against these.
pinDevice('cpu');

const m = hb.math;
const ids = hb.ragged(BigInt64Array.from([1n, 3n, 3n, 7n, 0n, 19n, 3n]), Int32Array.from([0, 2, 4, 4, 7]));
const batchSize = 4;

function model(graph: Graph, table: hb.Variable, w: hb.Variable): { loss: SymbolicTensor } {
  const emb = embeddingLookupNode(graph, table, () => ids, { name: 'emb', combiner: 'mean', weighted: false });
  const loss = m.reduceMean(m.square(m.addConstant(m.matmul(emb, graph.variableTensor(w)), -0.5)));
  return { loss };
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
    const fusedTable = hb.variable(t0, { shape: [20, 4] });
    const fusedW = hb.variable(w0, { shape: [4, 1] });
    const eagerTable = hb.variable(t0, { shape: [20, 4] });
    const eagerW = hb.variable(w0, { shape: [4, 1] });

    const fusedGraph = new Graph(new VariableStore());
    const { loss } = model(fusedGraph, fusedTable, fusedW);
    const fusedOpt = make();
    const trainOp = fusedOpt.minimize(loss);
    const fused = new CompiledStep(fusedGraph, [loss], trainOp.nodes);

    const gradGraph = new Graph(new VariableStore());
    const reference = model(gradGraph, eagerTable, eagerW);
    const grads = gradients(reference.loss);
    const dW = grads.find((g) => g.variable === eagerW)?.dense as SymbolicTensor;
    const dEmb = grads.find((g) => g.variable === eagerTable)?.sparse?.grads[0] as SymbolicTensor;
    const gradStep = new CompiledStep(gradGraph, [reference.loss, dW, dEmb]);
    const eagerOpt = make();

    const batch = { features: { emb: ids }, labels: new Float32Array(batchSize) };
    for (let step = 0; step < 3; step++) {
      const fusedOut = await fused.run(await fused.prepare(batch));
      const g = await gradStep.run(await gradStep.prepare(batch));
      expect((fusedOut.outputs[0] as Float32Array)[0]).toBe((g.outputs[0] as Float32Array)[0]);
      const tableGrad = await hb.nn.embeddingLookupSparseGrad(eagerTable, ids, hb.tensor(g.outputs[2] as Float32Array, [batchSize, 4]), { combiner: 'mean' });
      await eagerOpt.applyGradients([
        [hb.tensor(g.outputs[1] as Float32Array, [4, 1]), eagerW],
        [tableGrad, eagerTable],
      ]);
    }
    for (const [a, b] of [[fusedTable, eagerTable], [fusedW, eagerW]] as const) {
      const x = (await a.data()) as Float32Array;
      const y = (await b.data()) as Float32Array;
      expect(Buffer.from(x.buffer).equals(Buffer.from(y.buffer))).toBe(true);
    }
    // The table moved, and only in the rows the ids touched (Adam's non-lazy rule decays
    // every row's moments, but rows never seen have zero moments and stay put).
    const after = (await fusedTable.data()) as Float32Array;
    const untouched = [2, 4, 5, 6, 8, 18];
    const changed = untouched.some((r) => after.slice(r * 4, r * 4 + 4).some((v, j) => v !== t0[r * 4 + j]));
    expect(changed).toBe(false);
    expect(after.slice(4, 8).some((v, j) => v !== t0[4 + j])).toBe(true);
  });
});

describe('crossNetwork', () => {
  test('one layer computes x0 * (x w) + b + x, and its variables train', async () => {
    const graph = new Graph(new VariableStore());
    const random = randomSource(5);
    const input = Float32Array.from({ length: 3 * 4 }, () => random() - 0.5);
    const x = placeholder(graph, [-1, 4], { name: 'x', build: () => input });
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
