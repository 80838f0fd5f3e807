// One pass over a file-backed (or generated) source: cut the work into units, keep
// this partition's share (an equal span of the rows or bytes, partition_units.ts), hand
// the units to reader threads round-robin, and deliver their chunks unit by unit in the
// dataset's order, so the order (and a seeded shuffle after it) does not depend on how
// many threads read.
import * as os from 'node:os';
import * as path from 'node:path';
import { context, isInitialized } from '../distribute/process_group';
import type { Batch, Column } from './batch';
import { decodeChunk } from './decode_chunk';
import { partitionUnits, UnitMeasure } from './partition_units';
import { WorkerPool } from './pool';
import { ReaderKind, TRUNCATED } from './reader';
import type { UnitBase } from './wire';
import { shownValue } from '../shown_value';

/** What a pass has read so far (reset when a new pass starts). */
export interface DatasetStats {
  /** Rows delivered by the reader threads. */
  rows: number;
  /** Rows left out under skipCorrupted (bad TSV lines; every row of an undecodable Parquet row group). */
  skipped: number;
  /** Files left out whole under skipCorrupted (Parquet files whose footer cannot be read). */
  skippedFiles: number;
  /** The first few reasons, as the errors would have said them. */
  messages: string[];
}

export function newStats(): DatasetStats {
  return { rows: 0, skipped: 0, skippedFiles: 0, messages: [] };
}

export interface SourceOptions {
  /** Reader threads (default: os.availableParallelism()). */
  numWorkers?: number;
  /** Split the units between this many readers (processes or ranks)... Default: the world size in a job of several ranks (hb-ts launch's environment, or init()), else 1. */
  partitionCount?: number;
  /** ...and read share number partitionIndex (0-based). Default: this rank under a job, else 0. */
  partitionIndex?: number;
}

/** The options every source takes. */
export const SOURCE_OPTION_KEYS = ['numWorkers', 'partitionCount', 'partitionIndex'] as const satisfies ReadonlyArray<keyof SourceOptions>;

export interface SourcePlan {
  task: unknown;
  /** Every unit of the dataset in order; the same for every partition. */
  units: UnitBase[];
}

/**
 * What a reader needs to make a dataset: its options checked, and how to cut the work
 * into units. Each *_source.ts builds one; Dataset's static methods turn it into a Dataset.
 */
export interface SourceDescription {
  kind: ReaderKind;
  /** How the partitions share the units: by rows, or by bytes of a text file (partition_units.ts). */
  measure: UnitMeasure<UnitBase>;
  /** What `measure` counts, for messages ('rows', 'bytes'). */
  measuredIn: string;
  numWorkers: number;
  partitionCount: number;
  partitionIndex: number;
  /** Chunks a thread may have posted ahead of the consumer. */
  credits: number;
  labelField?: string | string[];
  plan(pool: WorkerPool, stats: DatasetStats): Promise<SourcePlan>;
}

// Reader threads left idle by a pass that read to the end or was stopped early, for the
// next pass over the same source (a repeat, the next epoch, the next evaluation). Taken
// out while a pass runs, so two passes at once never share threads; dropped with the
// source (the pool's own finalizer ends its threads).
const idlePools = new WeakMap<SourceDescription, WorkerPool>();

