// hb.distribute across real processes on loopback: worlds of 2 and 3 started with
// `hb-ts launch` (or one by one, where the launcher would stop the survivors), every
// collective and dtype, a 64 MiB message, disagreements, a peer that dies or hangs,
// rendezvous errors, and the launcher's exit codes. Every process is bounded in time
// and killed when the file ends (test/support/processes.ts).
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { freePort } from '../lib/distribute/launch';
import * as processes from './support/processes';
import { cliPath, killAll, resultsByRank, workerPath } from './support/processes';

// Workers run on the CPU (Gloo) unless a test says otherwise: on a GPU machine the
// default device would be the GPU, and two workers cannot share one GPU under NCCL.
type NodeOptions = { env?: NodeJS.ProcessEnv; timeoutMs?: number };
const onCpu = (options: NodeOptions = {}): NodeOptions => ({ ...options, env: { HB_DEVICE: 'cpu', ...options.env } });
const runNode = (args: string[], options?: NodeOptions) => processes.runNode(args, onCpu(options));
const startNode = (args: string[], options?: NodeOptions) => processes.startNode(args, onCpu(options));

const glooBuilt = hb.backend().gloo.available;
const describeGloo = glooBuilt ? describe : describe.skip;

afterAll(() => killAll());

function launchArgs(worldSize: number, scenario: string): string[] {
  return [cliPath, 'launch', '--nproc-per-node', String(worldSize), workerPath, scenario];
}

// Workers started one by one, as a launcher would, on a port of their own.
async function startRanks(worldSize: number, scenario: string, env: NodeJS.ProcessEnv = {}, ranks?: number[]) {
  const port = await freePort();
  return (ranks ?? Array.from({ length: worldSize }, (_, r) => r)).map((rank) =>
    startNode([workerPath, scenario], {
      env: { RANK: String(rank), WORLD_SIZE: String(worldSize), MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), ...env },
      timeoutMs: 60_000,
    }),
  );
}

function resultOf(stdout: string): any {
  return resultsByRank(stdout).get(-1);
}

