// One source of truth for ops and kernels: the addon's kernel table (names, dtypes,
// attrs, enum values) and the TypeScript op table agree; a plan is plain data that
// survives JSON; a new op needs only its own definition; an addon built from other
// sources is refused with an Error saying what to do.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { gradients } from '../lib/graph/autodiff';
import { compileGraph } from '../lib/graph/compile';
import { CompiledStep } from '../lib/graph/compiled_step';
import { Graph, SymbolicTensor, VariableStore } from '../lib/graph/graph';
import { kernelDef, kernelRegistry } from '../lib/graph/kernels';
import { defineFusion } from '../lib/graph/fusion';
import { allOps, applyOp, defineOp } from '../lib/graph/op_registry';
import { placeholder } from '../lib/graph/ops/sources';
import { KERNEL_REGISTRY_VERSION, native } from '../lib/native';
import { pinDevice } from './support/devices';

pinDevice('cpu');

const distIndex = path.resolve(__dirname, '../dist/index.js');

// Kernels no graph op emits: eager entry points tests and users call through kernelRun.
const EAGER_ONLY: Record<string, string> = {
  copy: 'a contiguous copy, for reshapes that need their own memory',
  matmul_accumulate: 'C += A B, for gradient sums into one buffer',
  reshard_rows: "a saved shard's rows into this rank's shard, when a checkpoint is restored at another world size",
};

describe('the addon kernel table and the TypeScript op table', () => {
  test('every kernel an op lowers to is in the addon, and every addon kernel has a user', () => {
    const registry = kernelRegistry();
    expect(registry.version).toBe(KERNEL_REGISTRY_VERSION);
    const inAddon = new Set(registry.kernels.map((k) => k.name));
    const used = new Set<string>();
    for (const op of allOps()) {
      for (const kernel of op.kernels) {
        expect({ op: op.name, kernel, inAddon: inAddon.has(kernel) }).toEqual({ op: op.name, kernel, inAddon: true });
        used.add(kernel);
      }
    }
    const unused = [...inAddon].filter((k) => !used.has(k) && !(k in EAGER_ONLY));
    expect(unused).toEqual([]);
  });

  test("ops' flags agree with their kernels': updates are stateful effects, sources lower to no kernel", () => {
    for (const op of allOps()) {
      const stateful = op.kernels.some((k) => kernelDef(k).stateful);
      expect({ op: op.name, stateful: Boolean(op.stateful) }).toEqual({ op: op.name, stateful });
      if (op.stateful) expect({ op: op.name, effect: op.effect }).toEqual({ op: op.name, effect: true });
      if (op.source) expect({ op: op.name, kernels: op.kernels }).toEqual({ op: op.name, kernels: [] });
    }
  });

  test('enum values come from the addon: the ops TypeScript names are the kernels\' names', () => {
    const values = (kernel: string, attr: string) => kernelDef(kernel).attrs.find((a) => a.name === attr)?.values ?? [];
    for (const op of ['add', 'sub', 'mul', 'div', 'squaredDifference', 'equal', 'greater']) expect(values('binary', 'op')).toContain(op);
    for (const op of ['relu', 'sigmoid', 'tanh', 'neg', 'scale', 'exp', 'log', 'square', 'sqrt', 'addConstant']) expect(values('unary', 'op')).toContain(op);
    for (const kernel of ['embedding_lookup', 'prune_ids', 'segment_combine']) expect(values(kernel, 'combiner')).toEqual(['sum', 'mean', 'sqrtn']);
    expect(kernelRegistry().optimizerRules).toEqual(['gradientDescent', 'momentum', 'adagrad', 'adam', 'ftrl', 'rowwiseAdagrad']);
  });

  test('a step that does not fit its kernel fails when compiled, naming the op', () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const ids = placeholder(graph, { name: 'ids', dtype: 'int64', shape: [-2], build: () => new BigInt64Array(0) });
    const badOp = defineOp({ name: 'test_float_kernel_on_ids', kernel: 'unary', shape: ([x]) => x.shape });
    const y = applyOp(badOp, [ids], { op: 'neg' }, 'negate_ids');
    expect(() => new CompiledStep(graph, [y])).toThrow(/negate_ids: kernel unary input 0 \(x\) must be float32, got int64/);
    const missing = defineOp({ name: 'test_missing_kernel', kernel: 'no_such_kernel', shape: ([x]) => x.shape });
    const z = applyOp(missing, [ids], {}, 'nothing');
    expect(() => compileGraph(graph, [z])).toThrow(/the addon has no kernel named 'no_such_kernel'/);
  });
});