export async function* readSource(source: SourceDescription, stats: DatasetStats): AsyncGenerator<Batch<Column>> {
  Object.assign(stats, newStats());
  const kept = idlePools.get(source);
  idlePools.delete(source);
  // A kept thread that died while idle: start afresh rather than fail the pass.
  if (kept !== undefined && !kept.usable) await kept.close();
  const pool = kept?.usable ? kept : new WorkerPool(source.numWorkers);
  let readToTheEnd = false;
  let failed = false;
  let reading = 0; // threads sent a 'read'
  try {
    const { task, units } = await source.plan(pool, stats);
    const mine = partitionUnits(units, source.partitionCount, source.partitionIndex, source.measure);
    const total = mine.length === 0 ? units.reduce((n, u) => n + source.measure.size(u), 0) : 0;
    if (total > 0) {
      // More partitions than rows leave some with nothing, which would otherwise look like
      // an empty dataset (an empty input is empty for every partition, as for one).
      throw new Error(
        `hb.data: partition ${source.partitionIndex} of ${source.partitionCount} gets no rows: the input has only ${total} ${source.measuredIn} ` +
          `to share; use at most ${total} partitions`,
      );
    }
    const threads = Math.min(source.numWorkers, mine.length);
    for (let w = 0; w < threads; w++) {
      pool.send(w, { type: 'read', id: w, kind: source.kind, task, units: mine.filter((_, k) => k % threads === w), credits: source.credits });
      reading = w + 1;
    }
    for (let k = 0; k < mine.length; k++) {
      const w = k % threads;
      for (;;) {
        const message = await pool.receive(w);
        if (message.type === 'chunk') {
          pool.send(w, { type: 'credit', id: w, n: 1 });
          stats.rows += message.chunk.rows;
          if (message.chunk.rows > 0) yield decodeChunk(message.chunk, source.labelField);
        } else if (message.type === 'unitEnd') {
          stats.skipped += message.skipped;
          for (const why of message.why) if (stats.messages.length < 10) stats.messages.push(why);
          break;
        } else if (message.type === 'failed') {
          if (message.code === TRUNCATED) {
            throw readerError({ ...message, message: `${message.message}; the pass had read ${stats.rows} row${stats.rows === 1 ? '' : 's'} when it stopped there` });
          }
          throw readerError(message);
        } else {
          throw new Error(`hb.data: unexpected '${message.type}' from a reader thread`);
        }
      }
    }
    // Each thread ends its share with 'done': awaited, so the next pass starts from quiet threads.
    for (let w = 0; w < threads; w++) {
      const message = await pool.receive(w);
      if (message.type !== 'done') throw new Error(`hb.data: unexpected '${message.type}' from a reader thread at the end of a pass`);
    }
    readToTheEnd = true;
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    if (readToTheEnd && !idlePools.has(source)) idlePools.set(source, pool);
    else if (!readToTheEnd && !failed && reading > 0 && pool.usable) {
      const stopping = keepAfterStopping(source, pool, reading);
      stopping.finally(() => stoppingPools.delete(stopping));
      stoppingPools.add(stopping);
    }
    else await pool.close();
  }
}

const stoppingPools = new Set<Promise<void>>();

/** @internal Settles when the threads of passes stopped early so far are kept or ended (tests). */
export async function stopsSettled(): Promise<void> {
  await Promise.all([...stoppingPools]);
}

// How long a pass stopped early waits for its threads to stop before ending them instead.
const STOP_WAIT_MS = 2000;

/**
 * A pass the consumer stopped early (an evaluation of some steps, a `take`): its threads
 * are mid-unit with chunks on their way. Each is told to stop after the chunk at hand and
 * what it sent is dropped up to its 'stopped'; then they wait for the next pass over the
 * same source, as after a pass read to the end (a new thread costs 25-30 ms to start on a
 * 2-vCPU VM, an evaluation of 20 batches 40 ms). In the background: the consumer does not
 * wait for it; a pass that starts meanwhile takes new threads. Threads that do not stop in
 * STOP_WAIT_MS, or fail, are ended.
 */
async function keepAfterStopping(source: SourceDescription, pool: WorkerPool, threads: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    for (let w = 0; w < threads; w++) pool.send(w, { type: 'stop', id: w });
    const drained = Promise.all(
      Array.from({ length: threads }, async (_, w) => {
        // Not holding the process: one that has nothing else to do exits meanwhile.
        for (;;) if ((await pool.receive(w, false)).type === 'stopped') return true;
      }),
    );
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), STOP_WAIT_MS);
      timer.unref();
    });
    if ((await Promise.race([drained, late])) && pool.usable && !idlePools.has(source)) {
      idlePools.set(source, pool);
      return;
    }
  } catch {
    // A thread failed or exited: ended below.
  } finally {
    clearTimeout(timer);
  }
  await pool.close();
}

