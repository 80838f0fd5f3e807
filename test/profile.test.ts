// hb.profile: where a training run's time goes, by phase and kernel.
import * as hb from '../lib';
import { dataset, numDense, tables, TRAIN } from './support/planted_data';

const fc = hb.featureColumn;
const { ModeKeys } = hb.estimator;

function estimator() {
  const dense = Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`));
  const sparse = tables.map((t) => fc.embeddingColumn(fc.categoricalColumnWithIdentity(t.name, t.vocabularySize), 8));
  return new hb.estimator.Estimator({
    modelFn: (features, labels, mode) => {
      const x = hb.math.concat([fc.DenseFeatures(dense)(features), fc.DenseFeatures(sparse)(features)], 1);
      const h = hb.layers.dense(x, 16, { activation: hb.nn.relu });
      const logits = hb.layers.dense(h, 1);
      if (mode === ModeKeys.PREDICT) return hb.estimator.EstimatorSpec({ mode, predictions: { logits } });
      const loss = hb.losses.sigmoidCrossEntropy(labels as hb.SymbolicTensor, logits);
      return hb.estimator.EstimatorSpec({ mode, loss, trainOp: new hb.train.AdagradOptimizer({ learningRate: 0.1 }).minimize(loss) });
    },
  });
}

describe('hb.profile', () => {
  test('reports each phase of the training steps, with the kernels in them', async () => {
    const est = estimator();
    await est.train(dataset(512, TRAIN, 128), { steps: 1 }); // compiled and warm before profiling
    const report = await hb.profile(() => est.train(dataset(1024, TRAIN, 128), { steps: 6 }));
    expect(report.planRuns).toBe(6);
    const byKernel = (kernel: string, phase: string) => report.kernels.find((k) => k.kernel === kernel && k.phase === phase);
    // Forward and backward matmuls (the relu layer's with its bias and activation), the
    // sparse tables' update (fused with their backward), the dense updates.
    expect(byKernel('matmul_bias_activation', 'forward')?.calls).toBe(6);
    expect(byKernel('matmul', 'forward')?.calls).toBe(6);
    expect(byKernel('matmul', 'backward')?.calls).toBeGreaterThanOrEqual(2 * 6);
    expect(byKernel('dense_apply', 'update')?.calls).toBe(4 * 6); // two kernels, two biases
    expect(report.kernels.some((k) => k.phase === 'update' && /lookup_backward_apply|sparse_apply/.test(k.kernel))).toBe(true);
    expect(report.phases.exchange).toBe(0); // one process
    for (const phase of ['forward', 'backward', 'update'] as const) expect(report.phases[phase]).toBeGreaterThan(0);
    const kernelMs = report.kernels.reduce((sum, k) => sum + k.ms, 0);
    expect(kernelMs).toBeCloseTo(report.phases.forward + report.phases.backward + report.phases.update, 6);
    // The two tables' lookups run side by side on the CPU, as do their backward and
    // update steps: their times overlap. The other steps run one after another.
    const threads = hb.backend().threads;
    const sideBySide = hb.currentDevice() === 'cpu' && threads > 1;
    for (const kernel of ['embedding_lookup', 'lookup_backward_apply']) {
      const k = report.kernels.find((x) => x.kernel === kernel);
      expect([kernel, k?.calls, k?.besideOthers]).toEqual([kernel, 2 * 6, sideBySide ? 2 * 6 : 0]);
    }
    const alone = report.kernels.filter((k) => k.besideOthers === 0);
    expect(alone.length + (sideBySide ? 2 : 0)).toBe(report.kernels.length);
    expect(alone.reduce((sum, k) => sum + k.ms, 0)).toBeLessThanOrEqual(report.planMs);
    expect(kernelMs).toBeLessThanOrEqual(report.planMs * threads);
    expect(report.planMs).toBeLessThanOrEqual(report.wallMs);
    expect(report.outsidePlansMs).toBeCloseTo(report.wallMs - report.planMs, 6);
    // Most time first.
    for (let i = 1; i < report.kernels.length; i++) expect(report.kernels[i].ms).toBeLessThanOrEqual(report.kernels[i - 1].ms);
  });

  test('returns what the function returned, and records nothing after it', async () => {
    const est = estimator();
    await est.train(dataset(256, TRAIN, 128), { steps: 1 });
    const report = await hb.profile(async () => 42);
    expect(report.result).toBe(42);
    expect(report.planRuns).toBe(0);
    expect(report.kernels).toEqual([]);
    const again = await hb.profile(() => est.train(dataset(256, TRAIN, 128), { steps: 2 }));
    expect(again.planRuns).toBe(2);
  });

  test('a failing function rejects with its error and ends the profile; profiles do not nest', async () => {
    await expect(hb.profile(async () => {
      throw new Error('input broke');
    })).rejects.toThrow('input broke');
    // Ended: a new one starts.
    await expect(hb.profile(() => hb.profile(() => 1))).rejects.toThrow(/a profile is already running/);
    await expect(hb.profile(() => 1)).resolves.toMatchObject({ result: 1 });
    await expect(hb.profile(42 as never)).rejects.toThrow(/profile: expected a function/);
  });
});
