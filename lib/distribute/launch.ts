// `hb-ts launch`: starts this node's workers of a job with the rendezvous variables set
// (as torchrun does), prefixes each line they print with the rank, forwards SIGINT /
// SIGTERM, and when one worker fails stops the rest and reports which and how.
import { ChildProcess, spawn } from 'child_process';
import * as net from 'net';
import * as readline from 'readline';
import { backend } from '../backend';
import { DEFAULT_MASTER_PORT } from './rendezvous_env';

export interface LaunchOptions {
  nprocPerNode: number;
  nnodes?: number;
  nodeRank?: number;
  /** Rank 0's machine. Default 127.0.0.1 (one node). */
  masterAddr?: string;
  /** Default: a free port on one node, 29500 on several. */
  masterPort?: number;
  /** The program each worker runs with node (`process.execPath`), and its arguments. */
  script: string;
  args?: string[];
  /** Extra variables for the workers. */
  env?: NodeJS.ProcessEnv;
  /** Where prefixed lines go (default: process.stdout / process.stderr). */
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  /** How long workers get to exit after SIGTERM before SIGKILL. Default 10000 ms. */
  killGraceMs?: number;
  /** Forward this process's SIGINT / SIGTERM to the workers. Default true. */
  forwardSignals?: boolean;
}

export interface LaunchResult {
  /** What the launcher should exit with: 0 when every worker did, else the failed worker's code (128 + signal number when killed). */
  exitCode: number;
  /** The first worker that failed, if one did. */
  failed?: { rank: number; code: number | null; signal: NodeJS.Signals | null };
  /** Set when a forwarded signal stopped the job. */
  interruptedBy?: NodeJS.Signals;
}

function positiveInteger(value: number | undefined, name: string, min: number): number {
  if (value === undefined || !Number.isSafeInteger(value) || value < min) {
    throw new Error(`hb-ts launch: ${name} must be an integer >= ${min}, got ${value}`);
  }
  return value;
}

/** A port nothing listens on now, on `host` (a race with other programs is possible, as with torchrun's). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, host, () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

const SIGNAL_NUMBERS: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGABRT: 6, SIGKILL: 9, SIGSEGV: 11, SIGTERM: 15 };

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `was killed by ${signal}` : `exited with code ${code}`;
}

// Which GPU each local worker sees: the local rank's, counted within any
// CUDA_VISIBLE_DEVICES the launcher itself was given. None when there are no GPUs.
function visibleDevice(localRank: number, env: NodeJS.ProcessEnv): string | undefined {
  let count = 0;
  try {
    count = backend().cuda.deviceCount;
  } catch {
    return undefined;
  }
  if (count === 0) return undefined;
  const listed = env.CUDA_VISIBLE_DEVICES?.split(',').map((s) => s.trim()).filter(Boolean);
  if (listed && listed.length > 0) return listed[localRank % listed.length];
  return String(localRank % count);
}

/** Runs the job's workers on this node until they all exit, or one fails. */
export async function launch(options: LaunchOptions): Promise<LaunchResult> {
  const nproc = positiveInteger(options.nprocPerNode, '--nproc-per-node', 1);
  const nnodes = positiveInteger(options.nnodes ?? 1, '--nnodes', 1);
  const nodeRank = positiveInteger(options.nodeRank ?? 0, '--node-rank', 0);
  if (nodeRank >= nnodes) throw new Error(`hb-ts launch: --node-rank ${nodeRank} must be below --nnodes ${nnodes}`);
  if (typeof options.script !== 'string' || options.script === '') throw new Error('hb-ts launch: name the script each worker runs');
  const masterAddr = options.masterAddr ?? '127.0.0.1';
  const masterPort = options.masterPort ?? (nnodes === 1 ? await freePort(masterAddr) : DEFAULT_MASTER_PORT);
  positiveInteger(masterPort, '--master-port', 1);
  if (masterPort > 65535) throw new Error(`hb-ts launch: --master-port must be in 1..65535, got ${masterPort}`);
  const worldSize = nproc * nnodes;
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const grace = options.killGraceMs ?? 10_000;
  const baseEnv = { ...process.env, ...options.env };

  const workers: ChildProcess[] = [];
  const exits: Array<Promise<void>> = [];
  let result: LaunchResult = { exitCode: 0 };
  let stopping = false;
  let killTimer: NodeJS.Timeout | undefined;

  const stopAll = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill(signal);
    killTimer = setTimeout(() => {
      for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    }, grace);
    killTimer.unref();
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (!result.interruptedBy && !result.failed) result = { exitCode: 128 + (SIGNAL_NUMBERS[signal] ?? 15), interruptedBy: signal };
    stopAll(signal);
  };
  const forward = options.forwardSignals ?? true;
  if (forward) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }

  try {
    for (let localRank = 0; localRank < nproc; localRank++) {
      const rank = nodeRank * nproc + localRank;
      const env: NodeJS.ProcessEnv = {
        ...baseEnv,
        RANK: String(rank), WORLD_SIZE: String(worldSize), LOCAL_RANK: String(localRank), LOCAL_WORLD_SIZE: String(nproc),
        GROUP_RANK: String(nodeRank), NODE_RANK: String(nodeRank), MASTER_ADDR: masterAddr, MASTER_PORT: String(masterPort),
      };
      const gpu = visibleDevice(localRank, baseEnv);
      if (gpu !== undefined) env.CUDA_VISIBLE_DEVICES = gpu;
      const worker = spawn(process.execPath, [options.script, ...(options.args ?? [])], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      workers.push(worker);
      const prefix = `[rank ${rank}] `;
      const lines = [worker.stdout!, worker.stderr!].map((stream, i) => new Promise<void>((resolve) => {
        const reader = readline.createInterface({ input: stream, crlfDelay: Infinity });
        reader.on('line', (line) => (i === 0 ? stdout : stderr).write(prefix + line + '\n'));
        reader.on('close', resolve);
      }));
      exits.push(new Promise<void>((resolve) => {
        let settled = false;
        const done = (code: number | null, signal: NodeJS.Signals | null) => {
          if (settled) return;
          settled = true;
          const failed = code !== 0;
          if (failed && !result.failed && !result.interruptedBy && !stopping) {
            result = { exitCode: signal ? 128 + (SIGNAL_NUMBERS[signal] ?? 1) : (code ?? 1), failed: { rank, code, signal } };
            stderr.write(`hb-ts launch: rank ${rank} ${describeExit(code, signal)}; stopping the other workers\n`);
            stopAll('SIGTERM');
          }
          void Promise.all(lines).then(() => resolve());
        };
        worker.on('error', (error) => {
          stderr.write(`hb-ts launch: rank ${rank} could not start: ${error.message}\n`);
          done(127, null);
        });
        worker.on('exit', done);
      }));
    }
    await Promise.all(exits);
  } finally {
    if (killTimer) clearTimeout(killTimer);
    if (forward) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
  if (result.interruptedBy) stderr.write(`hb-ts launch: stopped by ${result.interruptedBy}\n`);
  return result;
}