/** A reader thread's failure as the error it was: its class (TypeError, RangeError) and code kept. */
function readerError(failed: { message: string; name: string; code?: string }): Error {
  const error = failed.name === 'TypeError' ? new TypeError(failed.message) : failed.name === 'RangeError' ? new RangeError(failed.message) : new Error(failed.message);
  if (failed.code !== undefined) (error as Error & { code?: string }).code = failed.code;
  return error;
}

/** Asks the pool's threads for each file's plan, in parallel, in file order. */
export async function planFiles<T>(pool: WorkerPool, kind: ReaderKind, files: string[], task: unknown): Promise<T[]> {
  const threads = Math.max(1, Math.min(pool.size, files.length));
  const results: T[] = new Array(files.length);
  const perThread = Array.from({ length: threads }, (_, w) => files.map((_, i) => i).filter((i) => i % threads === w));
  await Promise.all(
    perThread.map(async (indices, w) => {
      for (const i of indices) {
        pool.send(w, { type: 'plan', id: i, kind, file: files[i], task });
        const message = await pool.receive(w);
        if (message.type === 'failed') throw readerError(message);
        if (message.type !== 'planned') throw new Error(`hb.data: unexpected '${message.type}' from a reader thread`);
        results[i] = message.result as T;
      }
    }),
  );
  return results;
}

function integerOption(value: unknown, fallback: number, min: number, argument: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') throw new TypeError(`${argument} must be an integer >= ${min}, got ${shownValue(value)}`);
  if (!Number.isInteger(value) || value < min) throw new RangeError(`${argument} must be an integer >= ${min}, got ${shownValue(value)}`);
  return value;
}

/**
 * The job hb-ts launch (or torchrun) started this process in, from RANK and WORLD_SIZE
 * alone, before it joins: nothing else of the environment is needed to split a dataset,
 * and a malformed one (or a scheduler's allocation a plain script runs in) splits nothing.
 */
function launchedJob(): { worldSize: number; rank: number } | undefined {
  const worldSize = Number(process.env.WORLD_SIZE);
  const rank = Number(process.env.RANK);
  if (!Number.isSafeInteger(worldSize) || worldSize < 2 || !Number.isSafeInteger(rank) || rank < 0 || rank >= worldSize) return undefined;
  return { worldSize, rank };
}

/** numWorkers, partitionCount and partitionIndex, checked; `where` names the caller in errors. */
export function sourceOptions(options: SourceOptions & { blockRows?: number }, where: string): { numWorkers: number; partitionCount: number; partitionIndex: number; blockRows: number } {
  const numWorkers = integerOption(options.numWorkers, os.availableParallelism(), 1, `${where}: numWorkers`);
  // Under a job each rank reads its own share unless told otherwise, as HybridBackend's
  // datasets do: the job joined, or the one hb-ts launch started this process in, so a
  // dataset made before the Estimator or a session joins it is split too.
  const job = options.partitionCount === undefined && options.partitionIndex === undefined ? (isInitialized() ? context() : launchedJob()) : undefined;
  const inJob = job !== undefined && job.worldSize > 1;
  const partitionCount = integerOption(options.partitionCount, inJob ? job.worldSize : 1, 1, `${where}: partitionCount`);
  const partitionIndex = integerOption(options.partitionIndex, inJob ? job.rank : 0, 0, `${where}: partitionIndex`);
  if (partitionIndex >= partitionCount) {
    throw new RangeError(`${where}: partitionIndex ${partitionIndex} must be below partitionCount ${partitionCount}`);
  }
  const blockRows = integerOption(options.blockRows, 8192, 1, `${where}: blockRows`);
  return { numWorkers, partitionCount, partitionIndex, blockRows };
}

export function fileList(files: unknown, where: string): string[] {
  const list = typeof files === 'string' ? [files] : files;
  if (!Array.isArray(list) || list.length === 0 || !list.every((f) => typeof f === 'string' && f.length > 0)) {
    const message = `${where}: files must be a path or a non-empty array of paths`;
    throw Array.isArray(list) && list.every((f) => typeof f === 'string') ? new Error(message) : new TypeError(message);
  }
  return list.map((f) => path.resolve(f));
}
