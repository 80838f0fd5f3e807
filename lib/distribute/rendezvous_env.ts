// Who this process is in a job, read from the variables the usual launchers set:
// torchrun's / hb-ts launch's (RANK, WORLD_SIZE, ...), then Open MPI's (mpirun), then
// SLURM's (srun). MASTER_ADDR / MASTER_PORT name rank 0's rendezvous store in every case.

export interface RendezvousInfo {
  rank: number;
  worldSize: number;
  localRank: number;
  localWorldSize: number;
  masterAddr: string;
  masterPort: number;
  /** Which launcher's variables were read: 'torchrun' (also hb-ts launch), 'mpi', 'slurm', or 'none' (a world of 1). */
  source: 'torchrun' | 'mpi' | 'slurm' | 'none';
}

export const DEFAULT_MASTER_PORT = 29500;

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, min: number): number {
  const text = env[name];
  if (text === undefined || !/^\s*\d+\s*$/.test(text)) {
    throw new Error(`distribute: ${name} must be a non-negative integer, got ${text === undefined ? 'nothing' : `'${text}'`}`);
  }
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`distribute: ${name} must be >= ${min}, got ${text}`);
  return value;
}

function optionalInteger(env: Env, name: string, min: number, fallback: number): number {
  return env[name] === undefined || env[name] === '' ? fallback : integer(env, name, min);
}

function masterPort(env: Env): number {
  const port = optionalInteger(env, 'MASTER_PORT', 1, DEFAULT_MASTER_PORT);
  if (port > 65535) throw new Error(`distribute: MASTER_PORT must be in 1..65535, got ${port}`);
  return port;
}

// Without MASTER_ADDR a job on one machine meets on loopback; across machines there is
// no safe guess.
function masterAddr(env: Env, singleNode: boolean, hint: string): string {
  const given = env.MASTER_ADDR?.trim();
  if (given) return given;
  if (singleNode) return '127.0.0.1';
  throw new Error(`distribute: MASTER_ADDR must name rank 0's machine when the job spans several nodes (${hint})`);
}

function checked(info: RendezvousInfo): RendezvousInfo {
  const where = info.source === 'none' ? '' : ` (from ${info.source}'s variables)`;
  if (info.worldSize < 1) throw new Error(`distribute: the world size must be >= 1, got ${info.worldSize}${where}`);
  if (info.rank >= info.worldSize) {
    throw new Error(`distribute: rank ${info.rank} is outside the world of ${info.worldSize} processes (ranks 0..${info.worldSize - 1})${where}`);
  }
  if (info.localRank >= info.localWorldSize) {
    throw new Error(`distribute: local rank ${info.localRank} is outside the ${info.localWorldSize} local processes${where}`);
  }
  if (info.localWorldSize > info.worldSize) {
    throw new Error(`distribute: ${info.localWorldSize} local processes is more than the world of ${info.worldSize}${where}`);
  }
  return info;
}

/** This process's place in the job, from `env` (default process.env). */
export function rendezvousFromEnv(env: Env = process.env): RendezvousInfo {
  if (env.WORLD_SIZE !== undefined || env.RANK !== undefined) {
    const worldSize = integer(env, 'WORLD_SIZE', 1);
    const rank = integer(env, 'RANK', 0);
    const localWorldSize = optionalInteger(env, 'LOCAL_WORLD_SIZE', 1, worldSize);
    const localRank = optionalInteger(env, 'LOCAL_RANK', 0, localWorldSize === worldSize ? rank : 0);
    return checked({
      rank, worldSize, localRank, localWorldSize, source: 'torchrun', masterPort: masterPort(env),
      masterAddr: masterAddr(env, localWorldSize === worldSize, 'hb-ts launch sets it from --master-addr'),
    });
  }
  if (env.OMPI_COMM_WORLD_SIZE !== undefined) {
    const worldSize = integer(env, 'OMPI_COMM_WORLD_SIZE', 1);
    const localWorldSize = optionalInteger(env, 'OMPI_COMM_WORLD_LOCAL_SIZE', 1, worldSize);
    return checked({
      rank: integer(env, 'OMPI_COMM_WORLD_RANK', 0), worldSize,
      localRank: optionalInteger(env, 'OMPI_COMM_WORLD_LOCAL_RANK', 0, 0), localWorldSize, source: 'mpi',
      masterPort: masterPort(env),
      masterAddr: masterAddr(env, localWorldSize === worldSize, 'pass it to every rank: mpirun -x MASTER_ADDR=<rank 0 host>'),
    });
  }
  if (env.SLURM_NTASKS !== undefined && env.SLURM_PROCID !== undefined) {
    const worldSize = integer(env, 'SLURM_NTASKS', 1);
    const nodes = optionalInteger(env, 'SLURM_NNODES', 1, 1);
    // SLURM_NTASKS_PER_NODE may read '4' or '4(x2)'; its leading count is this node's.
    const perNode = /^(\d+)/.exec(env.SLURM_NTASKS_PER_NODE ?? env.SLURM_TASKS_PER_NODE ?? '')?.[1];
    const localWorldSize = perNode !== undefined ? Number(perNode) : Math.ceil(worldSize / nodes);
    return checked({
      rank: integer(env, 'SLURM_PROCID', 0), worldSize,
      localRank: optionalInteger(env, 'SLURM_LOCALID', 0, 0), localWorldSize, source: 'slurm',
      masterPort: masterPort(env),
      masterAddr: masterAddr(env, nodes === 1, 'e.g. export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)'),
    });
  }
  return { rank: 0, worldSize: 1, localRank: 0, localWorldSize: 1, masterAddr: '127.0.0.1', masterPort: masterPort(env), source: 'none' };
}

/** How long a collective or the rendezvous may wait for peers: HB_COMM_TIMEOUT_MS, else 300000 (5 minutes). */
export function commTimeoutFromEnv(env: Env = process.env): number {
  const text = env.HB_COMM_TIMEOUT_MS;
  if (text === undefined || text === '') return 300_000;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1 || value > 2 ** 31 - 1) {
    throw new Error(`HB_COMM_TIMEOUT_MS must be a whole number of milliseconds in 1..2^31-1, got '${text}'`);
  }
  return value;
}
