// Every op's gradient rule against finite differences of its forward, through the
// compiled native plan (the same path a training step takes).
import * as hb from '../lib';
import { gradients } from '../lib/graph/autodiff';
import { CompiledStep } from '../lib/graph/compiled_step';
import { Graph, SymbolicTensor, VariableStore } from '../lib/graph/graph';
import { placeholder } from '../lib/graph/ops/sources';
import { randomSource } from './support/reference';
import { pinDevice } from './support/devices';

// Checked against CPU references bit for bit / at CPU tolerances; test/cuda_plan.test.ts
// checks the CUDA kernels against these.
pinDevice('cpu');

type Build = (g: Graph, vars: SymbolicTensor[], x: SymbolicTensor) => SymbolicTensor;

interface Case {
  name: string;
  shapes: number[][];
  /** Per-example width of the fed input x ([batch, width]). */
  inputWidth: number;
  build: Build;
  /** Variable values kept away from kinks (relu at 0). */
  positive?: boolean;
  tolerance?: number;
}

const batch = 3;

async function lossAndGrads(c: Case, values: Float32Array[], input: Float32Array): Promise<{ loss: number; grads: Float32Array[] }> {
  const graph = new Graph(new VariableStore(), 'train', 'cpu');
  const vars = values.map((v, i) => hb.variable(v, { shape: c.shapes[i], name: `${c.name}_v${i}` }));
  const symbolicVars = vars.map((v) => graph.variableTensor(v));
  const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, c.inputWidth], build: () => input });
  const loss = c.build(graph, symbolicVars, x);
  const grads = gradients(loss, vars);
  const byVar = vars.map((v) => grads.find((g) => g.variable === v)?.dense);
  const fetches = [loss, ...byVar.map((g) => g as SymbolicTensor)];
  const step = new CompiledStep(graph, fetches);
  const out = await step.run(await step.prepare({ features: { x: hb.tensor(input, [batch, c.inputWidth]) } }));
  return { loss: (out.outputs[0] as Float32Array)[0], grads: out.outputs.slice(1) as Float32Array[] };
}

async function lossOnly(c: Case, values: Float32Array[], input: Float32Array): Promise<number> {
  const graph = new Graph(new VariableStore(), 'train', 'cpu');
  const vars = values.map((v, i) => hb.variable(v, { shape: c.shapes[i] }));
  const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, c.inputWidth], build: () => input });
  const loss = c.build(graph, vars.map((v) => graph.variableTensor(v)), x);
  const step = new CompiledStep(graph, [loss]);
  const out = await step.run(await step.prepare({ features: { x: hb.tensor(input, [batch, c.inputWidth]) } }));
  return (out.outputs[0] as Float32Array)[0];
}

const m = hb.math;
const cases: Case[] = [
  { name: 'matmul', shapes: [[4, 2]], inputWidth: 4, build: (g, [w], x) => m.reduceSum(m.square(m.matmul(x, w))) },
  { name: 'matmul_transposed', shapes: [[2, 4]], inputWidth: 4, build: (g, [w], x) => m.reduceSum(m.square(m.matmul(x, w, { transposeB: true }))) },
  { name: 'matmul_ta', shapes: [[3, 4], [3, 2]], inputWidth: 4, build: (g, [a, b], x) => m.reduceSum(m.square(m.matmul(x, m.matmul(a, b, { transposeA: true })))) },
  { name: 'matmul_ta_tb', shapes: [[3, 4], [2, 3]], inputWidth: 4, build: (g, [a, b], x) => m.reduceSum(m.square(m.matmul(x, m.matmul(a, b, { transposeA: true, transposeB: true })))) },
  { name: 'bias_add_broadcast', shapes: [[4]], inputWidth: 4, build: (g, [b], x) => m.reduceSum(m.square(m.add(x, b))) },
  { name: 'column_broadcast_multiply', shapes: [[4, 1]], inputWidth: 4, build: (g, [w], x) => m.reduceSum(m.multiply(x, m.matmul(x, w))) },
  { name: 'subtract_divide', shapes: [[4], [4]], inputWidth: 4, positive: true, build: (g, [a, b], x) => m.reduceSum(m.divide(m.subtract(x, a), m.addConstant(b, 1))) },
  { name: 'relu_sigmoid_tanh', shapes: [[4, 3]], inputWidth: 4, build: (g, [w], x) => m.reduceSum(hb.nn.tanh(hb.nn.sigmoid(hb.nn.relu(m.matmul(x, w))))) },
  { name: 'exp_log_sqrt', shapes: [[4]], inputWidth: 4, positive: true, build: (g, [a], x) => m.reduceSum(m.log(m.addConstant(m.sqrt(m.exp(m.multiply(a, x))), 1))) },
  { name: 'concat_and_slices', shapes: [[4, 2], [4, 3]], inputWidth: 4, build: (g, [a, b], x) => m.reduceSum(m.square(m.concat([m.matmul(x, a), m.matmul(x, b)], 1))) },
  { name: 'reduce_mean_axis', shapes: [[4, 3]], inputWidth: 4, build: (g, [w], x) => m.reduceSum(m.square(m.reduceMean(m.matmul(x, w), 1))) },
  { name: 'reduce_mean_batch_axis', shapes: [[4, 3]], inputWidth: 4, build: (g, [w], x) => m.reduceSum(m.square(m.reduceMean(m.matmul(x, w), 0))) },
  { name: 'reduce_mean_batch_and_axis_keepdims', shapes: [[4, 6]], inputWidth: 4, build: (g, [w], x) => m.reduceSum(m.square(m.reduceMean(m.reshape(m.matmul(x, w), [-1, 3, 2]), [0, 2], true))) },
  { name: 'reduce_sum_keepdims', shapes: [[4, 3]], inputWidth: 4, build: (g, [w], x) => m.reduceMean(m.multiply(m.matmul(x, w), m.reduceSum(m.matmul(x, w), 1, true))) },
  { name: 'squared_difference_mse', shapes: [[4, 1]], inputWidth: 4, build: (g, [w], x) => hb.losses.meanSquaredError(m.reduceSum(x, 1, true), m.matmul(x, w)) },
  { name: 'sigmoid_cross_entropy', shapes: [[4, 1]], inputWidth: 4, build: (g, [w], x) => hb.losses.sigmoidCrossEntropy(hb.nn.sigmoid(m.reduceSum(x, 1, true)), m.matmul(x, w)) },
  { name: 'dot_interaction', shapes: [[4, 3], [4, 3], [4, 3]], inputWidth: 4, build: (g, [a, b, c], x) => m.reduceSum(m.square(hb.layers.dotInteraction(m.matmul(x, a), [m.matmul(x, b), m.matmul(x, c)]))) },
];

