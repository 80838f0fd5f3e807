// Where a bench's training steps spend their time: a profiled run (hb.profile) printed as
// milliseconds per step by phase (forward / backward / update / exchange, and what is
// outside the compiled steps: JS, input, feature transforms) and the kernels that take
// the most. Run apart from the timed steps, since a profile times every kernel.
'use strict';
const { record } = require('./report');

/** Profiles `run` (which trains `steps` steps), prints the breakdown and returns the report. */
async function printStepBreakdown(hb, run, steps, { top = 8, indent = '  ' } = {}) {
  const report = await hb.profile(run);
  const perStep = (ms) => (ms / steps).toFixed(1);
  const phases = Object.entries(report.phases)
    .filter(([phase, ms]) => ms > 0 || phase === 'exchange')
    .map(([phase, ms]) => `${phase} ${perStep(ms)}`)
    .join(', ');
  console.log(`${indent}where a step's ${perStep(report.wallMs)} ms go (profiled run, ms/step): ${phases}, outside the compiled step ${perStep(report.outsidePlansMs)}`);
  const shown = report.kernels.slice(0, top).map((k) => `${k.kernel} (${k.phase}) ${perStep(k.ms)}`);
  console.log(`${indent}  top kernels: ${shown.join(', ')}`);
  return report;
}

// The kernels that run the model's GEMMs: matmul_bias_activation is a dense layer's
// forward, matmul_activation_grad_bias the GEMM that makes its activation's gradient (their
// times include the element-wise work they do on the product in cache, and the latter's
// bias gradient: the share is, if anything, understated).
const GEMM_KERNELS = ['matmul', 'matmul_accumulate', 'matmul_bias_activation', 'matmul_activation_grad_bias'];

/**
 * The profiled step's matmuls as GFLOP/s against the machine's FMA peak for the GEMM's
 * instruction set (`peak`: native.measureFmaPeak, taken before the bench allocates much:
 * after training, V8's background GC threads can hold a core), given one step's matmul FLOPs.
 */
function printGemmShare(peak, report, flopsPerStep, steps, workload) {
  const matmulMs = report.kernels.filter((k) => GEMM_KERNELS.includes(k.kernel)).reduce((sum, k) => sum + k.ms, 0);
  if (matmulMs <= 0) return;
  const achieved = (flopsPerStep * steps) / (matmulMs / 1e3) / 1e9;
  if (peak.gflops <= 0) {
    console.log(`  GEMMs inside the step: ${achieved.toFixed(1)} GFLOP/s (portable GEMM: no FMA peak)`);
    return;
  }
  console.log(`  GEMMs inside the step: ${achieved.toFixed(1)} GFLOP/s = ${((achieved / peak.gflops) * 100).toFixed(0)}% of the ${peak.isa} FMA peak (${peak.gflops.toFixed(0)} GFLOP/s on ${peak.threads} threads, measured)`);
  record({
    workload, value: achieved, baseline: peak.gflops, unit: 'GFLOP/s',
    baselineName: `${peak.isa} FMA peak, ${peak.threads} threads (measured)`, target: 0.6,
  });
}

module.exports = { printStepBreakdown, printGemmShare };
