#!/usr/bin/env node
// The DLRM of bench/dlrm_step.bench.js (13 dense features, 26 tables of `rows` x `dim`,
// MLPs 512-256-dim / 512-256-1, Adagrad) trained by 2 processes with sharded tables
// (hb-ts launch; the ranks' exchanges over shared memory, then over Gloo's TCP on
// loopback), next to 1 process, in one run: samples/s of the job
// (each rank's batch is --batch), the payload bytes each rank exchanged per step and the
// share of step time spent in exchanges, and the table + slot memory each rank holds.
//
//   node bench/sharded_dlrm.bench.js [--rows 100000] [--dim 64] [--batch 4096] [--steps 10] [--nproc 2] [--job-threads N]
//                                    [--transports shm,tcp]
// Run without RANK set it times one process, then launches itself on --nproc processes,
// each with HB_NUM_THREADS = the machine's hardware threads / nproc (--job-threads), so the
// job uses the machine's threads as the one process does.
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { dlrmTrainer } = require('./workloads');
const { record } = require('./report');

const rows = option('rows', 100_000);
const dim = option('dim', 64);
const batch = option('batch', 4096);
const steps = option('steps', 10);
const nproc = option('nproc', 2);
const jobThreads = option('job-threads', Math.max(1, Math.floor(require('os').cpus().length / nproc)));
const transportsAt = process.argv.indexOf('--transports');
const transports = (transportsAt >= 0 ? process.argv[transportsAt + 1] : 'shm,tcp').split(',');
const MiB = 2 ** 20;

// Bytes of the model's variables and optimizer slots this process holds.
function heldBytes(trainer) {
  let bytes = 0;
  for (const table of trainer.tables()) bytes += table.stats().bytes + table.stats().slots.reduce((n, s) => n + s.bytes, 0);
  return bytes;
}

async function measure() {
  const job = hb.distribute.context();
  const trainer = await dlrmTrainer(hb, { rows, dim, batch });
  const before = job.worldSize > 1 ? hb.distribute.stats() : undefined;
  const { msPerStep } = await trainer.time(steps);
  const after = job.worldSize > 1 ? hb.distribute.stats() : undefined;
  const out = { rank: job.rank, worldSize: job.worldSize, msPerStep, tableBytes: heldBytes(trainer), rssBytes: process.memoryUsage().rss };
  if (before && after) {
    out.sentPerStep = (after.bytesSent - before.bytesSent) / steps;
    out.receivedPerStep = (after.bytesReceived - before.bytesReceived) / steps;
    out.exchangeMsPerStep = ((after.seconds - before.seconds) * 1000) / steps;
    out.collectivesPerStep = (after.collectives - before.collectives) / steps;
    out.transport = after.transport;
  }
  // Where a step's time goes (a profiled run apart from the timed one): ms per step by phase.
  const profiled = await hb.profile(() => trainer.time(steps));
  out.phasesPerStep = Object.fromEntries([...Object.entries(profiled.phases), ['outside the step', profiled.outsidePlansMs]].map(([k, ms]) => [k, ms / steps]));
  return out;
}

const phasesText = (phases) => Object.entries(phases).map(([k, ms]) => `${k} ${ms.toFixed(1)}`).join(', ');

async function worker() {
  const out = await measure();
  console.log(`RESULT ${JSON.stringify(out)}`);
  await hb.distribute.shutdown();
}