describe('gradients through compiled plans', () => {
  test.each(cases)('$name matches finite differences', async (c) => {
    const random = randomSource(7);
    const values = c.shapes.map((s) => Float32Array.from({ length: s.reduce((a, b) => a * b, 1) }, () => (c.positive ? 0.2 + random() : random() * 2 - 1)));
    const input = Float32Array.from({ length: batch * c.inputWidth }, () => random() * 2 - 1);
    const { grads } = await lossAndGrads(c, values, input);
    const h = 1e-2;
    for (let v = 0; v < values.length; v++) {
      for (let i = 0; i < values[v].length; i++) {
        const plus = values.map((a) => a.slice());
        const minus = values.map((a) => a.slice());
        plus[v][i] += h;
        minus[v][i] -= h;
        const numeric = ((await lossOnly(c, plus, input)) - (await lossOnly(c, minus, input))) / (2 * h);
        const tol = (c.tolerance ?? 2e-2) * Math.max(1, Math.abs(numeric));
        expect(Math.abs(grads[v][i] - numeric)).toBeLessThanOrEqual(tol);
      }
    }
  });
});

describe('reduceMean over the batch axis', () => {
  test('alone or with other axes, kept or not: the means of the values fed, counted when the step runs', async () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    let input = new Float32Array();
    const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 4], build: () => input });
    const x3 = m.reshape(x, [-1, 2, 2]);
    const means = [m.reduceMean(x, 0), m.reduceMean(x, [0, 1], true), m.reduceMean(x3, [0, 2]), m.reduceMean(x3, [1, 0], true)];
    expect(means.map((t) => t.shape)).toEqual([[4], [1, 1], [2], [1, 1, 2]]);
    const step = new CompiledStep(graph, means);
    for (const rows of [3, 5]) {
      input = Float32Array.from({ length: rows * 4 }, (_, i) => ((i * 7) % 11) - 4.5);
      const out = (await step.run(await step.prepare({ features: { x: hb.tensor(input, [rows, 4]) } }))).outputs as Float32Array[];
      // x[b][c], and as [b][j][k] with c = 2j + k.
      const meanOf = (keep: (c: number) => boolean) => {
        let sum = 0;
        let n = 0;
        for (let b = 0; b < rows; b++) for (let c = 0; c < 4; c++) if (keep(c)) (sum += input[b * 4 + c]), n++;
        return sum / n;
      };
      const expected = [
        [0, 1, 2, 3].map((c) => meanOf((d) => d === c)),
        [meanOf(() => true)],
        [0, 1].map((j) => meanOf((c) => c >> 1 === j)),
        [0, 1].map((k) => meanOf((c) => (c & 1) === k)),
      ];
      out.forEach((values, i) => {
        expect(values.length).toBe(expected[i].length);
        expected[i].forEach((e, k) => expect(values[k]).toBeCloseTo(e, 5));
      });
    }
  });
});

describe('graph errors name the op', () => {
  test('matmul with mismatched inner dimensions', () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 4], build: () => new Float32Array() });
    const w = graph.variableTensor(hb.variable(new Float32Array(6), { shape: [3, 2] }));
    expect(() => m.matmul(x, w, { name: 'my_layer/MatMul' })).toThrow(/my_layer\/MatMul: inner dimensions differ/);
  });
  test('add of shapes that do not broadcast', () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 4], build: () => new Float32Array() });
    const b = graph.variableTensor(hb.variable(new Float32Array(3), { shape: [3] }));
    expect(() => m.add(x, b, 'bias_add')).toThrow(/bias_add: shapes \[batch, 4\] and \[3\] do not broadcast/);
  });
  test('dot interaction inputs that differ in the batch dimension', () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 4], build: () => new Float32Array() });
    const fixed = graph.variableTensor(hb.variable(new Float32Array(8), { shape: [2, 4] }));
    expect(() => hb.layers.dotInteraction(x, [x, fixed])).toThrow(/dot_interaction: every input must be \[batch, 4\] like the bottom MLP's output; input 2 is \[2, 4\]/);
  });
  test('ops outside a modelFn', () => {
    expect(() => hb.layers.dense(undefined as never, 3)).toThrow(/symbolic tensor/);
  });
  test('a feed of the wrong size is refused before the step runs', async () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 4], build: () => new Float32Array(7) });
    const step = new CompiledStep(graph, [m.reduceSum(x)]);
    await expect(step.run(await step.prepare({ features: { x: new Float32Array(8) } }))).rejects.toThrow(/feature 'x' has 7 values but 32 were expected/);
  });
});
