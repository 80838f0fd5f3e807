// HB_CPU_ISA caps the vector instructions of every host kernel that picks its code at run
// time (native/kernels/cpu_isa.h): the GEMMs, the dot interaction, the seeded fills and
// the lookup, each of which hb.backend().cpuKernels names. The cap is read at process
// start, so each setting runs in a child process.
// The fills, the lookup (every width it holds in registers), the interaction (forward
// and gradient) and Dataset.synthetic's rows give the same bits on any code path; the GEMMs' AVX2 and AVX-512 kernels
// agree with each other, and the portable one stays close.
import { spawnSync } from 'child_process';

const script = `
  const hb = require(${JSON.stringify(require.resolve('../dist'))});
  const { native } = require(${JSON.stringify(require.resolve('../dist/native'))});
  const digestOf = (values) => {
    let digest = 2166136261;
    for (const bits of new Uint32Array(values.buffer, values.byteOffset, values.length)) digest = Math.imul(digest ^ bits, 16777619) >>> 0;
    return digest;
  };
  (async () => {
    const table = hb.variable(hb.initializers.randomUniform({ seed: 9 }), { shape: [1000, 37], name: 'isa_table' });
    const fill = digestOf(await table.data());
    const ids = hb.ragged(BigInt64Array.from({ length: 600 }, (_, i) => BigInt((i * 7919) % 1000)), Int32Array.from({ length: 201 }, (_, i) => i * 3));
    const lookup = digestOf(await (await hb.nn.embeddingLookupSparse(table, ids, { combiner: 'mean' })).data());
    // Every width held in registers (AVX-512 takes 32, 64 and 128 in vectors of 16; AVX2 any
    // other up to 64 with its last vector masked, the table's last row included), int64 and
    // int32 ids, each of the four variants (weighted or not, clipped or not), with pruned ids,
    // weights <= 0 and empty bags; 100 sums in memory everywhere.
    const wideLookups = [];
    const ids32 = hb.ragged(Int32Array.from({ length: 600 }, (_, i) => (i % 41 === 0 ? -1 : i % 97 === 0 ? 999 : (i * 104729) % 1000)), Int32Array.from({ length: 201 }, (_, i) => (i === 200 ? 600 : Math.floor(i / 2) * 6))); // every other bag empty
    const weights = Float32Array.from({ length: 600 }, (_, i) => (i % 13 === 0 ? -0.5 : 0.25 + (i % 7) / 3));
    for (const width of [1, 4, 8, 12, 16, 24, 32, 57, 64, 100, 128]) {
      const wide = hb.variable(hb.initializers.randomUniform({ seed: width }), { shape: [1000, width], name: 'isa_table_' + width });
      for (const batch of [ids, ids32]) {
        for (const combiner of ['sum', 'mean', 'sqrtn']) {
          for (const weighted of [false, true]) {
            for (const maxNorm of [undefined, 0.5]) {
              const bags = weighted ? hb.ragged(batch.values, batch.rowSplits, weights) : batch;
              wideLookups.push(digestOf(await (await hb.nn.embeddingLookupSparse(wide, bags, { combiner, maxNorm })).data()));
            }
          }
        }
      }
    }
    const features = 27, batch = 37;
    // The forward: two whole blocks of 16 examples (the AVX-512 build turns their pairs
    // into rows 16 at a time) and a part block, over widths 64 and 16.
    const interaction = [];
    for (const width of [64, 16]) {
      const t = hb.tensor(Float32Array.from({ length: batch * features * width }, (_, i) => Math.sin(i + width)), [batch, features * width]);
      const [z] = await native.kernelRun('dot_interaction', [t.handle], [[batch, (features * (features - 1)) / 2]], { features });
      interaction.push(digestOf(await new hb.Tensor(z).data()));
    }
    // More pairs than the AVX-512 build keeps in a block (4096): their rows are written pair by pair.
    {
      const many = 100, rows = 17;
      const t = hb.tensor(Float32Array.from({ length: rows * many * 4 }, (_, i) => Math.sin(0.3 * i)), [rows, many * 4]);
      const [z] = await native.kernelRun('dot_interaction', [t.handle], [[rows, (many * (many - 1)) / 2]], { features: many });
      interaction.push(digestOf(await new hb.Tensor(z).data()));
    }
    // The gradient: rows of 8, 16, 24 and 64 floats take the vector builds' row blocks (8 in
    // vectors of 8 floats, 16 and 64 of 16 on AVX-512, 24 in one of each), the portable
    // build its row loop; 12 the AVX-512 build's blocked loop and AVX2's row loop.
    for (const gradWidth of [8, 12, 16, 24, 64]) {
      const pairs = (features * (features - 1)) / 2;
      const x = hb.tensor(Float32Array.from({ length: batch * features * gradWidth }, (_, i) => Math.sin(0.7 * i)), [batch, features * gradWidth]);
      const dz = hb.tensor(Float32Array.from({ length: batch * pairs }, (_, i) => Math.cos(1.3 * i)), [batch, pairs]);
      const [dx] = await native.kernelRun('dot_interaction_grad', [dz.handle, x.handle], [[batch, features * gradWidth]], { features });
      interaction.push(digestOf(await new hb.Tensor(dx).data()));
    }
    const a = hb.tensor(Float32Array.from({ length: 300 * 500 }, (_, i) => Math.cos(i)), [300, 500]);
    const b = hb.tensor(Float32Array.from({ length: 500 * 70 }, (_, i) => Math.sin(3 * i)), [500, 70]);
    const [c] = await native.kernelRun('matmul', [a.handle, b.handle], [[300, 70]], {});
    const product = await new hb.Tensor(c).data();
    // Dataset.synthetic's rows: the permutation's lanes (domains of 2^14, 2^20, 2^32: the
    // widest lanes hold, and 2^34: one id at a time) and the ids' weights, through the labels.
    const n = 3000, tables = [10_000, 1_000_000, 2 ** 32, 2 ** 33 + 5].map((vocabularySize) => ({ vocabularySize, hotness: [0, 3], alpha: 1.05 }));
    const rows = { label: new Float32Array(n), dense: [new Float32Array(n)], splits: tables.map(() => new Int32Array(n + 1)), ids: tables.map(() => new BigInt64Array(3 * n)) };
    native.syntheticRows({ seed: 5, numDense: 1, tables }, 2 ** 33, n, rows);
    const synthetic = [rows.label, rows.dense[0], ...rows.splits, ...rows.ids.map((ids) => new Uint32Array(ids.buffer))].map(digestOf);
    console.log(JSON.stringify({ isa: native.measureFmaPeak(0.01).isa, kernels: hb.backend().cpuKernels, fill, lookup, wideLookups, interaction, synthetic, gemm: digestOf(product), first: product[0] }));
  })().catch((e) => { console.error(e); process.exit(2); });`;

