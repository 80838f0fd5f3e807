// Where a process is in a job, from torchrun's, Open MPI's and SLURM's variables.
import { commTimeoutFromEnv, rendezvousFromEnv } from '../lib/distribute/rendezvous_env';

describe('rendezvousFromEnv', () => {
  test('nothing set: a world of one on loopback', () => {
    expect(rendezvousFromEnv({})).toEqual({ rank: 0, worldSize: 1, localRank: 0, localWorldSize: 1, masterAddr: '127.0.0.1', masterPort: 29500, source: 'none' });
  });

  test("torchrun's (and hb-ts launch's) variables", () => {
    expect(rendezvousFromEnv({ RANK: '5', WORLD_SIZE: '8', LOCAL_RANK: '1', LOCAL_WORLD_SIZE: '4', MASTER_ADDR: '10.0.0.7', MASTER_PORT: '1234' })).toEqual({
      rank: 5, worldSize: 8, localRank: 1, localWorldSize: 4, masterAddr: '10.0.0.7', masterPort: 1234, source: 'torchrun',
    });
    // one node: the local rank is the rank, and the master is on loopback
    expect(rendezvousFromEnv({ RANK: '1', WORLD_SIZE: '2' })).toMatchObject({ localRank: 1, localWorldSize: 2, masterAddr: '127.0.0.1', masterPort: 29500 });
  });

  test("Open MPI's variables", () => {
    expect(rendezvousFromEnv({ OMPI_COMM_WORLD_RANK: '3', OMPI_COMM_WORLD_SIZE: '4', OMPI_COMM_WORLD_LOCAL_RANK: '3', OMPI_COMM_WORLD_LOCAL_SIZE: '4' })).toEqual({
      rank: 3, worldSize: 4, localRank: 3, localWorldSize: 4, masterAddr: '127.0.0.1', masterPort: 29500, source: 'mpi',
    });
  });

  test("SLURM's variables", () => {
    expect(rendezvousFromEnv({ SLURM_PROCID: '6', SLURM_NTASKS: '8', SLURM_LOCALID: '2', SLURM_NNODES: '2', SLURM_NTASKS_PER_NODE: '4(x2)', MASTER_ADDR: 'node01' })).toEqual({
      rank: 6, worldSize: 8, localRank: 2, localWorldSize: 4, masterAddr: 'node01', masterPort: 29500, source: 'slurm',
    });
  });

  test('errors name the variable', () => {
    expect(() => rendezvousFromEnv({ RANK: '2', WORLD_SIZE: '2' })).toThrow("distribute: rank 2 is outside the world of 2 processes (ranks 0..1) (from torchrun's variables)");
    expect(() => rendezvousFromEnv({ RANK: 'one', WORLD_SIZE: '2' })).toThrow("distribute: RANK must be a non-negative integer, got 'one'");
    expect(() => rendezvousFromEnv({ RANK: '0' })).toThrow('distribute: WORLD_SIZE must be a non-negative integer, got nothing');
    expect(() => rendezvousFromEnv({ RANK: '0', WORLD_SIZE: '0' })).toThrow('distribute: WORLD_SIZE must be >= 1, got 0');
    expect(() => rendezvousFromEnv({ RANK: '0', WORLD_SIZE: '2', MASTER_PORT: '70000' })).toThrow('distribute: MASTER_PORT must be in 1..65535, got 70000');
    expect(() => rendezvousFromEnv({ RANK: '0', WORLD_SIZE: '4', LOCAL_WORLD_SIZE: '2' })).toThrow(/MASTER_ADDR must name rank 0's machine when the job spans several nodes/);
    expect(() => rendezvousFromEnv({ OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '4', OMPI_COMM_WORLD_LOCAL_SIZE: '2' })).toThrow(/mpirun -x MASTER_ADDR/);
    expect(() => rendezvousFromEnv({ SLURM_PROCID: '0', SLURM_NTASKS: '4', SLURM_NNODES: '2' })).toThrow(/scontrol show hostnames/);
    expect(() => rendezvousFromEnv({ RANK: '0', WORLD_SIZE: '2', LOCAL_RANK: '2', LOCAL_WORLD_SIZE: '2' })).toThrow('distribute: local rank 2 is outside the 2 local processes');
  });
});

describe('commTimeoutFromEnv', () => {
  test('HB_COMM_TIMEOUT_MS, else five minutes', () => {
    expect(commTimeoutFromEnv({})).toBe(300_000);
    expect(commTimeoutFromEnv({ HB_COMM_TIMEOUT_MS: '1500' })).toBe(1500);
    expect(() => commTimeoutFromEnv({ HB_COMM_TIMEOUT_MS: '1.5s' })).toThrow("HB_COMM_TIMEOUT_MS must be a whole number of milliseconds in 1..2^31-1, got '1.5s'");
    expect(() => commTimeoutFromEnv({ HB_COMM_TIMEOUT_MS: '0' })).toThrow(/got '0'/);
  });
});
