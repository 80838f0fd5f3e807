// Collectives across the ranks of the job (hb.distribute.init first). Each is one async
// native call, run on the process group's own thread in call order; every rank must
// call the same collectives in the same order. Ranks that disagree (dtype, shape, op,
// root, wire dtype, or which collective) all fail with an Error naming the collective
// and the ranks; a peer that dies or never comes fails them within the timeout.
import { native } from '../native';
import { Tensor } from '../tensor/tensor';
import { requireInitialized } from './process_group';

export type ReduceOp = 'sum' | 'mean' | 'max' | 'min';
export type WireDType = 'float16' | 'bfloat16';

function handleOf(tensor: Tensor, what: string) {
  if (!(tensor instanceof Tensor)) throw new TypeError(`${what}: tensor must be an hb.Tensor (hb.tensor(values, shape))`);
  return tensor.handle;
}

/** The elementwise sum / mean / max / min of `tensor` over all ranks (float32, float64, int32, int64; mean: floats). */
export async function allreduce(tensor: Tensor, options: { op?: ReduceOp } = {}): Promise<Tensor> {
  requireInitialized('allreduce');
  return new Tensor(await native.distAllreduce(handleOf(tensor, 'allreduce'), options.op));
}

/** Every rank's rows, concatenated in rank order along the first dimension (which may differ between ranks). */
export async function allgather(tensor: Tensor): Promise<Tensor> {
  return (await allgatherv(tensor)).tensor;
}

/** allgather, also saying how many rows came from each rank. */
export async function allgatherv(tensor: Tensor): Promise<{ tensor: Tensor; rowsPerRank: number[] }> {
  requireInitialized('allgather');
  const result = await native.distAllgather(handleOf(tensor, 'allgather'));
  return { tensor: new Tensor(result.tensor), rowsPerRank: result.rowsPerRank };
}

/**
 * Sends sendCounts[p] rows of `tensor` (taken in order) to rank p; resolves to the
 * rows received, in rank order, and how many came from each rank. int64 ids and
 * float32 rows (also float64, int32); `wireDtype` float16 / bfloat16 converts float32
 * rows natively for the trip (round to nearest even) and back to float32.
 */
export async function alltoallv(
  tensor: Tensor,
  sendCounts: ArrayLike<number>,
  options: { wireDtype?: WireDType } = {},
): Promise<{ tensor: Tensor; recvCounts: number[] }> {
  requireInitialized('alltoallv');
  const counts = sendCounts !== null && typeof sendCounts === 'object' && typeof sendCounts.length === 'number' ? Array.from(sendCounts, Number) : sendCounts;
  const result = await native.distAlltoallv(handleOf(tensor, 'alltoallv'), counts as number[], options.wireDtype);
  return { tensor: new Tensor(result.tensor), recvCounts: result.recvCounts };
}

/** Rank `root`'s values on every rank; every rank passes a tensor of the same dtype and shape. */
export async function broadcast(tensor: Tensor, options: { root?: number } = {}): Promise<Tensor> {
  requireInitialized('broadcast');
  return new Tensor(await native.distBroadcast(handleOf(tensor, 'broadcast'), options.root ?? 0));
}

/** Resolves once every rank has reached it. */
export async function barrier(): Promise<void> {
  requireInitialized('barrier');
  await native.distBarrier();
}

export interface ExchangeStats {
  /** Collectives run, hb.distribute's and those inside compiled steps. */
  collectives: number;
  /**
   * Payload bytes this rank sent to and received from the others: an alltoallv's rows to
   * and from the other ranks, an allgather's own rows out and the others' in, an
   * allreduce's or broadcast's tensor (the transport's own traffic is not counted).
   */
  bytesSent: number;
  bytesReceived: number;
  /** Time spent inside them, waiting for the other ranks included. */
  seconds: number;
  /**
   * How the bytes travel: 'shm' (backend 'gloo', every rank on this machine: one shared
   * memory segment), 'tcp' (backend 'gloo' otherwise, or with HB_COMM_SHM=0), 'nccl' or 'local'.
   */
  transport: 'shm' | 'tcp' | 'nccl' | 'local';
  /** With transport 'tcp': why the ranks did not use shared memory. */
  whyNotSharedMemory?: string;
}

/** What this rank's collectives have moved since init(), and the time they took. */
export function stats(): ExchangeStats {
  requireInitialized('stats');
  return native.distStats();
}
