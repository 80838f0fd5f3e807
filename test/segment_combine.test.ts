// segment_combine_grad on the host (a dynamic table's combine gradient): its rows are split
// among the pool's threads, each adding into its own rows in entry order. The result must
// not depend on the number of threads, and under sum it is the scatter-add in entry order,
// blocked by 256 entries per row as the lookup's backward is (a GPU sums a hot row's
// blocks in parallel).
import { spawnSync } from 'child_process';

describe('segment_combine_grad on the host', () => {
  function runChild(threads: number) {
    const script = `
      const hb = require(${JSON.stringify(require.resolve('../dist'))});
      const { native } = require(${JSON.stringify(require.resolve('../dist/native'))});
      let seed = 11;
      const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
      // 3000 bags of 0-40 entries over 500 distinct rows of width 48: repeated rows, empty
      // bags, and enough work (entries x dim >= 65536) to be split among threads. Every
      // ninth entry is row 0's, thousands in all (blocks of 256), and row 1 holds 300.
      const batch = 3000, rows = 500, dim = 48;
      const splits = new Int32Array(batch + 1);
      for (let b = 0; b < batch; b++) splits[b + 1] = splits[b] + Math.floor(random() * 41);
      const entries = splits[batch];
      let inRow1 = 0;
      const idx = Int32Array.from({ length: entries }, (_, j) => {
        if (j % 9 === 0) return 0;
        if (j % 9 === 1 && inRow1 < 300) return (inRow1++, 1);
        return 2 + Math.floor(random() * (rows - 2));
      });
      const weights = Float32Array.from({ length: entries }, () => random() * 2 + 0.01);
      const dy = Float32Array.from({ length: batch * dim }, () => random() * 2 - 1);
      const ids = BigInt64Array.from({ length: rows }, (_, i) => BigInt(i));
      const t = (a, shape) => native.tensorFromTypedArray(a, shape, 'cpu');
      (async () => {
        let digest = 2166136261;
        let sumMismatches = 0;
        let plainDiffers = false;
        for (const combiner of ['sum', 'mean', 'sqrtn']) {
          for (const weighted of [false, true]) {
            const inputs = [t(dy, [batch, dim]), t(splits, [batch + 1]), t(idx, [entries]), weighted ? t(weights, [entries]) : null, t(ids, [rows])];
            const [grad] = await native.kernelRun('segment_combine_grad', inputs, [{ dtype: 'float32' }], { combiner }, 'seg_grad');
            const got = await native.tensorData(grad);
            for (const bits of new Uint32Array(got.buffer, got.byteOffset, got.length)) digest = Math.imul(digest ^ bits, 16777619) >>> 0;
            if (combiner === 'sum') {
              // d rows[r] = sum over the entries j naming r, in entry order, of dy[bag(j)] (x w_j):
              // each 256 entries of a row summed from 0, those sums added in order.
              const expected = new Float32Array(rows * dim);
              const plain = new Float32Array(rows * dim);
              const block = new Float32Array(rows * dim);
              const terms = new Int32Array(rows);
              for (let b = 0; b < batch; b++) {
                for (let j = splits[b]; j < splits[b + 1]; j++) {
                  const r = idx[j];
                  if (terms[r] > 0 && terms[r] % 256 === 0) {
                    for (let k = 0; k < dim; k++) (expected[r * dim + k] = Math.fround(expected[r * dim + k] + block[r * dim + k]), block[r * dim + k] = 0);
                  }
                  terms[r]++;
                  for (let k = 0; k < dim; k++) {
                    const g = weighted ? Math.fround(dy[b * dim + k] * weights[j]) : dy[b * dim + k];
                    block[r * dim + k] = Math.fround(block[r * dim + k] + g);
                    plain[r * dim + k] = Math.fround(plain[r * dim + k] + g);
                  }
                }
              }
              for (let i = 0; i < expected.length; i++) expected[i] = Math.fround(expected[i] + block[i]);
              for (let i = 0; i < expected.length; i++) if (!Object.is(expected[i], got[i])) sumMismatches++;
              for (let i = 0; i < dim; i++) if (plain[i] !== expected[i]) plainDiffers = true;
            }
          }
        }
        console.log(JSON.stringify({ digest, sumMismatches, plainDiffers, threads: hb.backend().threads }));
      })().catch((e) => { console.error(e); process.exit(1); });
    `;
    const result = spawnSync(process.execPath, ['-e', script], {
      encoding: 'utf8',
      env: { ...process.env, HB_NUM_THREADS: String(threads), HB_DEVICE: 'cpu' },
      timeout: 60_000,
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    return JSON.parse(result.stdout.trim()) as { digest: number; sumMismatches: number; plainDiffers: boolean; threads: number };
  }

  test('gives the same bits on 1, 2 and 3 threads, and the blocked scatter-add in entry order under sum', () => {
    const [one, two, three] = [1, 2, 3].map(runChild);
    expect([one.threads, two.threads, three.threads]).toEqual([1, 2, 3]);
    for (const child of [one, two, three]) expect(child.sumMismatches).toBe(0);
    // Row 0's blocked sum is not its plain one: the check above tells them apart.
    expect(one.plainDiffers).toBe(true);
    expect(two.digest).toBe(one.digest);
    expect(three.digest).toBe(one.digest);
  });
});