async function main() {
  console.log(describeMachine(hb));
  console.log(`DLRM: 26 tables of ${rows} x ${dim}, MLPs 512-256-${dim} / 512-256-1, Adagrad, batch ${batch} per process, ${steps} steps after 2 of warm-up`);
  const alone = await measure();
  const aloneRate = (batch * 1000) / alone.msPerStep;
  console.log(`  1 process:   ${aloneRate.toFixed(0)} samples/s (${alone.msPerStep.toFixed(1)} ms/step), tables + slots ${(alone.tableBytes / MiB).toFixed(0)} MiB, RSS ${(alone.rssBytes / MiB).toFixed(0)} MiB`);
  console.log(`    where a step goes (profiled run, ms/step): ${phasesText(alone.phasesPerStep)}`);
  // The job: this script on nproc processes, each printing its figures; over shared
  // memory (what ranks on one machine use) and over Gloo's TCP (HB_COMM_SHM=0).
  const { spawnSync } = require('child_process');
  const what = `DLRM (26 tables ${rows}x${dim}, batch ${batch}/process), ${nproc} processes sharded`;
  let ranks;
  for (const transport of transports) {
    const run = spawnSync(process.execPath, [path.resolve(__dirname, '..', 'bin', 'hb-ts.js'), 'launch', '--nproc-per-node', String(nproc), __filename, ...process.argv.slice(2)], {
      encoding: 'utf8',
      env: { ...process.env, HB_DEVICE: process.env.HB_DEVICE ?? 'cpu', HB_NUM_THREADS: String(jobThreads), HB_COMM_SHM: transport === 'tcp' ? '0' : '1' },
    });
    ranks = run.stdout.split('\n').filter((l) => l.includes('RESULT ')).map((l) => JSON.parse(l.slice(l.indexOf('RESULT ') + 7)));
    if (run.status !== 0 || ranks.length !== nproc) {
      console.log(`  the ${nproc}-process job failed (exit ${run.status}):\n${run.stderr}`);
      process.exit(1);
    }
    // The job's step is as slow as its slowest rank; every rank trains its own batch.
    const stepMs = Math.max(...ranks.map((r) => r.msPerStep));
    const jobRate = (nproc * batch * 1000) / stepMs;
    const mean = (key) => ranks.reduce((n, r) => n + r[key], 0) / ranks.length;
    console.log(`  ${nproc} processes over ${ranks[0].transport}: ${jobRate.toFixed(0)} samples/s (${stepMs.toFixed(1)} ms/step) -> ${(jobRate / aloneRate).toFixed(2)}x one process`);
    console.log(`    per rank and step: ${(mean('sentPerStep') / MiB).toFixed(2)} MiB sent, ${(mean('receivedPerStep') / MiB).toFixed(2)} MiB received in ${mean('collectivesPerStep').toFixed(0)} exchanges, ${mean('exchangeMsPerStep').toFixed(1)} ms in them (${((mean('exchangeMsPerStep') / stepMs) * 100).toFixed(0)}% of the step, waiting for peers included)`);
    for (const r of ranks) console.log(`    rank ${r.rank}: where a step goes (profiled run, ms/step): ${phasesText(r.phasesPerStep)}`);
    const over = ranks[0].transport === 'shm' ? '' : ` over ${ranks[0].transport}`;
    record({ workload: `${what}${over} vs 1 process: samples/s`, value: jobRate, baseline: aloneRate, unit: 'samples/s', baselineName: '1 process' });
  }
  const mean = (key) => ranks.reduce((n, r) => n + r[key], 0) / ranks.length;
  console.log(`    tables + slots per rank: ${ranks.map((r) => `${(r.tableBytes / MiB).toFixed(0)} MiB`).join(', ')} (${(mean('tableBytes') / alone.tableBytes).toFixed(2)} of one process's); RSS ${ranks.map((r) => `${(r.rssBytes / MiB).toFixed(0)} MiB`).join(', ')}`);
  console.log(`    (${nproc} processes share this machine's ${require('os').cpus().length} hardware threads: ${jobThreads} each; one process uses ${hb.backend().threads})`);
  record({
    workload: `${what} vs 1 process: tables + slots per rank`,
    value: mean('tableBytes') / MiB, baseline: alone.tableBytes / MiB, unit: 'MiB', higherIsBetter: false, baselineName: '1 process',
  });
}

(process.env.RANK !== undefined ? worker() : main()).catch((error) => {
  console.error(error);
  process.exit(1);
});
