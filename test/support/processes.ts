// Child processes for the multi-process tests: each runs in a process group of its own,
// bounded in time, and every group still alive is killed when the file's tests end
// (afterAll), also when a test failed half-way.
import { ChildProcess, spawn } from 'child_process';
import * as path from 'path';

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface Running {
  child: ChildProcess;
  done: Promise<Finished>;
  /** Resolves when stdout has printed a line containing `text`. */
  printed(text: string): Promise<void>;
}

const live = new Set<ChildProcess>();

export const repoRoot = path.resolve(__dirname, '..', '..');
export const cliPath = path.join(repoRoot, 'bin', 'hb-ts.js');
export const workerPath = path.join(repoRoot, 'test', 'fixtures', 'distribute', 'worker.js');

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** Starts `node args...`; killed (with its whole process group) after `timeoutMs`. */
export function startNode(args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Running {
  const started = Date.now();
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...options.env },
    detached: true, // its own process group, so the launcher's workers die with it
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let stdout = '';
  let stderr = '';
  const watchers: Array<{ text: string; resolve: () => void }> = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    for (const w of watchers.splice(0)) (stdout.includes(w.text) ? w.resolve : () => watchers.push(w))();
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => killGroup(child, 'SIGKILL'), options.timeoutMs ?? 60_000);
  const done = new Promise<Finished>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      live.delete(child);
      killGroup(child, 'SIGKILL'); // workers the launcher left behind, if any
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
  return {
    child,
    done,
    printed: (text) => new Promise<void>((resolve) => (stdout.includes(text) ? resolve() : watchers.push({ text, resolve }))),
  };
}

export function runNode(args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Finished> {
  return startNode(args, options).done;
}

/** Kills every process group still running. For afterAll. */
export function killAll(): void {
  for (const child of live) killGroup(child, 'SIGKILL');
  live.clear();
}

/** The `RESULT {...}` each worker printed, by rank (lines prefixed `[rank N] ` by the launcher, or not). */
export function resultsByRank(stdout: string): Map<number, any> {
  const results = new Map<number, any>();
  for (const line of stdout.split('\n')) {
    const m = /^(?:\[rank (\d+)\] )?RESULT (.*)$/.exec(line);
    if (m) results.set(m[1] === undefined ? -1 : Number(m[1]), JSON.parse(m[2]));
  }
  return results;
}
