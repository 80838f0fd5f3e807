#!/usr/bin/env node
// npm run bench: runs every bench/*.bench.js in turn, each in its own process, then writes
// the figures they recorded (bench/report.js) for this machine: <dir>/<machine>.json (every
// record), <machine>.md (a table) and <machine>.svg (a chart of the ratios).
//
//   node bench/run.js [name filter] [--out <dir>] [-- <options passed to every bench>]
//
// <dir> is bench/results unless --out names another. With a filter, the benches that did
// not run keep their records from the files already there, so one bench can be measured
// again without running them all.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { readRecords, writeResults } = require('./report');

function parseArgs(argv) {
  const dashes = argv.indexOf('--');
  const own = dashes >= 0 ? argv.slice(0, dashes) : argv;
  const parsed = { only: undefined, outDir: path.join(__dirname, 'results'), benchArgs: dashes >= 0 ? argv.slice(dashes + 1) : [] };
  for (let i = 0; i < own.length; i++) {
    if (own[i] === '--out') {
      if (!own[i + 1]) throw new Error('--out needs a directory');
      parsed.outDir = path.resolve(own[++i]);
    } else if (own[i].startsWith('--out=')) {
      parsed.outDir = path.resolve(own[i].slice('--out='.length));
    } else if (own[i].startsWith('--')) {
      throw new Error(`unknown option ${own[i]} (options for the benches go after --)`);
    } else {
      parsed.only = own[i];
    }
  }
  return parsed;
}

/** The short commit, marked when the tracked files differ from it; null outside a git checkout. */
function gitCommit() {
  const cwd = path.resolve(__dirname, '..');
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8' });
  if (head.status !== 0 || !head.stdout) return null;
  const changes = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd, encoding: 'utf8' });
  return `${head.stdout.trim()}${changes.status === 0 && changes.stdout.trim() ? ' (with uncommitted changes)' : ''}`;
}

/** { description, slug } from bench/machine.js in a child; from `os` alone when that fails (no addon built). */
function machine() {
  const run = spawnSync(process.execPath, [path.join(__dirname, 'machine.js')], { encoding: 'utf8' });
  try {
    return JSON.parse(run.stdout.trim().split('\n').pop());
  } catch {
    const cpu = os.cpus()[0] ? os.cpus()[0].model.trim() : 'unknown CPU';
    const slug = `${cpu.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '')}-${os.cpus().length}t`;
    return { description: `CPU: ${cpu}, ${os.cpus().length} threads; node ${process.version} (the addon did not load)`, slug };
  }
}

/** What <dir>/<slug>.json already holds, or nothing when it is absent or unreadable. */
function previousResults(file) {
  try {
    const previous = JSON.parse(fs.readFileSync(file, 'utf8'));
    return Array.isArray(previous.records) && Array.isArray(previous.benches) ? previous : null;
  } catch {
    return null;
  }
}

function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    console.error(`bench/run.js: ${error.message}\nusage: node bench/run.js [name filter] [--out <dir>] [-- <bench options>]`);
    return 2;
  }
  const files = fs
    .readdirSync(__dirname)
    .filter((f) => f.endsWith('.bench.js') && (!args.only || f.includes(args.only)))
    .sort();
  if (files.length === 0) {
    console.log(`no bench/*.bench.js matches ${JSON.stringify(args.only)}: nothing run, nothing written`);
    return 0;
  }
  const { description, slug } = machine();
  const commit = gitCommit();
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-bench-results-'));
  const recordsFile = path.join(scratch, 'records.jsonl');
  const benches = [];
  try {
    for (const file of files) {
      console.log(`\n== ${file}`);
      const date = new Date().toISOString();
      const result = spawnSync(process.execPath, [path.join(__dirname, file), ...args.benchArgs], {
        stdio: 'inherit',
        env: { ...process.env, HB_BENCH_RESULTS: recordsFile },
      });
      const outcome = result.status === 0 ? 'ok' : result.status === null ? `killed by ${result.signal}` : `exit ${result.status}`;
      benches.push({ bench: file.replace(/\.bench\.js$/, ''), date, commit, result: outcome });
    }
    const ran = new Set(benches.map((b) => b.bench));
    let records = readRecords(recordsFile);
    let allBenches = benches;
    const previous = args.only ? previousResults(path.join(args.outDir, `${slug}.json`)) : null;
    if (previous) {
      records = [...previous.records.filter((r) => !ran.has(r.bench)), ...records];
      allBenches = [...previous.benches.filter((b) => !ran.has(b.bench)), ...benches].sort((a, b) => a.bench.localeCompare(b.bench));
      const order = new Map(allBenches.map((b, i) => [b.bench, i]));
      records = records.map((r, i) => [r, i]).sort(([a, i], [b, j]) => (order.get(a.bench) ?? -1) - (order.get(b.bench) ?? -1) || i - j).map(([r]) => r);
    }
    const written = writeResults(args.outDir, {
      machine: description,
      slug,
      date: new Date().toISOString(),
      node: process.version,
      commit,
      benches: allBenches,
      records,
    });
    console.log(`\nbench results (${records.length} figures): ${written.json}, ${written.md}, ${written.svg}`);
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  const failed = benches.filter((b) => b.result !== 'ok');
  if (failed.length > 0) console.log(`failed: ${failed.map((b) => b.bench).join(', ')}`);
  return failed.length ? 1 : 0;
}

process.exitCode = main();
