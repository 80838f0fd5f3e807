// The job this process belongs to: hb.distribute.init / context / shutdown. One
// process group per process (the world), rendezvoused through rank 0's TCP store.
import { backend, currentDevice, setDevice } from '../backend';
import { native } from '../native';
import { commTimeoutFromEnv, rendezvousFromEnv, RendezvousInfo } from './rendezvous_env';
import { checkOptionKeys } from '../option_keys';

export type CommBackend = 'local' | 'gloo' | 'nccl';

export interface InitOptions {
  /** 'gloo' (CPU tensors), 'nccl' (CUDA tensors) or 'local' (a world of 1). Default: nccl when this process's device is a GPU and NCCL loads, else gloo; local for a world of 1. */
  backend?: CommBackend | 'auto';
  /** How long the rendezvous and each collective wait for peers. Default HB_COMM_TIMEOUT_MS, else 300000. */
  timeoutMs?: number;
  /** Where this process is in the job; default: read from the environment (rendezvousFromEnv). */
  rendezvous?: RendezvousInfo;
}

export interface DistributedContext {
  rank: number;
  worldSize: number;
  localRank: number;
  localWorldSize: number;
  /** This process's device: 'cpu' or 'cuda:N'. */
  device: string;
  backend: CommBackend;
}

let current: DistributedContext | undefined;
let starting: Promise<DistributedContext> | undefined;

function chooseBackend(requested: InitOptions['backend'], worldSize: number, device: string): CommBackend {
  if (requested !== undefined && requested !== 'auto') {
    if (!['local', 'gloo', 'nccl'].includes(requested)) {
      throw new Error(`distribute.init: backend must be 'auto', 'local', 'gloo' or 'nccl', got '${String(requested)}'`);
    }
    return requested;
  }
  if (worldSize === 1) return 'local';
  if (device.startsWith('cuda') && backend().nccl.loaded) return 'nccl';
  return 'gloo';
}

// NCCL wants one GPU per process: the local rank's, unless the launcher already left
// each worker a single visible one (device 0).
function deviceFor(info: RendezvousInfo, commBackend: CommBackend): string {
  if (commBackend !== 'nccl') return currentDevice();
  const count = backend().cuda.deviceCount;
  if (count === 0) throw new Error(`distribute.init: backend 'nccl' needs a GPU: ${backend().cuda.error ?? 'none found'}`);
  const device = `cuda:${info.localRank % count}` as const;
  setDevice(device);
  return device;
}

/**
 * Joins the job: rendezvous with the other ranks through rank 0's store (MASTER_ADDR:
 * MASTER_PORT) and connect the communicator. Resolves once every rank has arrived;
 * rejects naming the ranks that did not within the timeout.
 */
export async function init(options: InitOptions = {}): Promise<DistributedContext> {
  if (current) throw new Error(`distribute.init: already initialized (rank ${current.rank} of ${current.worldSize}); call shutdown() first`);
  if (starting) throw new Error('distribute.init: already being initialized');
  if (options === null || typeof options !== 'object') throw new TypeError('distribute.init: options must be an object');
  checkOptionKeys(options, ['backend', 'timeoutMs', 'rendezvous'] satisfies ReadonlyArray<keyof InitOptions>, 'distribute.init');
  const info = options.rendezvous ?? rendezvousFromEnv();
  const timeoutMs = options.timeoutMs ?? commTimeoutFromEnv();
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2 ** 31 - 1) {
    throw new Error(`distribute.init: timeoutMs must be a whole number of milliseconds in 1..2^31-1, got ${timeoutMs}`);
  }
  const commBackend = chooseBackend(options.backend, info.worldSize, currentDevice());
  if (commBackend === 'gloo' && !backend().gloo.available) {
    throw new Error(`distribute.init: backend 'gloo' is not in this build: ${backend().gloo.error}`);
  }
  const device = deviceFor(info, commBackend);
  starting = (async () => {
    await native.distInit({ ...info, backend: commBackend, device, timeoutMs });
    return { rank: info.rank, worldSize: info.worldSize, localRank: info.localRank, localWorldSize: info.localWorldSize, device, backend: commBackend };
  })();
  try {
    current = await starting;
    return { ...current };
  } finally {
    starting = undefined;
  }
}

/** Whether init() has completed and shutdown() has not been called since. */
export function isInitialized(): boolean {
  return current !== undefined;
}

/**
 * This process's place in the job. Before init(): what the environment says (a world
 * of 1 when nothing is set), with the backend init() would pick.
 */
export function context(): DistributedContext {
  if (current) return { ...current };
  const info = rendezvousFromEnv();
  const device = currentDevice();
  return { rank: info.rank, worldSize: info.worldSize, localRank: info.localRank, localWorldSize: info.localWorldSize, device, backend: chooseBackend(undefined, info.worldSize, device) };
}

/**
 * Leaves the job: waits until the other ranks have called shutdown() too (or have
 * gone), then closes the connections; rank 0 closes the store last. A no-op when not
 * initialized.
 */
export async function shutdown(): Promise<void> {
  if (starting) await starting.catch(() => undefined);
  if (!current) return;
  current = undefined;
  await native.distShutdown();
}

/** @internal For collectives: throws unless init() has completed. */
export function requireInitialized(what: string): DistributedContext {
  if (!current) throw new Error(`${what}: call await hb.distribute.init() first`);
  return current;
}
