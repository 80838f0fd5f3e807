// hb.distribute in one process: a world of 1 over the 'local' backend (results are the
// inputs, no copies) and over Gloo (the whole native path with one rank), argument
// errors, and the calls made out of order.
import * as hb from '../lib';
import { freePort } from '../lib/distribute/launch';

const d = hb.distribute;
const alone = { rank: 0, worldSize: 1, localRank: 0, localWorldSize: 1, masterAddr: '127.0.0.1', source: 'none' as const };

afterEach(() => d.shutdown());

describe('a world of one process', () => {
  test('before init: context() reads the environment; collectives refuse', async () => {
    expect(d.isInitialized()).toBe(false);
    expect(d.context()).toEqual({ rank: 0, worldSize: 1, localRank: 0, localWorldSize: 1, device: hb.currentDevice(), backend: 'local' });
    await expect(d.allreduce(hb.tensor([1, 2]))).rejects.toThrow('allreduce: call await hb.distribute.init() first');
    await expect(d.barrier()).rejects.toThrow('barrier: call await hb.distribute.init() first');
  });

  test("the 'local' backend: every collective returns its input", async () => {
    const ctx = await d.init({ rendezvous: { ...alone, masterPort: 1 } });
    expect(ctx).toEqual({ rank: 0, worldSize: 1, localRank: 0, localWorldSize: 1, device: hb.currentDevice(), backend: 'local' });
    expect(d.isInitialized()).toBe(true);
    const t = hb.tensor(new Float32Array([1, 2, 3, 4]), [2, 2]);
    for (const op of ['sum', 'mean', 'max', 'min'] as const) expect(await (await d.allreduce(t, { op })).array()).toEqual([[1, 2], [3, 4]]);
    expect(await (await d.allgather(t)).array()).toEqual([[1, 2], [3, 4]]);
    expect((await d.allgatherv(t)).rowsPerRank).toEqual([2]);
    const a = await d.alltoallv(hb.tensor(new BigInt64Array([5n, 6n]), [2]), [2]);
    expect(a.recvCounts).toEqual([2]);
    expect(Array.from((await a.tensor.data()) as BigInt64Array)).toEqual([5n, 6n]);
    expect(await (await d.broadcast(t, { root: 0 })).array()).toEqual([[1, 2], [3, 4]]);
    await d.barrier();
  });

  test('wrong arguments are Errors that name them', async () => {
    await d.init({ backend: 'local', rendezvous: { ...alone, masterPort: 1 } });
    const t = hb.tensor(new Float32Array(4), [4]);
    await expect(d.alltoallv(t, [3])).rejects.toThrow('alltoallv: sendCounts add up to 3 rows but the tensor has 4');
    await expect(d.alltoallv(t, [2, 2])).rejects.toThrow('alltoallv: sendCounts has 2 entries for a world of 1');
    await expect(d.alltoallv(t, [4], { wireDtype: 'int8' as never })).rejects.toThrow(/wireDtype/);
    await expect(d.alltoallv(t, [4], { wireDtype: 'float32' as never })).rejects.toThrow("wireDtype must be 'float16' or 'bfloat16', got 'float32'");
    await expect(d.alltoallv(hb.tensor(new Int32Array(4), [4]), [4], { wireDtype: 'bfloat16' })).rejects.toThrow('alltoallv: a wire dtype is for float32 rows, the tensor is int32');
    await expect(d.allreduce(t, { op: 'prod' as never })).rejects.toThrow("op must be 'sum', 'mean', 'max' or 'min', got 'prod'");
    await expect(d.allreduce(hb.tensor(new Int32Array(2), [2]), { op: 'mean' })).rejects.toThrow("allreduce: op 'mean' needs float32 or float64, the tensor is int32");
    await expect(d.broadcast(t, { root: 1 })).rejects.toThrow('broadcast: root 1 is not a rank of the world of 1');
    await expect(d.allreduce([1, 2] as never)).rejects.toThrow(TypeError);
    const disposed = hb.tensor([1, 2]);
    disposed.dispose();
    await expect(d.allreduce(disposed)).rejects.toThrow(/disposed/);
  });

  test('init twice, a bad backend, a bad timeout, nccl without a GPU', async () => {
    await expect(d.init({ backend: 'mpi' as never, rendezvous: { ...alone, masterPort: 1 } })).rejects.toThrow("backend must be 'auto', 'local', 'gloo' or 'nccl', got 'mpi'");
    await expect(d.init({ timeoutMs: 0, rendezvous: { ...alone, masterPort: 1 } })).rejects.toThrow('timeoutMs must be a whole number of milliseconds in 1..2^31-1, got 0');
    await expect(d.init({ backend: 'local', rendezvous: { ...alone, worldSize: 2, masterPort: 1 } })).rejects.toThrow("backend 'local' is for a world of 1 process, WORLD_SIZE is 2");
    if (hb.backend().cuda.deviceCount === 0) {
      await expect(d.init({ backend: 'nccl', rendezvous: { ...alone, masterPort: 1 } })).rejects.toThrow(/backend 'nccl' needs a GPU/);
    }
    await d.init({ rendezvous: { ...alone, masterPort: 1 } });
    await expect(d.init({ rendezvous: { ...alone, masterPort: 1 } })).rejects.toThrow('distribute.init: already initialized (rank 0 of 1); call shutdown() first');
    await d.shutdown();
    await d.shutdown(); // a no-op
    expect(d.isInitialized()).toBe(false);
  });

  (hb.backend().gloo.available ? test : test.skip)('over Gloo with one rank: the store, the mesh and every collective', async () => {
    const port = await freePort();
    const ctx = await d.init({ backend: 'gloo', timeoutMs: 10_000, rendezvous: { ...alone, masterPort: port } });
    expect(ctx.backend).toBe('gloo');
    const t = hb.tensor(new Float64Array([1.5, -2]), [2]);
    expect(Array.from((await (await d.allreduce(t, { op: 'mean' })).data()) as Float64Array)).toEqual([1.5, -2]);
    expect((await d.allgatherv(t)).rowsPerRank).toEqual([2]);
    const wire = await d.alltoallv(hb.tensor(new Float32Array([1 / 3, 2]), [2]), [2], { wireDtype: 'bfloat16' });
    // Gloo runs its whole path even alone: the rows were packed to bfloat16 and back
    expect(Array.from((await wire.tensor.data()) as Float32Array)).toEqual([0.333984375, 2]);
    // and checks arguments the same way
    await expect(d.alltoallv(hb.tensor(new Float32Array(3), [3]), [2])).rejects.toThrow('alltoallv: sendCounts add up to 2 rows but the tensor has 3');
    expect(Array.from((await (await d.broadcast(hb.tensor(new Int32Array([4, 5]), [2]))).data()) as Int32Array)).toEqual([4, 5]);
    await d.barrier();
    await d.shutdown();
    // the port is free again for the next job
    await d.init({ backend: 'gloo', timeoutMs: 10_000, rendezvous: { ...alone, masterPort: port } });
  });
});
