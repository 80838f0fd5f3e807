// Runs a PyTorch peer of a bench (bench/peers/<script>) the way a user's machine would:
// HB_TORCH_PYTHON (a GPU machine's torch with CUDA, ../shared/gpu/run.sh sets it), else
// /usr/bin/python3, this process's environment minus OPENBLAS_CORETYPE and
// OPENBLAS_L2_SIZE (the machines these benches run on pin them for older OpenBLAS builds;
// a user's machine has neither, and with them OpenBLAS picks a slower kernel, e.g.
// Haswell's on an AVX-512 CPU), and as many threads as ours (OMP_NUM_THREADS, which
// OpenBLAS also reads, and torch.set_num_threads through the script's arguments).
// HB_CPU_ISA=avx2 holds every one of our CPU kernels to AVX2 (native/kernels/cpu_isa.h); the
// peer is then held the same way: OPENBLAS_CORETYPE=Haswell (the kernel OpenBLAS runs on an
// AVX2-only CPU) and ATEN_CPU_CAPABILITY=avx2 (torch's own kernels), so an AVX-512 machine
// can stand in for the AVX2-only kind. HB_SGEMM_ISA=avx2 caps only our GEMMs, and then only
// the peer's BLAS. The peer's line says what it ran (its BLAS core and torch's capability).
//
// OpenBLAS picks its kernels from the CPU model it knows; on a newer one it falls back to a
// generic core (Debian's 0.3.21 on an Emerald Rapids Xeon: Prescott, SSE3 code, 60 GFLOP/s
// where its AVX-512 kernel runs 266). A user who finds that sets OPENBLAS_CORETYPE, so the
// peer is given the best core the CPU runs (coreToForce) whenever OpenBLAS's own pick
// runs narrower vector code than the CPU has, and its line says so.
//
// Every peer prints one JSON line with a "blas" report (bench/peers/torch_blas.py): the
// BLAS torch was built against and the one actually loaded. A peer on the reference
// netlib BLAS (or on torch's own fallback loops) is not the best PyTorch a user can
// install: the benches then print its timings but no ratio. With { device: 'cuda' } the peer
// runs on the GPU (HB_PEER_DEVICE=cuda) and reports cuBLAS instead.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const PYTHON = process.env.HB_TORCH_PYTHON || '/usr/bin/python3';
const PINNED = ['OPENBLAS_CORETYPE', 'OPENBLAS_L2_SIZE'];
const REFUSAL = 'ratio not printed: torch runs on the reference BLAS; install libopenblas0-pthread';

/**
 * runTorchPeer('torch_matmul.py', [...], { threads, device }) ->
 *   { result, blas: { library, config, core, kind, build }, reference } or { error }.
 * device: 'cpu' (default) or a CUDA device ('cuda', 'cuda:1'), which the peer runs on.
 */
function runTorchPeer(script, args, { threads, device = 'cpu' } = {}) {
  if (!fs.existsSync(PYTHON)) return { error: `no ${PYTHON}` };
  const env = { ...process.env };
  for (const name of PINNED) delete env[name];
  const heldToAvx2 = process.env.HB_CPU_ISA === 'avx2';
  if (heldToAvx2 || process.env.HB_SGEMM_ISA === 'avx2') env.OPENBLAS_CORETYPE = 'Haswell';
  if (heldToAvx2) env.ATEN_CPU_CAPABILITY = 'avx2';
  if (threads) env.OMP_NUM_THREADS = String(threads);
  env.PYTHONDONTWRITEBYTECODE = '1'; // no __pycache__ in bench/peers
  env.HB_PEER_DEVICE = device;
  let coreForced = null;
  if (device === 'cpu' && !env.OPENBLAS_CORETYPE) {
    coreForced = coreToForce(env);
    if (coreForced) env.OPENBLAS_CORETYPE = coreForced.core;
  }
  const run = runPeerScript(script, args, env);
  if (run.error) return run;
  const { result } = run;
  const report = result.blas || {};
  const blas = {
    library: report.library || null,
    config: report.config || null,
    core: report.core || null,
    kind: report.kind || 'unknown',
    build: report.build || {},
    coretypeEnv: report.coretype_env || null,
    coreOnItsOwn: coreForced ? coreForced.picked : null,
    capability: report.capability || null,
  };
  return { result, blas, reference: blas.kind === 'reference' || blas.kind === 'unknown' };
}