describe('a new op through the registry only', () => {
  // softsign-like toy op, x / (1 + x^2), built in this file alone: its shape, its
  // gradient and its lowering to registered kernels. Nothing in the compiler, autodiff or
  // the addon knows it.
  const toyGradDef = defineOp({
    name: 'test_toy_grad',
    kernels: ['binary', 'unary'],
    shape: ([dy]) => dy.shape,
    // d/dx x / (1 + x^2) = (1 - x^2) / (1 + x^2)^2
    lower: (node, ctx) => {
      const [dy, x] = node.inputs.map((t) => ctx.value(t));
      const out = ctx.value(node.output!);
      const scratch = [0, 1, 2].map(() => ctx.temp(node.inputs[0]));
      ctx.kernel('unary', [x], [scratch[0]], { op: 'square' });
      ctx.kernel('unary', [scratch[0]], [scratch[1]], { op: 'addConstant', c: 1 });
      ctx.kernel('unary', [scratch[0]], [scratch[2]], { op: 'neg' });
      ctx.kernel('unary', [scratch[2]], [scratch[0]], { op: 'addConstant', c: 1 });
      ctx.kernel('binary', [scratch[0], scratch[1]], [scratch[2]], { op: 'div' });
      ctx.kernel('binary', [scratch[2], scratch[1]], [scratch[0]], { op: 'div' });
      ctx.kernel('binary', [dy, scratch[0]], [out], { op: 'mul' });
    },
  });
  const toyDef = defineOp({
    name: 'test_toy',
    kernels: ['unary', 'binary'],
    shape: ([x]) => x.shape,
    grad: (node, dy) => [applyOp(toyGradDef, [dy, node.inputs[0]], {})],
    lower: (node, ctx) => {
      const x = ctx.value(node.inputs[0]);
      const out = ctx.value(node.output!);
      const denominator = ctx.temp(node.inputs[0]);
      ctx.kernel('unary', [x], [denominator], { op: 'square' });
      ctx.kernel('unary', [denominator], [denominator], { op: 'addConstant', c: 1 });
      ctx.kernel('binary', [x, denominator], [out], { op: 'div' });
    },
  });

  test('forward and gradient through a compiled plan', async () => {
    const values = Float32Array.from([-2, -0.5, 0, 0.5, 3, 10]);
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const w = hb.variable(values, { shape: [6] });
    const y = applyOp(toyDef, [graph.variableTensor(w)]);
    const loss = hb.math.reduceSum(y);
    const [grad] = gradients(loss);
    const step = new CompiledStep(graph, [y, grad.dense as SymbolicTensor]);
    const out = await step.run(await step.prepare({ features: { x: new Float32Array(1) } }));
    const f = Math.fround;
    const forward = Array.from(values, (x) => f(x / f(f(x * x) + 1)));
    const backward = Array.from(values, (x) => {
      const x2 = f(x * x);
      const d = f(x2 + 1);
      return f(f(f(1 - x2) / d) / d);
    });
    expect(Array.from(out.outputs[0] as Float32Array)).toEqual(forward);
    expect(Array.from(out.outputs[1] as Float32Array)).toEqual(backward);
  });
});

