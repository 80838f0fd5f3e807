// One line naming the machine a figure was measured on, and a short name for it that
// bench/run.js files results under (bench/results/<slug>.json).
//
//   node bench/machine.js   prints {"description": ..., "slug": ...}: bench/run.js asks a
//   child, so that its own process never loads the addon (nor opens a GPU context next to
//   the benches').
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');

function describeMachine(hb) {
  const report = hb.backend();
  const cpu = os.cpus()[0] ? os.cpus()[0].model.trim() : 'unknown CPU';
  let device = `CPU: ${cpu}, ${os.cpus().length} threads (pool ${report.threads}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`;
  if (report.device === 'cuda') device += `; GPU: ${gpuName() || hb.currentDevice()}`;
  const k = report.cpuKernels;
  const kernels = k ? `; CPU kernels: matmul ${k.matmul}, interaction ${k.dotInteraction}, fill ${k.randomFill}, lookup ${k.embeddingLookup}` : '';
  return `${device}; node ${process.version}${kernels}; host pages: ${hostPages()}`;
}

/** Which pages large host blocks get: 2 MiB ones where Linux's transparent huge pages take advice. */
function hostPages() {
  if (process.env.HB_HUGE_PAGES === '0') return '4 KiB (HB_HUGE_PAGES=0)';
  let mode = null;
  try {
    mode = /\[(\w+)\]/.exec(fs.readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8'))?.[1] ?? null;
  } catch {
    // not Linux, or no THP
  }
  return mode === 'madvise' || mode === 'always' ? `2 MiB for blocks >= 64 KiB (THP ${mode})` : `4 KiB (THP ${mode ?? 'absent'})`;
}

const slugOf = (text) => text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');

/** The CPU model without its marketing and clock words: 'Intel(R) Xeon(R) CPU @ 2.20GHz' -> 'Intel Xeon'. */
function cpuName() {
  const model = os.cpus()[0] ? os.cpus()[0].model : 'unknown cpu';
  return model
    .replace(/\((R|TM|r|tm)\)/g, ' ')
    .replace(/@.*$/, ' ')
    .replace(/\b(CPU|Processor|\d+-Core|with Radeon.*)\b/gi, ' ')
    .trim();
}

/** The first GPU's name from nvidia-smi; null where it cannot tell. */
function gpuName() {
  const run = spawnSync('nvidia-smi', ['--query-gpu=name', '--format=csv,noheader'], { encoding: 'utf8', timeout: 10_000 });
  const name = run.status === 0 ? run.stdout.split('\n')[0].trim() : '';
  return name || null;
}

/** e.g. 'amd-epyc-2t', 'intel-xeon-platinum-8375c-16t-nvidia-h100-80gb-hbm3'. */
function machineSlug(hb) {
  const parts = [slugOf(cpuName()) || 'cpu', `${os.cpus().length}t`];
  if (hb.backend().device === 'cuda') parts.push(slugOf(gpuName() || 'cuda'));
  return parts.join('-');
}

if (require.main === module) {
  const hb = require(require('path').resolve(__dirname, '..'));
  console.log(JSON.stringify({ description: describeMachine(hb), slug: machineSlug(hb) }));
}

module.exports = { describeMachine, machineSlug };