/** Runs bench/peers/<script> (or an absolute path) with `env`: { result } (its last line's JSON) or { error }. */
function runPeerScript(script, args, env) {
  const file = path.isAbsolute(script) ? script : path.join(__dirname, 'peers', script);
  const run = spawnSync(PYTHON, [file, ...args.map(String)], { encoding: 'utf8', env, maxBuffer: 64 << 20 });
  if (run.error) return { error: String(run.error.message || run.error) };
  if (run.status !== 0) {
    const reason = (run.stderr || '').trim().split('\n').pop();
    return { error: reason || `${path.basename(file)} exited with status ${run.status}` };
  }
  try {
    return { result: JSON.parse(run.stdout.trim().split('\n').pop()) };
  } catch (error) {
    return { error: `${path.basename(file)} printed no JSON line (${error.message})` };
  }
}

// OpenBLAS's x86-64 cores by the widest vector code their SGEMM runs (names as
// openblas_get_corename returns them, lower-cased); a core not listed counts as SSE.
const CORE_LEVEL = {
  skylakex: 3, cooperlake: 3, sapphirerapids: 3,
  haswell: 2, zen: 2,
  sandybridge: 1, bulldozer: 1, piledriver: 1, steamroller: 1, excavator: 1,
};
const BEST_CORE = [null, 'Sandybridge', 'Haswell', 'SkylakeX'];

/** 3 (AVX-512 F/CD/BW/DQ/VL), 2 (AVX2 + FMA), 1 (AVX) or 0, from the CPU's flags; 0 where /proc/cpuinfo is missing. */
function cpuVectorLevel() {
  let text;
  try {
    text = fs.readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return 0;
  }
  const line = text.split('\n').find((l) => l.startsWith('flags'));
  const flags = new Set((line || '').split(':').pop().trim().split(/\s+/));
  if (['avx512f', 'avx512cd', 'avx512bw', 'avx512dq', 'avx512vl'].every((f) => flags.has(f))) return 3;
  if (flags.has('avx2') && flags.has('fma')) return 2;
  return flags.has('avx') ? 1 : 0;
}

/**
 * The OpenBLAS core a user would set for this CPU, with the one OpenBLAS picked on its own,
 * when that one runs narrower vector code than the CPU has; null when its own pick is as
 * wide (or torch is not on OpenBLAS). Asked once per process (a torch start, ~1 s).
 */
let probedCore;
function coreToForce(env) {
  if (probedCore !== undefined) return probedCore;
  probedCore = null;
  const level = cpuVectorLevel();
  if (level === 0) return probedCore;
  const probe = runPeerScript('torch_blas.py', [], env);
  const blas = probe.result && probe.result.blas;
  if (!blas || blas.kind !== 'openblas' || !blas.core) return probedCore;
  const picked = blas.core;
  if ((CORE_LEVEL[picked.toLowerCase()] || 0) < level) probedCore = { core: BEST_CORE[level], picked };
  return probedCore;
}

/** The line a bench prints about the peer's BLAS. */
function blasLine(peer) {
  const { library, config, core, kind, build, coretypeEnv, coreOnItsOwn, capability } = peer.blas;
  const what = config || (kind === 'reference' ? 'reference BLAS (netlib)' : kind);
  const parts = [
    `PyTorch ${peer.result.torch} BLAS: ${what}`,
    core ? `core ${core}` : null,
    library ? `loaded ${library}` : 'no BLAS library loaded',
    `built with BLAS_INFO=${build.BLAS_INFO}`,
    coretypeEnv ? `OPENBLAS_CORETYPE=${coretypeEnv} (forced${coreOnItsOwn ? `: on its own OpenBLAS picks ${coreOnItsOwn}, narrower vector code than this CPU runs` : coretypeEnv === 'Haswell' && (process.env.HB_CPU_ISA || process.env.HB_SGEMM_ISA) === 'avx2' ? ' to match our AVX2 cap' : ''})` : null,
    capability ? `torch's own kernels: ${capability}` : null,
  ].filter(Boolean);
  return `${parts.join('; ')}${peer.reference ? ` -- ${REFUSAL}` : ''}`;
}

/** `text` (a ratio against the peer), or the refusal when the peer runs on the reference BLAS. */
function ratioText(peer, text) {
  return peer.reference ? REFUSAL : text;
}

module.exports = { runTorchPeer, blasLine, ratioText, REFUSAL };