describe('flags the compiler reads', () => {
  // Three ops in a row, and a fusion rule that replaces the last with one op reading the
  // first's input: it applies, unless the middle op is collective (every worker must run
  // an exchange, so no fusion may absorb one).
  const first = defineOp({ name: 'test_fuse_first', kernel: 'unary', shape: ([x]) => x.shape });
  const middle = defineOp({ name: 'test_fuse_middle', kernel: 'unary', shape: ([x]) => x.shape });
  const exchange = defineOp({ name: 'test_fuse_exchange', kernel: 'unary', collective: true, shape: ([x]) => x.shape });
  const last = defineOp({ name: 'test_fuse_last', kernel: 'unary', shape: ([x]) => x.shape });
  const fusedDef = defineOp({ name: 'test_fuse_fused', kernel: 'unary', shape: ([x]) => x.shape });
  defineFusion({
    name: 'test_three_negations',
    root: 'test_fuse_last',
    fuse(node, ctx) {
      const between = ctx.producer(node.inputs[0]);
      const head = ctx.producer(between.inputs[0]);
      if (head.op !== 'test_fuse_first') return undefined;
      return ctx.graph.addNode('test_fuse_fused', [head.inputs[0]], { op: 'neg' }, [{ shape: node.output!.shape, dtype: 'float32' }], node.name);
    },
  });
  test.each([[middle, ['test_three_negations: y']], [exchange, []]] as const)('a fusion over %p', (between, applied) => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1], build: () => new Float32Array(0) });
    const y = applyOp(last, [applyOp(between, [applyOp(first, [x], { op: 'neg' })], { op: 'neg' })], { op: 'neg' }, 'y');
    expect(compileGraph(graph, [y]).fused).toEqual(applied);
    void fusedDef;
  });
});

describe('PlanSpec', () => {
  test('is plain data: a plan made from its JSON computes the same', async () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const x = placeholder(graph, { name: 'x', dtype: 'float32', shape: [-1, 3], build: (b) => b.features.x as Float32Array });
    const w = graph.variableTensor(hb.variable([[1, 2], [3, 4], [5, 6]], { name: 'w' }));
    const y = hb.nn.sigmoid(hb.math.matmul(x, w));
    const compiled = compileGraph(graph, [y]);
    const json = JSON.stringify(compiled.spec);
    expect(JSON.parse(json)).toEqual(compiled.spec);
    expect(compiled.spec.params).toEqual([{ name: 'w', dtype: 'float32', shape: [3, 2] }]);
    const feed = Float32Array.from([0.1, -0.2, 0.3, 1, 0, -1]);
    const run = (spec: unknown) => native.planRun(native.planCreate(spec as never, compiled.params), 2, [feed], [], compiled.fetch);
    const a = await run(compiled.spec);
    const b = await run(JSON.parse(json));
    expect(Array.from(b.outputs[0] as Float32Array)).toEqual(Array.from(a.outputs[0] as Float32Array));
  });

  test('a parameter that does not match its description is refused by name', () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const w = graph.variableTensor(hb.variable([[1, 2]], { name: 'plan_param_w' }));
    const compiled = compileGraph(graph, [hb.math.reduceSum(w)]);
    const wrong = hb.variable([[1, 2, 3]]).handle;
    expect(() => native.planCreate(compiled.spec, [wrong])).toThrow(/parameter 'plan_param_w' must be float32 \[1, 2\], got float32 \[1, 3\]/);
  });
});

describe('an addon built from other sources', () => {
  test('is refused when hb-ts loads, with how to fix it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-stale-addon-'));
    try {
      const stale = path.join(dir, 'stale.js');
      fs.writeFileSync(stale, 'module.exports = { kernelRegistry: () => ({ version: 1, kernels: [] }) };\n');
      const old = path.join(dir, 'old.js');
      fs.writeFileSync(old, 'module.exports = {};\n');
      for (const [addon, said] of [[stale, 'version 1'], [old, 'version unknown \\(too old\\)']] as const) {
        const result = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(distIndex)})`], { encoding: 'utf8', env: { ...process.env, HB_ADDON: addon }, timeout: 30000 });
        expect(result.status).not.toBe(0);
        expect(result.stderr).toMatch(new RegExp(`the native addon speaks kernel registry ${said} but this hb-ts needs ${KERNEL_REGISTRY_VERSION}.*npm run build:addon`));
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
