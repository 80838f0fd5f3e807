// hb.distribute with CUDA tensors, in a world of one process: NCCL's whole path (unique
// id through the store, communicator, header exchange, collectives on the GPU, wire
// packing by the CUDA kernel), and Gloo staging CUDA tensors through host memory.
// Skipped without a GPU (and the NCCL part without libnccl); worlds of 2+ GPUs are in
// distribute_multiprocess.test.ts.
import * as hb from '../lib';
import { freePort } from '../lib/distribute/launch';
import { describeCuda } from './support/devices';

const d = hb.distribute;
const alone = { rank: 0, worldSize: 1, localRank: 0, localWorldSize: 1, masterAddr: '127.0.0.1', source: 'none' as const };
const ncclLoaded = hb.backend().nccl.loaded;

afterEach(() => d.shutdown());

async function exercise(device: string) {
  const onGpu = (values: Float32Array | BigInt64Array, shape: number[]) => hb.tensor(values, shape, undefined, { device });
  const t = onGpu(new Float32Array([1, -2, 3, 4]), [2, 2]);
  for (const op of ['sum', 'mean', 'max', 'min'] as const) {
    const r = await d.allreduce(t, { op });
    expect(r.device).toBe(device);
    expect(await r.array()).toEqual([[1, -2], [3, 4]]);
  }
  const g = await d.allgatherv(t);
  expect(g.rowsPerRank).toEqual([2]);
  expect(await g.tensor.array()).toEqual([[1, -2], [3, 4]]);
  const ids = await d.alltoallv(onGpu(BigInt64Array.from([7n, 9n, 11n]), [3]), [3]);
  expect(ids.recvCounts).toEqual([3]);
  expect(Array.from((await ids.tensor.data()) as BigInt64Array)).toEqual([7n, 9n, 11n]);
  const wire = await d.alltoallv(onGpu(new Float32Array([1 / 3, 0.5]), [2, 1]), [2], { wireDtype: 'bfloat16' });
  expect(wire.tensor.device).toBe(device);
  expect(Array.from((await wire.tensor.data()) as Float32Array)).toEqual([0.333984375, 0.5]);
  const half = await d.alltoallv(onGpu(new Float32Array([1 / 3]), [1]), [1], { wireDtype: 'float16' });
  expect(Array.from((await half.tensor.data()) as Float32Array)).toEqual([0.333251953125]);
  expect(await (await d.broadcast(t, { root: 0 })).array()).toEqual([[1, -2], [3, 4]]);
  await d.barrier();
}

describeCuda('hb.distribute with CUDA tensors', () => {
  (ncclLoaded ? test : test.skip)('NCCL in a world of one: every collective on the GPU', async () => {
    const ctx = await d.init({ backend: 'nccl', timeoutMs: 60_000, rendezvous: { ...alone, masterPort: await freePort() } });
    expect(ctx.backend).toBe('nccl');
    expect(ctx.device).toBe('cuda:0');
    await exercise('cuda:0');
  });

  test('Gloo stages CUDA tensors through host memory and gives CUDA tensors back', async () => {
    if (!hb.backend().gloo.available) return;
    await d.init({ backend: 'gloo', timeoutMs: 60_000, rendezvous: { ...alone, masterPort: await freePort() } });
    await exercise('cuda:0');
  });
});
