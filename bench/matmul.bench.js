#!/usr/bin/env node
// The graph's matmul kernel (native/kernels/sgemm_cpu.cc) on DLRM's layer shapes, batch
// 4096: forward products and the two backward ones of each layer (dX = dY W^T and
// dW = X^T dY). Prints GFLOP/s through native.kernelRun (the eager path: one async call
// per product, the output written in place) and the ratio to PyTorch's torch.mm on the
// same shapes and thread count when /usr/bin/python3 has torch (bench/torch_peer.js: the
// BLAS it loaded is printed; no ratio against a reference-BLAS torch). A ratio that needs no
// PyTorch comes first: against a plain triple loop in JavaScript on one small shape.
//
//   node bench/matmul.bench.js [--batch 4096] [--iters 30] [--rounds 2]
//
// HB_SGEMM_ISA=portable|avx2 caps the instruction set the kernel picks (default: the
// best the CPU has, AVX-512 included); HB_NUM_THREADS sets the threads of both sides.
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { native } = require(path.resolve(__dirname, '..', 'dist', 'native'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { seededUniform } = require('./workloads');
const { runTorchPeer, blasLine, ratioText } = require('./torch_peer');
const { record } = require('./report');

const batch = option('batch', 4096);
const iters = option('iters', 30);
const rounds = option('rounds', 2);

// [transA, transB, M, N, K, what]: op(A) is [M, K], op(B) is [K, N]. DLRM's bottom MLP
// 13-512-256-64 and the first layer of its top MLP (415 = 64 + 26 * 27 / 2 interaction
// outputs, 512 units).
const shapes = [
  [0, 0, batch, 512, 13, 'bottom 13->512 forward'],
  [0, 0, batch, 256, 512, 'bottom 512->256 forward'],
  [0, 0, batch, 64, 256, 'bottom 256->64 forward'],
  [0, 0, batch, 512, 415, 'top 415->512 forward'],
  [0, 1, batch, 512, 256, 'bottom 512->256 dX = dY W^T'],
  [0, 1, batch, 256, 64, 'bottom 256->64 dX = dY W^T'],
  [1, 0, 512, 256, batch, 'bottom 512->256 dW = X^T dY'],
  [1, 0, 256, 64, batch, 'bottom 256->64 dW = X^T dY'],
  [1, 0, 13, 512, batch, 'bottom 13->512 dW = X^T dY'],
  [1, 0, 415, 512, batch, 'top 415->512 dW = X^T dY'],
];

// A native copy: cache-line aligned like the buffers a compiled plan allocates (a typed
// array passed as is would be viewed in place, at whatever alignment V8 gave it).
function randomTensor(shape, seed) {
  const random = seededUniform(seed);
  const values = Float32Array.from({ length: shape[0] * shape[1] }, () => random() * 2 - 1);
  return native.tensorFromTypedArray(values, shape, 'cpu');
}

// Median seconds of `iters` awaited calls, after a warm-up that sizes the packing
// buffers and wakes the thread pool.
async function medianSeconds(fn, count) {
  for (let i = 0; i < 3; i++) await fn();
  const times = [];
  for (let i = 0; i < count; i++) {
    const start = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

// The output is allocated by the first call and written in place by the others.
async function matmulCall([transA, transB, m, n, k], seed) {
  const inputs = [randomTensor(transA ? [k, m] : [m, k], seed), randomTensor(transB ? [n, k] : [k, n], seed + 1)];
  const attrs = { transposeA: Boolean(transA), transposeB: Boolean(transB) };
  const [out] = await native.kernelRun('matmul', inputs, [[m, n]], attrs, 'bench/matmul');
  return () => native.kernelRun('matmul', inputs, [out], attrs, 'bench/matmul');
}

// C = A * B, i-k-j order (rows of B and C read in order): the loop one writes first.
function naiveMatmul(a, b, c, m, n, k) {
  c.fill(0);
  for (let i = 0; i < m; i++) {
    for (let p = 0; p < k; p++) {
      const x = a[i * k + p];
      for (let j = 0; j < n; j++) c[i * n + j] += x * b[p * n + j];
    }
  }
}

// PyTorch's torch.mm on the same shapes, when /usr/bin/python3 has torch
// (bench/torch_peer.js: { result, blas, reference } or { error }).
function torchPeer(threads) {
  const spec = JSON.stringify(shapes.map((s) => s.slice(0, 5)));
  return runTorchPeer('torch_matmul.py', [spec, iters, threads], { threads });
}

const gflops = (m, n, k, seconds) => (2 * m * n * k) / seconds / 1e9;

async function main() {
  console.log(describeMachine(hb));
  const threads = hb.backend().threads;
  const isa = process.env.HB_SGEMM_ISA ? ` (HB_SGEMM_ISA=${process.env.HB_SGEMM_ISA})` : '';

  // Baseline without PyTorch: a plain JS triple loop, one thread, one small shape.
  const small = 256;
  const random = seededUniform(3);
  const a = Float32Array.from({ length: small * small }, () => random() * 2 - 1);
  const b = Float32Array.from({ length: small * small }, () => random() * 2 - 1);
  const c = new Float32Array(small * small);
  const naive = await medianSeconds(async () => naiveMatmul(a, b, c, small, small, small), 5);
  const smallCall = await matmulCall([0, 0, small, small, small], 3);
  const ours = await medianSeconds(smallCall, iters);
  console.log(
    `matmul ${small}x${small}x${small}${isa}: hb-ts ${gflops(small, small, small, ours).toFixed(1)} GFLOP/s ` +
      `(${(ours * 1e3).toFixed(3)} ms, ${threads} threads) | plain JS triple loop: ` +
      `${gflops(small, small, small, naive).toFixed(2)} GFLOP/s (${(naive * 1e3).toFixed(1)} ms, 1 thread) | ` +
      `hb-ts is ${(naive / ours).toFixed(0)}x its speed`,
  );
  record({
    workload: `matmul ${small}x${small}x${small}${isa} vs a JS triple loop`,
    value: gflops(small, small, small, ours), baseline: gflops(small, small, small, naive), unit: 'GFLOP/s',
    baselineName: 'plain JS triple loop, 1 thread',
  });

  // Rounds of ours then PyTorch's, keeping each side's best median: on a shared
  // machine another process's burst then slows one round, not the comparison.
  const seconds = shapes.map(() => Infinity);
  let torch = null;
  for (let round = 0; round < rounds; round++) {
    for (let s = 0; s < shapes.length; s++) {
      seconds[s] = Math.min(seconds[s], await medianSeconds(await matmulCall(shapes[s], 10 + 2 * s), iters));
    }
    const peer = torchPeer(threads);
    if (peer.error) {
      torch = peer;
      break;
    }
    if (torch) peer.result.seconds = peer.result.seconds.map((t, s) => Math.min(t, torch.result.seconds[s]));
    torch = peer;
  }
  if (torch.error) console.log(`PyTorch peer not run (${torch.error}); hb-ts figures only`);
  else console.log(blasLine(torch));
  let ratioLog = 0;
  for (let s = 0; s < shapes.length; s++) {
    const [transA, transB, m, n, k, what] = shapes[s];
    const stored = `${transA ? `[${k},${m}]^T` : `[${m},${k}]`} x ${transB ? `[${n},${k}]^T` : `[${k},${n}]`}`;
    let line =
      `matmul ${stored} (${what})${isa}: ${gflops(m, n, k, seconds[s]).toFixed(1)} GFLOP/s ` +
      `(${(seconds[s] * 1e3).toFixed(3)} ms, ${threads} threads)`;
    if (!torch.error) {
      const theirs = torch.result.seconds[s];
      ratioLog += Math.log(theirs / seconds[s]);
      line +=
        ` | PyTorch ${torch.result.torch} torch.mm, ${torch.result.threads} threads: ${gflops(m, n, k, theirs).toFixed(1)} GFLOP/s; ` +
        ratioText(torch, `hb-ts is ${(theirs / seconds[s]).toFixed(2)}x its speed`);
      if (!torch.reference) {
        record({
          workload: `matmul ${stored} (${what})${isa} vs PyTorch`,
          value: gflops(m, n, k, seconds[s]), baseline: gflops(m, n, k, theirs), unit: 'GFLOP/s',
          baselineName: `PyTorch ${torch.result.torch} torch.mm, ${torch.result.threads} threads`,
        });
      }
    }
    console.log(line);
  }
  // The GEMMs against the multiply-add peak of the instruction set they run (measured
  // here: chains of independent FMAs on every pool thread).
  const peak = native.measureFmaPeak(0.5);
  if (peak.gflops > 0) {
    for (let s = 0; s < shapes.length; s++) {
      const [, , m, n, k, what] = shapes[s];
      const achieved = gflops(m, n, k, seconds[s]);
      console.log(`  ${what}: ${achieved.toFixed(1)} GFLOP/s = ${((achieved / peak.gflops) * 100).toFixed(0)}% of the ${peak.isa} FMA peak (${peak.gflops.toFixed(0)} GFLOP/s, ${peak.threads} threads, measured)`);
      record({
        workload: `matmul ${m}x${n}x${k} (${what})${isa} vs the ${peak.isa} FMA peak`,
        value: achieved, baseline: peak.gflops, unit: 'GFLOP/s', baselineName: `${peak.isa} FMA peak, ${peak.threads} threads (measured)`, target: 0.6,
      });
    }
  } else {
    console.log(`  no FMA peak: the GEMM runs its portable code (${peak.isa})`);
  }
  if (!torch.error && !torch.reference) {
    console.log(`geometric mean over ${shapes.length} shapes: hb-ts is ${Math.exp(ratioLog / shapes.length).toFixed(2)}x PyTorch's speed`);
    record({
      workload: `matmul${isa}, geometric mean over ${shapes.length} DLRM shapes vs PyTorch`,
      ratio: Math.exp(ratioLog / shapes.length),
      baselineName: `PyTorch ${torch.result.torch} torch.mm, ${torch.result.threads} threads`,
    });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
