#!/usr/bin/env node
// The embedding lookup inside a compiled step, as a training step runs it: the chain of
// graph ops (prune_ids -> unique -> gather_rows -> segment_combine) fused into one kernel,
// and the same chain unfused (each op its own kernel, intermediate values in plan
// memory), next to the eager lookup (the fused kernel called alone) in the same run,
// interleaved. Each step also sums its output (a [1] fetch) so nothing big is copied out.
//
//   node bench/lookup_plan.bench.js [--rows 1000000] [--dim 64] [--batch 4096] [--hotness 20] [--iters 20]
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { Graph, VariableStore } = require('../dist/graph/graph');
const { CompiledStep } = require('../dist/graph/compiled_step');
const { raggedFeed } = require('../dist/graph/ragged_feed');
const { lookupChain } = require('../dist/embedding/lookup_chain');
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { timeInterleaved } = require('./timing');
const { seededUniform } = require('./workloads');
const { record } = require('./report');

const rows = option('rows', 1_000_000);
const dim = option('dim', 64);
const batch = option('batch', 4096);
const hotness = option('hotness', 20);
const iters = option('iters', 20);

function powerLawIds(n, seed) {
  // Squared uniforms: low ids more frequent, so unique has duplicates to remove.
  const random = seededUniform(seed);
  const ids = new BigInt64Array(n);
  for (let i = 0; i < n; i++) {
    const u = random();
    ids[i] = BigInt(Math.floor(u * u * rows));
  }
  return ids;
}

async function main() {
  console.log(describeMachine(hb));
  const device = hb.currentDevice();
  const table = hb.variable(hb.initializers.randomUniform({ seed: 1 }), { shape: [rows, dim], name: 'bench_table' });
  const numIds = batch * hotness;
  const batches = [1, 2, 3, 4].map((seed) => hb.ragged(powerLawIds(numIds, seed), Int32Array.from({ length: batch + 1 }, (_, i) => i * hotness)));
  const plan = (fuse) => {
    const graph = new Graph(new VariableStore(), 'predict', device);
    const ids = raggedFeed(graph, 'ids', (b) => b.features.ids, batches[0]);
    const out = lookupChain(graph.variableTensor(table), ids, { combiner: 'mean', name: 'ids' });
    return new CompiledStep(graph, [hb.math.reduceSum(out)], [], { fuse });
  };
  const fused = plan(true);
  const chain = plan(false);
  const runStep = (step) => async (i) => step.run(await step.prepare({ features: { ids: batches[i % batches.length] } }));
  const [eager, fusedTime, chainTime] = await timeInterleaved([
    async (i) => (await hb.nn.embeddingLookupSparse(table, batches[i % batches.length], { combiner: 'mean' })).dispose(),
    runStep(fused),
    runStep(chain),
  ], iters, 2);
  const ms = (t) => `${(t * 1e3).toFixed(2)} ms`;
  console.log(`lookup in a compiled step on ${device}: table ${rows}x${dim}, batch ${batch}, ${hotness} power-law ids/row, mean`);
  console.log(`  fused (${fused.compiled.spec.steps.map((s) => s.kernel).join(', ')}): ${ms(fusedTime)}, ${(numIds / fusedTime / 1e6).toFixed(1)} M ids/s`);
  console.log(`  unfused chain (${chain.compiled.spec.steps.map((s) => s.kernel).join(', ')}): ${ms(chainTime)}`);
  console.log(`  eager lookup (same kernel, alone): ${ms(eager)} | fused step / eager = ${(fusedTime / eager).toFixed(2)} | unfused / fused = ${(chainTime / fusedTime).toFixed(2)}`);
  const what = `fused lookup step on ${device} (${rows}x${dim}, batch ${batch}, ${hotness} ids/row)`;
  record({ workload: `${what} vs the eager lookup`, value: fusedTime * 1e3, baseline: eager * 1e3, unit: 'ms', higherIsBetter: false, baselineName: 'eager lookup, same kernel' });
  record({ workload: `${what} vs the unfused chain`, value: fusedTime * 1e3, baseline: chainTime * 1e3, unit: 'ms', higherIsBetter: false, baselineName: 'unfused chain of ops' });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
