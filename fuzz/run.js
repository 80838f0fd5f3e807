#!/usr/bin/env node
// npm run fuzz [-- --seed N --seconds S --targets a,b]: hostile inputs into every public
// native entry point, corrupted checkpoints, data files, exports and configs, hostile
// serving requests, and kills during saves, for a time budget. The cases run in a child process (fuzz/worker.js), so a crash is
// seen as the child dying by a signal, and a hang as a case that never settles; the
// runner restarts the child after either and goes on with the next case.
//
// Prints the seed, cases tried, and every crash, hang or unexpected error with the case
// that caused it (rerun with that seed to reproduce); exits non-zero on any.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { Command } = require('commander');

const program = new Command()
  .option('--seed <n>', 'first seed (default: random)', (v) => Number(v))
  .option('--seconds <s>', 'time budget', (v) => Number(v), 60)
  .option('--targets <list>', 'comma-separated targets (default: all)')
  .option('--case-timeout <ms>', 'a case that takes longer is a hang', (v) => Number(v), 20_000)
  .parse(process.argv);
const options = program.opts();
const seed = Number.isSafeInteger(options.seed) ? options.seed : Math.floor(Math.random() * 2 ** 31);
const deadline = Date.now() + options.seconds * 1000;
// Files the cases write live here; removed at the end even when a worker crashed.
const scratchRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-fuzz-'));

function runWorker(firstCase) {
  return new Promise((resolve) => {
    const args = [path.join(__dirname, 'worker.js'), String(seed), String(firstCase), String(deadline), String(options.caseTimeout)];
    if (options.targets) args.push(options.targets);
    const child = spawn(process.execPath, ['--expose-gc', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, HB_FUZZ_SCRATCH: scratchRoot },
    });
    let buffered = '';
    let current = null;
    const report = { tried: 0, findings: [] };
    child.stdout.on('data', (chunk) => {
      buffered += chunk.toString();
      let newline;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line.startsWith('CASE ')) {
          current = JSON.parse(line.slice(5));
          report.tried++;
        } else if (line.startsWith('FINDING ')) {
          report.findings.push(JSON.parse(line.slice(8)));
        } else if (line.startsWith('HANG ')) {
          report.findings.push({ kind: 'hang', ...JSON.parse(line.slice(5)) });
        }
      }
    });
    // The worker stops by itself at the deadline; a worker stuck past it is a hang.
    const guard = setTimeout(() => child.kill('SIGKILL'), Math.max(0, deadline - Date.now()) + options.caseTimeout + 30_000);
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      const crashed = signal !== null || (code !== 0 && code !== 3);
      if (crashed) report.findings.push({ kind: 'crash', signal, code, case: current });
      // Exit code 3: the worker stopped after a hang (its native work may still run).
      resolve({ ...report, next: current ? current.index + 1 : firstCase, restart: crashed || code === 3 });
    });
  });
}

async function main() {
  console.log(`fuzz: seed ${seed}, ${options.seconds} s${options.targets ? `, targets ${options.targets}` : ''}`);
  let next = 0;
  let tried = 0;
  const findings = [];
  for (;;) {
    const r = await runWorker(next);
    tried += r.tried;
    findings.push(...r.findings);
    next = r.next;
    if (!r.restart || Date.now() >= deadline) break;
  }
  fs.rmSync(scratchRoot, { recursive: true, force: true });
  for (const f of findings) console.log(`fuzz: ${f.kind}: ${JSON.stringify(f)}`);
  const count = (kind) => findings.filter((f) => f.kind === kind).length;
  console.log(`fuzz: ${tried} cases, ${count('crash')} crashes, ${count('hang')} hangs, ${count('unexpected')} unexpected errors (seed ${seed})`);
  process.exit(findings.length ? 1 : 0);
}

main();