describeGloo('collectives over Gloo between processes', () => {
  const gpus = hb.backend().cuda.deviceCount;
  // Ranks on one machine share memory unless HB_COMM_SHM=0 sends them over Gloo's TCP.
  const worlds: Array<[number, string, string]> = [[2, 'gloo', 'shm'], [3, 'gloo', 'shm'], [2, 'gloo', 'tcp'], [3, 'gloo', 'tcp']];
  // One process per GPU (the launcher shows each its own), where there are 2 or more.
  if (gpus >= 2 && hb.backend().nccl.loaded) worlds.push([Math.min(gpus, 3), 'nccl', 'nccl']);
  test.each(worlds)('every collective, dtype and op over %i processes (%s, %s)', async (W, backend, transport) => {
    const env = backend === 'nccl' ? { HB_DEVICE: 'cuda' } : { HB_DEVICE: 'cpu', ...(transport === 'tcp' ? { HB_COMM_SHM: '0' } : {}) };
    const run = await runNode(launchArgs(W, 'collectives'), { env, timeoutMs: 90_000 });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const results = resultsByRank(run.stdout);
    expect([...results.keys()].sort()).toEqual(Array.from({ length: W }, (_, r) => r));
    const sum = W * (W + 1) / 2;
    for (const [q, out] of results) {
      expect(out.context).toEqual({ rank: q, worldSize: W, localRank: q, localWorldSize: W, device: backend === 'nccl' ? 'cuda:0' : 'cpu', backend });
      expect(out.transport).toEqual(transport === 'tcp' ? { transport, whyNotSharedMemory: 'rank 0 does not take part (HB_COMM_SHM=0)' } : { transport });
      for (const dtype of ['float32', 'float64', 'int32', 'int64']) {
        const asDtype = (xs: number[]) => (dtype === 'int64' ? xs.map(String) : xs);
        expect(out[`allreduce/${dtype}/sum`]).toEqual({ dtype, shape: [3], values: asDtype([sum, -2 * sum, 7 * W]) });
        expect(out[`allreduce/${dtype}/max`].values).toEqual(asDtype([W, -2, 7]));
        expect(out[`allreduce/${dtype}/min`].values).toEqual(asDtype([1, -2 * W, 7]));
        if (dtype.startsWith('float')) {
          const mean = out[`allreduce/${dtype}/mean`].values as number[];
          [sum / W, (-2 * sum) / W, 7].forEach((x, i) => expect(mean[i]).toBeCloseTo(x, 6));
        }
        // allgather: rank r gave r rows [100r + i, -i]
        const gathered: number[] = [];
        for (let r = 0; r < W; r++) for (let i = 0; i < r; i++) gathered.push(100 * r + i, -i || 0); // JSON has no -0
        expect(out[`allgather/${dtype}`]).toEqual({ shape: [gathered.length / 2, 2], rowsPerRank: Array.from({ length: W }, (_, r) => r), values: asDtype(gathered) });
        // alltoallv: p sent (p + q) % 3 rows [1000p + 10q + k, k] to q
        const received: number[] = [];
        const counts: number[] = [];
        for (let p = 0; p < W; p++) {
          counts.push((p + q) % 3);
          for (let k = 0; k < (p + q) % 3; k++) received.push(1000 * p + 10 * q + k, k);
        }
        expect(out[`alltoallv/${dtype}`]).toEqual({ shape: [received.length / 2, 2], recvCounts: counts, values: asDtype(received) });
        expect(out[`broadcast/${dtype}`]).toEqual(asDtype([W - 1, 2 * (W - 1)]));
      }
      // 1/3 rounded to nearest even on the wire; 0.5 + p and 3 + q exact.
      const third = { float16: 0.333251953125, bfloat16: 0.333984375 };
      for (const wire of ['float16', 'bfloat16'] as const) {
        const expected: number[] = [];
        for (let p = 0; p < W; p++) expected.push(third[wire], 0.5 + p, 3 + q);
        expect(out[`wire/${wire}`]).toEqual({ dtype: 'float32', values: expected });
      }
      expect(out.fromAllButRank0).toEqual({ recvCounts: [0, ...Array(W - 1).fill(1)], shape: [W - 1] });
      expect(out.empty).toEqual({ recvCounts: Array(W).fill(0), shape: [0, 4] });
      expect(out.emptyOthers).toEqual({ allreduce: [0, 3], allgather: [0, 3], broadcast: [0, 3] });
    }
    // The segment's name went as soon as every rank had mapped it: nothing is left in /dev/shm.
    if (fs.existsSync('/dev/shm')) expect(fs.readdirSync('/dev/shm').filter((n) => n.startsWith(`hb-ts-${results.get(0).pid}-`))).toEqual([]);
  });

  test('one rank that sets HB_COMM_SHM=0 sends the whole job over TCP, and every rank says why', async () => {
    const port = await freePort();
    const ranks = [0, 1].map((rank) =>
      startNode([workerPath, 'collectives'], {
        env: { RANK: String(rank), WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), ...(rank === 1 ? { HB_COMM_SHM: '0' } : {}) },
        timeoutMs: 60_000,
      }),
    );
    for (const rank of await Promise.all(ranks.map((r) => r.done))) {
      expect(rank.code).toBe(0);
      const out = resultOf(rank.stdout);
      expect(out.transport).toEqual({ transport: 'tcp', whyNotSharedMemory: 'rank 1 does not take part (HB_COMM_SHM=0)' });
      expect(out['allreduce/float32/sum'].values).toEqual([3, -6, 14]);
    }
  });

  test.each(['partitions', 'partitionsBeforeInit'])("a dataset made under a job reads this rank's share by default: every row once across the ranks (%s)", async (scenario) => {
    const run = await runNode(launchArgs(3, scenario), { timeoutMs: 60_000 });
    expect(run.code).toBe(0);
    const results = resultsByRank(run.stdout);
    const shares = [0, 1, 2].map((r) => results.get(r).values as number[]);
    for (const share of shares) expect(share.length).toBeGreaterThan(0);
    const all: number[] = [];
    for await (const batch of hb.data.Dataset.fromCriteoTsv(path.resolve(__dirname, 'fixtures', 'criteo_kaggle_sample.tsv')).batch(100)) all.push(...Array.from(batch.features.I2 as Float32Array));
    expect(all).toHaveLength(100);
    expect(shares.flat().sort((a, b) => a - b)).toEqual([...all].sort((a, b) => a - b));
  });

  test.each([[2, 'shm'], [3, 'shm'], [2, 'tcp']])('a 64 MiB message each way arrives whole (alltoallv and allreduce) over %i processes (%s)', async (W, transport) => {
    const run = await runNode(launchArgs(W, 'large'), { env: transport === 'tcp' ? { HB_COMM_SHM: '0' } : {}, timeoutMs: 120_000 });
    expect(run.code).toBe(0);
    const results = resultsByRank(run.stdout);
    expect(results.size).toBe(W);
    for (const [, out] of results) {
      expect(out.transport).toBe(transport);
      expect(out.bytes).toBeGreaterThanOrEqual(64 << 20);
      expect(out.wrong).toBe(0);
      // Rank r's row i starts with r * 1e6 + i.
      const ranksSum = (1e6 * W * (W - 1)) / 2;
      expect(out.firstSum).toBe(ranksSum);
      expect(out.lastRowSum).toBe(ranksSum + W * (out.rows - 1));
      expect(out.lastRowMax).toBe(1e6 * (W - 1) + out.rows - 1);
      expect(out.zeros).toBe(0);
    }
  });

  test('shutdown() then init() again: a rank that re-joins before rank 0 has closed the first group waits for the second', async () => {
    const run = await runNode(launchArgs(2, 'reinit'), { timeoutMs: 60_000 });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const results = resultsByRank(run.stdout);
    expect([...results.values()]).toEqual([
      { first: 3, second: 3, sums: [3], transport: 'shm' },
      { first: 3, second: 3, sums: [3], transport: 'shm' },
    ]);
  });

  test('ranks that disagree all get an Error naming the collective and the ranks; the group stays usable', async () => {
    const run = await runNode(launchArgs(3, 'mismatches'), { timeoutMs: 60_000 });
    expect(run.code).toBe(0);
    const results = resultsByRank(run.stdout);
    expect(results.size).toBe(3);
    for (const [r, out] of results) {
      expect(out.shape).toMatchObject({ code: 'HB_ERR_SHAPE', message: 'allreduce: ranks disagree on the shape: rank 0 has [2], rank 1 has [3]' });
      expect(out.dtype).toMatchObject({ code: 'HB_ERR_TYPE', name: 'TypeError', message: 'allreduce: ranks disagree on the dtype: rank 0 has float32, rank 1 has int32' });
      expect(out.op.message).toBe('allreduce: ranks disagree on the op: rank 0 has sum, rank 1 has max');
      expect(out.root.message).toBe('broadcast: ranks disagree on the root: rank 0 has 0, rank 1 has 1');
      expect(out.trailing.message).toBe('allgather: ranks disagree on the shape after the first dimension: rank 0 has [2], rank 1 has [3]');
      expect(out.wire).toMatchObject({ code: 'HB_ERR_TYPE', message: 'alltoallv: ranks disagree on the wire dtype: rank 0 has none, rank 1 has bfloat16' });
      // Rank 1's own arguments were wrong: it says why, the others say it was rank 1.
      const own = (why: string) => (r === 1 ? `alltoallv: ${why}` : `alltoallv: rank 1 failed its own checks: ${why}`);
      expect(out.counts.message).toBe(own('sendCounts add up to 6 rows but the tensor has 3'));
      expect(out.negative.message).toBe(own('sendCounts[0] must be a non-negative integer'));
      expect(out.wireOnInts.message).toBe(own('a wire dtype is for float32 rows, the tensor is int64'));
      expect(out.badOp.message).toBe((r === 1 ? 'allreduce: ' : 'allreduce: rank 1 failed its own checks: ') + "op must be 'sum', 'mean', 'max' or 'min', got 'product'");
      expect(out.meanOfInts.message).toBe('allreduce: op \'mean\' needs float32 or float64, the tensor is int32');
      expect(out.rootOutside.message).toBe('broadcast: root 3 is not a rank of the world of 3');
      expect(out.after).toEqual([3]);
      const kinds = r === 1 ? 'rank 1 is in barrier #14, rank 0 in allreduce #14' : `rank ${r} is in allreduce #14, rank 1 in barrier #14`;
      expect(out.kinds).toEqual({ code: 'HB_ERR_COMM', name: 'Error', message: `ranks called different collectives: ${kinds}; every rank must call the same collectives in the same order` });
      expect(out.afterKinds.message).toMatch(/^barrier: the process group failed earlier and cannot be used \(ranks called different collectives/);
    }
  });

  test.each(['shm', 'tcp'])('a peer killed mid-run: the others fail with an Error naming it, soon, not at the timeout (%s)', async (transport) => {
    const ranks = await startRanks(3, 'peerDies', { HB_COMM_TIMEOUT_MS: '30000', ...(transport === 'tcp' ? { HB_COMM_SHM: '0' } : {}) });
    const finished = await Promise.all(ranks.map((r) => r.done));
    expect(finished[1].signal).toBe('SIGKILL');
    for (const r of [0, 2]) {
      expect(finished[r].code).toBe(0);
      const out = resultOf(finished[r].stdout);
      // The other survivor may have failed, reported and exited too by the time this rank
      // asks the store who has gone: rank 1 is named either way.
      const other = r === 0 ? 2 : 0;
      const gone = `(rank 1 has gone|ranks ${Math.min(1, other)}, ${Math.max(1, other)} have gone)`;
      expect(out).toMatchObject({ code: 'HB_ERR_COMM', message: expect.stringMatching(new RegExp(`^allreduce \\(collective #2 on rank ${r}\\): ${gone}`)) });
      expect(out.ms).toBeLessThan(15_000);
      expect(out.later.message).toMatch(/^barrier: the process group failed earlier/);
    }
  });

  test.each(['shm', 'tcp'])('a peer that never reaches the collective: an HB_ERR_TIMEOUT Error after HB_COMM_TIMEOUT_MS (%s)', async (transport) => {
    const [rank0, rank1] = await startRanks(2, 'peerStuck', { HB_COMM_TIMEOUT_MS: '1500', ...(transport === 'tcp' ? { HB_COMM_SHM: '0' } : {}) });
    const finished = await rank0.done;
    rank1.child.kill('SIGKILL');
    const out = resultOf(finished.stdout);
    expect(out).toMatchObject({ code: 'HB_ERR_TIMEOUT', message: expect.stringMatching(/^barrier \(collective #1 on rank 0\): no answer from the other ranks within 1500 ms \(HB_COMM_TIMEOUT_MS\); rank 1 never reached it \(alive, but stuck or in other work\)/) });
    expect(out.ms).toBeGreaterThanOrEqual(1400);
    expect(out.ms).toBeLessThan(12_000);
    await rank1.done;
  });
});

describeGloo('rendezvous errors', () => {
  test('a rank that never arrives is named', async () => {
    const [rank0] = await startRanks(3, 'initOnly', { HB_COMM_TIMEOUT_MS: '1000' }, [0]);
    const out = resultOf((await rank0.done).stdout);
    expect(out).toMatchObject({ fatal: true, code: 'HB_ERR_TIMEOUT', message: 'distribute.init: ranks 1, 2 of 3 did not arrive within 1000 ms (HB_COMM_TIMEOUT_MS / timeoutMs); was every rank started with WORLD_SIZE=3?' });
  });

  test('an unreachable master', async () => {
    const [rank1] = await startRanks(2, 'initOnly', { HB_COMM_TIMEOUT_MS: '500' }, [1]);
    const out = resultOf((await rank1.done).stdout);
    expect(out).toMatchObject({ fatal: true, code: 'HB_ERR_TIMEOUT', message: expect.stringMatching(/^rendezvous: could not reach rank 0's store at 127\.0\.0\.1:\d+ within 500 ms .*check MASTER_ADDR and MASTER_PORT/) });
  });

  test('a master port already in use', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const run = await runNode([workerPath, 'initOnly'], { env: { RANK: '0', WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port) }, timeoutMs: 30_000 });
      expect(resultOf(run.stdout)).toMatchObject({ fatal: true, code: 'HB_ERR_COMM', message: `rendezvous: rank 0 cannot serve the store on 127.0.0.1:${port}: Address already in use (another process listens there: choose another MASTER_PORT)` });
    } finally {
      server.close();
    }
  });

  test('two processes started with the same RANK', async () => {
    const port = await freePort();
    const base = { MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), HB_COMM_TIMEOUT_MS: '3000', WORLD_SIZE: '3' };
    const ranks = [0, 1, 1].map((r) => startNode([workerPath, 'initOnly'], { env: { ...base, RANK: String(r) } }));
    const outs = (await Promise.all(ranks.map((r) => r.done))).map((f) => resultOf(f.stdout));
    expect(outs.filter((o) => o.message === 'rendezvous: rank 1 is already connected to the store at 127.0.0.1:' + port + ': two processes were started with RANK=1')).toHaveLength(1);
    expect(outs[0]).toMatchObject({ fatal: true, code: 'HB_ERR_TIMEOUT', message: expect.stringMatching(/^distribute.init: rank 2 of 3 did not arrive/) });
  });

  test('a rank outside the world, and ranks started with different world sizes', async () => {
    const outside = await runNode([workerPath, 'initOnly'], { env: { RANK: '2', WORLD_SIZE: '2' }, timeoutMs: 30_000 });
    expect(resultOf(outside.stdout)).toMatchObject({ fatal: true, message: 'distribute: rank 2 is outside the world of 2 processes (ranks 0..1) (from torchrun\'s variables)' });
    const port = await freePort();
    const base = { MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), HB_COMM_TIMEOUT_MS: '5000' };
    const rank0 = startNode([workerPath, 'initOnly'], { env: { ...base, RANK: '0', WORLD_SIZE: '2' } });
    const rank1 = startNode([workerPath, 'initOnly'], { env: { ...base, RANK: '1', WORLD_SIZE: '3' } });
    const out0 = resultOf((await rank0.done).stdout);
    await rank1.done;
    expect(out0).toMatchObject({ fatal: true, code: 'HB_ERR_COMM', message: "distribute.init: rank 1 was started with WORLD_SIZE and backend '3 gloo' but rank 0 with '2 gloo'" });
  });
});

describe('hb-ts launch', () => {
  test('sets the rendezvous variables and prefixes every line with the rank', async () => {
    const script = "console.log([process.env.RANK, process.env.WORLD_SIZE, process.env.LOCAL_RANK, process.env.LOCAL_WORLD_SIZE, process.env.MASTER_ADDR, process.env.MASTER_PORT > 0].join(' ')); console.error('to stderr')";
    const file = require('path').join(require('os').tmpdir(), `hb-launch-${process.pid}.js`);
    require('fs').writeFileSync(file, script);
    try {
      const run = await runNode([cliPath, 'launch', '--nproc-per-node', '3', file], { timeoutMs: 30_000 });
      expect(run.code).toBe(0);
      const lines = run.stdout.trim().split('\n').sort();
      expect(lines).toEqual(['[rank 0] 0 3 0 3 127.0.0.1 true', '[rank 1] 1 3 1 3 127.0.0.1 true', '[rank 2] 2 3 2 3 127.0.0.1 true']);
      expect(run.stderr.trim().split('\n').sort()).toEqual(['[rank 0] to stderr', '[rank 1] to stderr', '[rank 2] to stderr']);
    } finally {
      require('fs').unlinkSync(file);
    }
  });

  test('a worker that exits non-zero stops the rest; the launcher exits with its code and names it', async () => {
    const run = await runNode(launchArgs(3, 'exitCode'), { timeoutMs: 30_000 });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('hb-ts launch: rank 1 exited with code 3; stopping the other workers');
    expect(run.ms).toBeLessThan(20_000); // the others sleep for 60 s unless stopped
  });

  test('a worker killed by a signal: exit 128 + signal, naming the rank and signal', async () => {
    const run = await runNode(launchArgs(2, 'killed'), { timeoutMs: 30_000 });
    expect(run.code).toBe(137);
    expect(run.stderr).toContain('hb-ts launch: rank 0 was killed by SIGKILL; stopping the other workers');
  });

  test('SIGTERM to the launcher reaches every worker', async () => {
    const job = startNode(launchArgs(2, 'waitForSignal'), { timeoutMs: 30_000 });
    await job.printed('[rank 0] READY');
    await job.printed('[rank 1] READY');
    job.child.kill('SIGTERM');
    const run = await job.done;
    expect(run.code).toBe(143);
    expect(run.stdout).toContain('[rank 0] rank 0 got SIGTERM');
    expect(run.stdout).toContain('[rank 1] rank 1 got SIGTERM');
    expect(run.stderr).toContain('hb-ts launch: stopped by SIGTERM');
  });

  test('bad flags are refused before anything starts', async () => {
    const bad = await runNode([cliPath, 'launch', '--nproc-per-node', 'x', workerPath], { timeoutMs: 30_000 });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("--nproc-per-node must be a whole number, got 'x'");
    const rank = await runNode([cliPath, 'launch', '--nproc-per-node', '2', '--nnodes', '2', '--node-rank', '2', workerPath], { timeoutMs: 30_000 });
    expect(rank.code).toBe(1);
    expect(rank.stderr).toContain('--node-rank 2 must be below --nnodes 2');
  });
});

describeGloo('the Estimator in a launched job', () => {
  test('`hb-ts train config --nproc-per-node 2` trains DLRM with sharded tables and prints one eval AUC for the job', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-train-job-'));
    try {
      const config = path.join(dir, 'small.json');
      fs.writeFileSync(config, JSON.stringify({
        tables: [{ name: 'C1', vocabularySize: 1000, hotness: 1, alpha: 1.1 }, { name: 'C2', vocabularySize: 500, hotness: 2, alpha: 1.1 }],
        numDense: 4, batchSize: 128, trainSamples: 40000, maxSteps: 100, evalSamples: 4000, evalEveryNIter: 50,
      }));
      const run = await runNode([cliPath, 'train', config, '--nproc-per-node', '2'], { timeoutMs: 90_000 });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      // Rank 0 alone reports: the header, and one result over both ranks' rows.
      const done = run.stdout.split('\n').filter((l) => l.includes('done: eval loss'));
      expect(done).toHaveLength(1);
      expect(done[0]).toMatch(/^\[rank 0\] done: eval loss [0-9.]+, eval AUC ([0-9.]+), 100 steps in [0-9.]+ s \(with evaluations\), \d+ samples\/s over 2 processes \(exchanging through shared memory\)$/);
      expect(Number(/eval AUC ([0-9.]+)/.exec(done[0])![1])).toBeGreaterThan(0.6);
      expect(run.stdout).toMatch(/^\[rank 0\] hb-ts train: DLRM, 2 tables x 16, .*, 100 steps on 2 processes \(batch 128 each\) on cpu/m);
      expect(run.stdout).not.toMatch(/\[rank 1\]/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
