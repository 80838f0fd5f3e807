// hb.metrics on concrete values against TensorFlow 1.15's metrics_test.py (AUCTest,
// MeanTest, AccuracyTest) and hand-worked confusion counts.
import * as hb from '../lib';
import { aucThresholds } from '../lib/metrics';

describe('hb.metrics.auc (TF 1.15 tf.metrics.auc)', () => {
  test('thresholds are TF\'s: -eps, i/(n-1), 1+eps in float32', () => {
    const t = aucThresholds(5);
    expect(Array.from(t)).toEqual([Math.fround(-1e-7), 0.25, 0.5, 0.75, Math.fround(1 + 1e-7)]);
  });
  test('testAllCorrect: 1', async () => {
    const x = [0, 1, 1, 0, 1, 0, 0, 1];
    expect(await hb.metrics.auc(x, x)).toBeCloseTo(1, 6);
  });
  test('testAllIncorrect: 0', async () => {
    const x = [0, 1, 1, 0, 1, 0, 0, 1];
    expect(await hb.metrics.auc(x, x.map((v) => 1 - v))).toBeCloseTo(0, 6);
  });
  test('testSomeCorrect: 0.5', async () => {
    expect(await hb.metrics.auc([0, 1, 1, 0], [1, 0, 1, 0])).toBeCloseTo(0.5, 6);
  });
  test('testWeighted1d: 0.5', async () => {
    expect(await hb.metrics.auc([0, 1, 1, 0], [1, 0, 1, 0], { weights: [2] })).toBeCloseTo(0.5, 5);
  });
  test('testWeighted2d: 0.7', async () => {
    expect(await hb.metrics.auc([0, 1, 1, 0], [1, 0, 1, 0], { weights: [1, 2, 3, 4] })).toBeCloseTo(0.7, 5);
  });
  test('testCorrectAUCPRSpecialCase: 0.79166', async () => {
    const v = await hb.metrics.auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], { curve: 'PR' });
    expect(Math.abs(v - 0.79166)).toBeLessThan(1e-3);
  });
  test('careful_interpolation PR special case: 1 - ln(1.5) / 2', async () => {
    const v = await hb.metrics.auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], { curve: 'PR', summationMethod: 'careful_interpolation' });
    expect(Math.abs(v - (1 - Math.log(1.5) / 2))).toBeLessThan(1e-6);
  });
  test('ROC under careful_interpolation is the trapezoidal area, as TF\'s compute_auc takes it', async () => {
    const labels = [0, 0, 1, 1, 0, 1];
    const predictions = [0.1, 0.4, 0.35, 0.8, 0.5, 0.5];
    const [trapezoidal, majoring, careful] = await Promise.all(
      (['trapezoidal', 'majoring', 'careful_interpolation'] as const).map((summationMethod) => hb.metrics.auc(labels, predictions, { summationMethod })),
    );
    expect(trapezoidal).toBeCloseTo(13 / 18, 5);
    expect(majoring).toBeGreaterThan(trapezoidal + 0.05);
    expect(careful).toBe(trapezoidal);
  });
  test('testThirdAUCPRSpecialCase: 0.90277', async () => {
    const v = await hb.metrics.auc([0, 0, 0, 0, 1, 1, 1], [0.0, 0.1, 0.2, 0.33, 0.3, 0.4, 0.5], { curve: 'PR' });
    expect(Math.abs(v - 0.90277)).toBeLessThan(1e-3);
  });
  test('testZeroTruePositivesAndFalseNegativesGivesOneAUC', async () => {
    expect(await hb.metrics.auc([0, 0, 0], [0, 0, 0])).toBeCloseTo(1, 6);
  });
  test('testRecallOneAndPrecisionOneGivesOnePRAUC', async () => {
    expect(await hb.metrics.auc([1, 1, 1], [1, 1, 1], { curve: 'PR' })).toBeCloseTo(1, 6);
  });
  test('a hand-worked ROC with 3 thresholds', async () => {
    // thresholds [-1e-7, 0.5, 1+1e-7]; labels [1, 0, 1, 0], predictions [0.9, 0.6, 0.4, 0.1]
    // t=-eps: tp 2, fn 0, tn 0, fp 2 -> tpr 1, fpr 1
    // t=0.5: predicted positive 0.9, 0.6 -> tp 1, fn 1, tn 1, fp 1 -> tpr ~0.5, fpr ~0.5
    // t=1+eps: tp 0, fn 2, tn 2, fp 0 -> tpr ~0 (eps / (2 + eps)), fpr 0
    // area = (1 - 0.5) * (1 + 0.5) / 2 + (0.5 - 0) * (0.5 + 0) / 2 = 0.375 + 0.125 = 0.5
    const v = await hb.metrics.auc([1, 0, 1, 0], [0.9, 0.6, 0.4, 0.1], { numThresholds: 3 });
    expect(v).toBeCloseTo(0.5, 5);
  });
  test('predictions outside [0, 1] are an Error naming the metric', async () => {
    await expect(hb.metrics.auc([0, 1], [0.5, 1.5], { name: 'ctr_auc' })).rejects.toThrow(/ctr_auc/);
  });
  test('mismatched lengths and bad options', async () => {
    await expect(hb.metrics.auc([0, 1, 1], [0.5, 0.2])).rejects.toThrow(/labels has 3 values but predictions has 2/);
    expect(() => hb.metrics.auc([0], [0], { numThresholds: 1 })).toThrow(/numThresholds/);
    expect(() => hb.metrics.auc([0], [0], { curve: 'XY' as never })).toThrow(/curve/);
  });
});

describe('hb.metrics.mean and accuracy', () => {
  test('mean, weighted mean (tf.metrics.mean)', async () => {
    expect(await hb.metrics.mean([1, 2, 3, 6])).toBeCloseTo(3, 6);
    // testWeighted1d-like: sum(v * w) / sum(w) = (1*1 + 3*0 + 5*2) / 3
    expect(await hb.metrics.mean([1, 3, 5], { weights: [1, 0, 2] })).toBeCloseTo(11 / 3, 5);
    expect(await hb.metrics.mean([], {})).toBe(0);
  });
  test('accuracy', async () => {
    expect(await hb.metrics.accuracy([1, 0, 1, 1], [1, 1, 1, 0])).toBeCloseTo(0.5, 6);
    expect(await hb.metrics.accuracy([1, 0, 1, 1], [1, 1, 1, 0], { weights: [1, 0, 1, 0] })).toBeCloseTo(1, 6);
  });
});
