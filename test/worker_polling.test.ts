// The device worker and the pool's helpers poll for work before they sleep (HB_SPIN_US,
// native/core/spin_wait.h). Whatever the setting (sleep at once, poll, or a value that is
// not a whole number and keeps the default) a run of small calls, some back to back and
// some after a pause longer than the polling, gives the same values and never stalls.
import { spawnSync } from 'child_process';

const script = `
  const hb = require(${JSON.stringify(require.resolve('../dist'))});
  (async () => {
    const table = hb.variable(hb.initializers.randomUniform({ seed: 3 }), { shape: [5000, 16], name: 'polling' });
    const ids = hb.ragged(BigInt64Array.from({ length: 300 }, (_, i) => BigInt((i * 7919) % 5000)), Int32Array.from({ length: 101 }, (_, i) => i * 3));
    let sum = 0;
    for (let i = 0; i < 60; i++) {
      const out = await hb.nn.embeddingLookupSparse(table, ids, { combiner: 'sum' });
      const values = await out.data();
      for (const v of values) sum += v;
      out.dispose();
      if (i % 10 === 9) await new Promise((r) => setTimeout(r, 20)); // longer than any polling tried here: the threads sleep
      if (i % 20 === 0) await table.assign(hb.tensor(await table.data(), [5000, 16]));
    }
    console.log(JSON.stringify({ sum }));
  })().catch((e) => { console.error(e); process.exit(2); });`;

function run(spin: string): number {
  const child = spawnSync(process.execPath, ['-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, HB_DEVICE: 'cpu', HB_NUM_THREADS: '2', HB_SPIN_US: spin },
  });
  if (child.status !== 0) throw new Error(`HB_SPIN_US=${spin}: exit ${child.status} (${child.signal}): ${child.stderr}`);
  return JSON.parse(child.stdout.trim()).sum;
}

describe('worker threads that poll before they sleep (HB_SPIN_US)', () => {
  test('sleeping at once, polling, and an unreadable setting give the same values, and nothing stalls', () => {
    const sums = ['0', '200', '5000', 'abc', '-5'].map(run);
    expect(Number.isFinite(sums[0])).toBe(true);
    expect(sums).toEqual(sums.map(() => sums[0]));
  });
});
