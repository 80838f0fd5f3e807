// A slice of `npm run fuzz` (fuzz/run.js): hostile inputs into every public native
// entry point, corrupted checkpoints, data files, exports and configs, hostile serving
// requests, and saves killed half-way, for
// HB_FUZZ_SECONDS (default 60) with a fixed seed. Any crash, hang or engine error (a
// missing check) fails the test, with the case to rerun.
import { spawnSync } from 'child_process';
import * as path from 'path';

const seconds = Number(process.env.HB_FUZZ_SECONDS ?? 60);
const seed = Number(process.env.HB_FUZZ_SEED ?? 20261124);

test(`fuzz: ${seconds} s from seed ${seed}: no crash, no hang, no unchecked input`, () => {
  const run = spawnSync(process.execPath, [path.resolve(__dirname, '..', 'fuzz', 'run.js'), '--seed', String(seed), '--seconds', String(seconds)], {
    encoding: 'utf8',
    timeout: (seconds + 120) * 1000,
  });
  const summary = run.stdout.trim().split('\n').pop() ?? '';
  if (run.status !== 0) throw new Error(`fuzz failed (status ${run.status}, signal ${run.signal}):\n${run.stdout}\n${run.stderr}`);
  expect(summary).toMatch(/^fuzz: \d+ cases, 0 crashes, 0 hangs, 0 unexpected errors/);
  expect(Number(/^fuzz: (\d+) cases/.exec(summary)![1])).toBeGreaterThan(20);
}, (seconds + 180) * 1000);