function runWith(cap: string | undefined) {
  const env: NodeJS.ProcessEnv = { ...process.env, HB_DEVICE: 'cpu' };
  delete env.HB_CPU_ISA;
  delete env.HB_SGEMM_ISA;
  if (cap !== undefined) env.HB_CPU_ISA = cap;
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000, env });
  if (child.status !== 0) throw new Error(`HB_CPU_ISA=${cap}: exit ${child.status}: ${child.stderr}`);
  return JSON.parse(child.stdout.trim());
}

describe('HB_CPU_ISA (the vector instructions the host kernels may use)', () => {
  test('avx2 and portable hold every kernel to that code and change no bits that must not change', () => {
    const best = runWith(undefined);
    const avx2 = runWith('avx2');
    const portable = runWith('portable');
    const unreadable = runWith('avx9000'); // not a cap: the best the CPU has
    expect(portable.isa).toBe('portable');
    expect(portable.kernels).toEqual({ matmul: 'portable', dotInteraction: 'portable', randomFill: 'portable', embeddingLookup: 'portable' });
    // Held to AVX2: no kernel runs AVX-512, and each runs what it ran before where that was AVX2 or less.
    for (const [kernel, code] of Object.entries(avx2.kernels as Record<string, string>)) {
      expect([kernel, code]).toEqual([kernel, best.kernels[kernel] === 'avx512' ? 'avx2' : best.kernels[kernel]]);
    }
    expect(unreadable.kernels).toEqual(best.kernels);
    expect(best.kernels.matmul).toBe(best.isa);
    expect(['avx2', 'portable']).toContain(avx2.isa); // portable on a CPU without AVX2 + FMA
    expect(unreadable.isa).toBe(best.isa);
    for (const child of [avx2, portable, unreadable]) {
      expect([child.fill, child.lookup, child.wideLookups, child.interaction, child.synthetic]).toEqual([best.fill, best.lookup, best.wideLookups, best.interaction, best.synthetic]);
    }
    if (avx2.isa === 'avx2' && best.isa !== 'portable') expect(avx2.gemm).toBe(best.gemm);
    expect(Math.abs(portable.first - best.first)).toBeLessThan(1e-3 * Math.max(1, Math.abs(best.first)));
  });
});
