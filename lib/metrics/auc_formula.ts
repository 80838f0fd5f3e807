// TensorFlow 1.15's tf.metrics.auc: the thresholds and the area from confusion counts
// (metrics_impl.py: _confusion_matrix_at_thresholds and compute_auc), in float32.

const f = Math.fround;

/** [-1e-7, 1/(n-1), ..., (n-2)/(n-1), 1 + 1e-7] as float32, TF's thresholds. */
export function aucThresholds(numThresholds: number): Float32Array {
  const kEpsilon = 1e-7;
  const t = new Float32Array(numThresholds);
  t[0] = 0.0 - kEpsilon;
  for (let i = 0; i < numThresholds - 2; i++) t[i + 1] = ((i + 1) * 1.0) / (numThresholds - 1);
  t[numThresholds - 1] = 1.0 + kEpsilon;
  return t;
}

export type AucCurve = 'ROC' | 'PR';
export type AucSummation = 'trapezoidal' | 'minoring' | 'majoring' | 'careful_interpolation';

/** The area under the curve from per-threshold tp, fn, tn, fp (float32 math, as TF). */
export function aucFromCounts(tp: Float32Array, fn: Float32Array, tn: Float32Array, fp: Float32Array, curve: AucCurve, summation: AucSummation): number {
  const epsilon = f(1e-6);
  const n = tp.length;
  if (curve === 'PR' && summation === 'careful_interpolation') return interpolatePrAuc(tp, fp, fn);
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const rec = f(f(tp[i] + epsilon) / f(f(tp[i] + fn[i]) + epsilon));
    if (curve === 'ROC') {
      x[i] = f(fp[i] / f(f(fp[i] + tn[i]) + epsilon));
      y[i] = rec;
    } else {
      x[i] = rec;
      y[i] = f(f(tp[i] + epsilon) / f(f(tp[i] + fp[i]) + epsilon));
    }
  }
  let area = 0;
  for (let i = 0; i < n - 1; i++) {
    const width = f(x[i] - x[i + 1]);
    let height: number;
    // ROC under careful_interpolation is the trapezoid, as TF's compute_auc takes it.
    if (summation === 'trapezoidal' || summation === 'careful_interpolation') height = f(f(y[i] + y[i + 1]) / 2);
    else if (summation === 'minoring') height = Math.min(y[i], y[i + 1]);
    else height = Math.max(y[i], y[i + 1]);
    area = f(area + f(width * height));
  }
  return area;
}

/**
 * TF's interpolate_pr_auc (Davis & Goadrich): precision interpolated between thresholds
 * as a function of the true positives, integrated exactly.
 */
function interpolatePrAuc(tp: Float32Array, fp: Float32Array, fn: Float32Array): number {
  const divNoNan = (a: number, b: number) => (b === 0 ? 0 : f(a / b));
  let area = 0;
  for (let i = 0; i < tp.length - 1; i++) {
    const dtp = f(tp[i] - tp[i + 1]);
    const p0 = f(tp[i] + fp[i]);
    const p1 = f(tp[i + 1] + fp[i + 1]);
    const precSlope = divNoNan(dtp, Math.max(f(p0 - p1), 0));
    const intercept = f(tp[i + 1] - f(precSlope * p1));
    const ratio = p0 > 0 && p1 > 0 ? divNoNan(p0, Math.max(p1, 0)) : 1;
    const increment = divNoNan(f(precSlope * f(dtp + f(intercept * f(Math.log(ratio))))), Math.max(f(tp[i + 1] + fn[i + 1]), 0));
    area = f(area + increment);
  }
  return area;
}
