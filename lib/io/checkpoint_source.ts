// A checkpoint as something to restore from, whatever wrote it: one process's single file,
// or a job's shards and the layout that lists them. Every tensor is described whole (a
// table's logical shape), and is read into a whole tensor or into the shard a rank of any
// world size holds (rows x with x floormod W' = rank, at x floordiv W'): a checkpoint
// written by W ranks restores into W' ranks, or into one process, with the same logical
// tables. Opening one checks every file's header and that the shards are the ones the
// layout names, then verifies each whole file (SHA-256), so nothing loads half; or, with
// verifyWhileReading, hashes the files as the reads go and verifies at verified().
//
// The layout a job writes (model.ckpt-<step>.sharded.json), rank 0 once every shard is
// durable:
//   { format: 'hb-ts-sharded/1', globalStep, worldSize, ownerRule: 'row floormod worldSize',
//     shards: [{ file, sha256, bytes }, ...one per rank],
//     tensors: { name: { dtype, shape (whole), layout: 'whole' (in shard 0's file) |
//                        'sharded' (rank r's rows in shard r's file) } },
//     metadata }
import { promises as fsp } from 'fs';
import * as path from 'path';
import { shardRows } from '../embedding/placement';
import { native, NativeTensorHandle } from '../native';
import { checkpointItemSize, CheckpointDType, hostZeros, isCheckpointDType, isShardedLayoutName, listCheckpoints, shardFileName, sweepKilledSaves } from './checkpoint_file';
import { VerifiedReads } from './verified_reads';

/**
 * A delta checkpoint names its base (the file the manifest lists for it) in its metadata:
 * it holds every item whole but the dynamic tables, which hold the rows changed since the
 * base and the ids removed since. Deltas are cumulative: each is against the last full
 * checkpoint, so a restore reads the base, then the newest delta, and no chain between.
 */
export const DELTA_BASE_KEY = 'hb_delta_base';

export function deltaBaseOf(source: { metadata: Record<string, string> }): string | undefined {
  return source.metadata[DELTA_BASE_KEY];
}

export const SHARDED_FORMAT = 'hb-ts-sharded/1';
export const OWNER_RULE = 'row floormod worldSize';

export interface CheckpointTensorInfo {
  name: string;
  dtype: CheckpointDType;
  /** The whole tensor's shape (a sharded table's logical rows). */
  shape: number[];
  /**
   * 'sharded': saved as the shards of the ranks that wrote it; 'concat': each rank's own
   * rows, any number (a dynamic table's), read as all of them one after the other.
   */
  layout: 'whole' | 'sharded' | 'concat';
}

/** Which rows of a table a rank holds: row j is the table's row j * worldSize + rank. */
export interface ShardSpec {
  worldSize: number;
  rank: number;
}

export interface CheckpointSource {
  /** The file the manifest lists (a single file, or a job's layout). */
  readonly path: string;
  readonly globalStep: number;
  /** The ranks that wrote it (1: one process). */
  readonly worldSize: number;
  readonly metadata: Record<string, string>;
  readonly entries: ReadonlyMap<string, CheckpointTensorInfo>;
  /**
   * Reads tensor `name` into `target` (natively, queued on its device): the whole tensor,
   * or with `shard` the rows that shard holds. The target's shape must be the whole
   * tensor's, or with `shard` that shard's rows of it.
   */
  read(name: string, target: NativeTensorHandle, shard?: ShardSpec): Promise<void>;
  /**
   * Resolves once every file of it matched its SHA-256 (at once, unless opened with
   * verifyWhileReading); rejects with an Error naming the file otherwise.
   */
  verified(): Promise<void>;
}

export interface OpenOptions {
  /**
   * Check only the headers when opening, and hash each file as it is read (one pass over
   * it, not two): nothing read may be used until verified() resolves, and when it rejects
   * everything read must be read again from another checkpoint. Default false: every
   * file is verified before open resolves.
   */
  verifyWhileReading?: boolean;
}

export interface ShardedLayout {
  format: string;
  globalStep: number;
  worldSize: number;
  ownerRule: string;
  shards: Array<{ file: string; sha256: string; bytes: number }>;
  tensors: Record<string, { dtype: CheckpointDType; shape: number[]; layout: 'whole' | 'sharded' | 'concat' }>;
  metadata: Record<string, string>;
}

// Saved rows go through host memory in pieces of about this size when they are re-sharded.
const RESHARD_CHUNK_BYTES = 64 * 1024 * 1024;

/** Opens (and verifies, see OpenOptions) the checkpoint the manifest lists as `file`. */
export async function openCheckpoint(file: string, options: OpenOptions = {}): Promise<CheckpointSource> {
  const source = isShardedLayoutName(path.basename(file)) ? await openSharded(file) : await openSingle(file);
  if (!options.verifyWhileReading) await source.verified();
  return source;
}

/**
 * The newest checkpoint of modelDir that opens (with `open`, by default openCheckpoint,
 * verified), falling back to older ones; `skipped` lists the refused ones, newest first,
 * with why. undefined when there is none; throws when there are some and none opens
 * (starting from scratch would train over the model). Also removes the temp files of
 * killed saves.
 */
export async function latestCheckpointSource(
  modelDir: string,
  open: (file: string) => Promise<CheckpointSource> = openCheckpoint,
): Promise<{ source: CheckpointSource; skipped: Array<{ path: string; error: string }> } | undefined> {
  await sweepKilledSaves(modelDir);
  const listed = await listCheckpoints(modelDir);
  const skipped: Array<{ path: string; error: string }> = [];
  for (const candidate of listed.reverse()) {
    try {
      return { source: await open(candidate.path), skipped };
    } catch (err) {
      skipped.push({ path: candidate.path, error: err instanceof Error ? err.message : String(err) });
    }
  }
  if (skipped.length === 0) return undefined;
  throw new Error(`No usable checkpoint in ${modelDir}:\n` + skipped.map((s) => `  ${s.error}`).join('\n'));
}

async function openSingle(file: string): Promise<CheckpointSource> {
  const reads = await VerifiedReads.open(file);
  const { header } = reads;
  const entries = new Map<string, CheckpointTensorInfo>();
  for (const e of header.entries.values()) entries.set(e.name, { name: e.name, dtype: e.dtype, shape: e.shape, layout: 'whole' });
  return {
    path: file,
    globalStep: header.globalStep,
    worldSize: 1,
    metadata: header.metadata,
    entries,
    read: async (name, target, shard) => {
      if (!shard || shard.worldSize === 1) return readPart(reads, name, target, { worldSize: 1, rank: 0 }, shard, entries);
      await throughHost(target, (host) => readPart(reads, name, host, { worldSize: 1, rank: 0 }, shard, entries));
    },
    verified: () => reads.verified(),
  };
}

/**
 * Re-sharded rows are put together in host memory (the kernel that moves them runs
 * there), then copied to `target` once when it lives on a GPU.
 */
async function throughHost(target: NativeTensorHandle, fill: (host: NativeTensorHandle) => Promise<void>): Promise<void> {
  if (target.device === 'cpu') return fill(target);
  const host = hostZeros(target.dtype as CheckpointDType, target.shape as number[]);
  try {
    await fill(host);
    await native.tensorAssign(target, host);
  } finally {
    host.dispose();
  }
}

async function openSharded(file: string): Promise<CheckpointSource> {
  let layout: ShardedLayout;
  try {
    layout = JSON.parse(await fsp.readFile(file, 'utf8')) as ShardedLayout;
  } catch (err) {
    throw new Error(`Checkpoint ${file}: its layout cannot be read (${(err as Error).message})`);
  }
  const dir = path.dirname(file);
  checkLayout(layout, file);
  const W = layout.worldSize;
  const files: VerifiedReads[] = [];
  for (let r = 0; r < W; r++) {
    const shard = layout.shards[r];
    const shardPath = path.join(dir, shard.file);
    const stat = await fsp.stat(shardPath).catch(() => undefined);
    if (!stat?.isFile()) throw new Error(`Checkpoint ${file}: shard ${r} of ${W} (${shard.file}) is missing`);
    let reads: VerifiedReads;
    try {
      reads = await VerifiedReads.open(shardPath);
    } catch (err) {
      throw new Error(`Checkpoint ${file}: shard ${r} of ${W} is corrupt: ${(err as Error).message}`);
    }
    const { header } = reads;
    if (header.sha256 !== shard.sha256 || stat.size !== shard.bytes || header.globalStep !== layout.globalStep) {
      throw new Error(`Checkpoint ${file}: shard ${r} of ${W} (${shard.file}) is not the file the layout names (another save's?)`);
    }
    files.push(reads);
  }
  const headers = files.map((f) => f.header);
  // Everything the files hold is in the layout (nothing dropped from it), and rank 0's
  // file carries the layout's metadata (nothing edited in it).
  for (let r = 0; r < W; r++) {
    for (const name of headers[r].entries.keys()) {
      const t = layout.tensors[name];
      if (t?.layout === 'concat') continue;
      if (!t || (t.layout === 'whole' && r > 0)) throw new Error(`Checkpoint ${file}: shard ${r} of ${W} holds '${name}', which its layout does not list there`);
    }
  }
  if (JSON.stringify(sortedEntries(headers[0].metadata)) !== JSON.stringify(sortedEntries(layout.metadata))) {
    throw new Error(`Checkpoint ${file}: its layout's metadata differs from what shard 0 recorded`);
  }
  const entries = new Map<string, CheckpointTensorInfo>();
  const concatRows = new Map<string, number[]>();
  for (const [name, t] of Object.entries(layout.tensors)) {
    if (t.layout === 'concat') {
      // Each shard's own rows, the rest of the shape the layout's.
      const rows = headers.map((h, r) => {
        const entry = h.entries.get(name);
        if (!entry || entry.dtype !== t.dtype || entry.shape.length !== t.shape.length || entry.shape.slice(1).join() !== t.shape.slice(1).join()) {
          throw new Error(`Checkpoint ${file}: shard ${r} of ${W} does not hold '${name}' as ${t.dtype} [n, ${t.shape.slice(1)}] as its layout says`);
        }
        return entry.shape[0];
      });
      concatRows.set(name, rows);
      entries.set(name, { name, dtype: t.dtype, shape: [rows.reduce((a, b) => a + b, 0), ...t.shape.slice(1)], layout: 'concat' });
      continue;
    }
    entries.set(name, { name, dtype: t.dtype, shape: t.shape, layout: t.layout });
    // Every shard holds what the layout says, so a read never finds less.
    for (let r = 0; r < W; r++) {
      if (t.layout === 'whole' && r > 0) break;
      const entry = headers[r].entries.get(name);
      const rows = t.layout === 'whole' ? t.shape[0] : shardRows(t.shape[0], W, r);
      const expected = t.shape.length === 0 ? [] : [rows, ...t.shape.slice(1)];
      if (!entry || entry.dtype !== t.dtype || entry.shape.join() !== expected.join()) {
        throw new Error(`Checkpoint ${file}: shard ${r} of ${W} does not hold '${name}' as ${t.dtype} [${expected}] as its layout says`);
      }
    }
  }
  return {
    path: file,
    globalStep: layout.globalStep,
    worldSize: W,
    metadata: layout.metadata,
    entries,
    read: async (name, target, shard) => {
      const info = entries.get(name);
      if (!info) throw new Error(`Checkpoint ${file} has no '${name}'`);
      const whole = { worldSize: 1, rank: 0 };
      if (info.layout === 'concat') {
        if (shard || target.device !== 'cpu' || (target.shape as number[]).join() !== info.shape.join()) {
          throw new Error(`Checkpoint ${file}: '${name}' is read whole ([${info.shape}]) into host memory, not into [${target.shape}] on ${target.device}`);
        }
        const rows = concatRows.get(name)!;
        let at = 0;
        for (let r = 0; r < W; r++) {
          if (rows[r] > 0) await files[r].loadRows(name, target, { rowBegin: 0, rowEnd: rows[r], targetRowBegin: at });
          at += rows[r];
        }
        return;
      }
      if (info.layout === 'whole') {
        if (!shard || shard.worldSize === 1) return readPart(files[0], name, target, whole, shard, entries);
        return throughHost(target, (host) => readPart(files[0], name, host, whole, shard, entries));
      }
      // A shard of the same world reads its own file as it is; any other reads the rows
      // it needs out of every file.
      if (shard && shard.worldSize === W) return readPart(files[shard.rank], name, target, shard, shard, entries);
      await throughHost(target, async (host) => {
        for (let r = 0; r < W; r++) await readPart(files[r], name, host, { worldSize: W, rank: r }, shard, entries);
      });
    },
    verified: async () => {
      for (let r = 0; r < W; r++) {
        try {
          await files[r].verified();
        } catch (err) {
          throw new Error(`Checkpoint ${file}: shard ${r} of ${W} is corrupt: ${(err as Error).message}`);
        }
      }
    },
  };
}

function sortedEntries(record: Record<string, string>): Array<[string, string]> {
  return Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function checkLayout(layout: ShardedLayout, file: string): void {
  const bad = (what: string) => new Error(`Checkpoint ${file}: its layout ${what}`);
  const isCount = (v: unknown, min: number) => Number.isSafeInteger(v) && (v as number) >= min;
  if (layout === null || typeof layout !== 'object') throw bad('is not a JSON object');
  if (layout.format !== SHARDED_FORMAT) throw bad(`has format ${JSON.stringify(layout.format)}, not '${SHARDED_FORMAT}'`);
  if (layout.ownerRule !== OWNER_RULE) throw bad(`has owner rule ${JSON.stringify(layout.ownerRule)}; this hb-ts reads '${OWNER_RULE}'`);
  if (!isCount(layout.globalStep, 0) || !isCount(layout.worldSize, 1)) throw bad('has no valid globalStep or worldSize');
  const expectedName = `model.ckpt-${layout.globalStep}.sharded.json`;
  if (path.basename(file) !== expectedName) throw bad(`is for step ${layout.globalStep}, not the step its name says`);
  if (!Array.isArray(layout.shards) || layout.shards.length !== layout.worldSize) throw bad(`lists ${layout.shards?.length} shards for a world of ${layout.worldSize}`);
  layout.shards.forEach((s, r) => {
    // Only our own names: nothing in an edited layout can point outside modelDir.
    if (s?.file !== shardFileName(layout.globalStep, r, layout.worldSize)) throw bad(`names shard ${r} ${JSON.stringify(s?.file)}`);
    if (typeof s.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(s.sha256) || !isCount(s.bytes, 1)) throw bad(`has no valid hash or size for shard ${r}`);
  });
  if (layout.tensors === null || typeof layout.tensors !== 'object') throw bad('has no tensors');
  for (const [name, t] of Object.entries(layout.tensors)) {
    const shapeOk = Array.isArray(t?.shape) && t.shape.every((d, i) => isCount(d, 0) || (i === 0 && d === -1 && t.layout === 'concat'));
    if (!shapeOk || !isCheckpointDType(t.dtype) || (t.layout !== 'whole' && t.layout !== 'sharded' && t.layout !== 'concat') || (t.layout === 'sharded' && t.shape.length === 0)) {
      throw bad(`describes '${name}' wrongly`);
    }
  }
  if (layout.metadata === null || typeof layout.metadata !== 'object' || Object.values(layout.metadata).some((v) => typeof v !== 'string')) throw bad('has bad metadata');
}

/**
 * Reads `name`, saved in `file` as the rows of shard `saved` (worldSize 1: the whole
 * tensor), into `target`: the whole tensor, or shard `wanted`'s rows of it.
 */
async function readPart(
  reads: VerifiedReads,
  name: string,
  target: NativeTensorHandle,
  saved: ShardSpec,
  wanted: ShardSpec | undefined,
  entries: ReadonlyMap<string, CheckpointTensorInfo>,
): Promise<void> {
  const { file, header } = reads;
  const info = entries.get(name);
  const entry = header.entries.get(name);
  if (!info || !entry) throw new Error(`Checkpoint ${file} has no '${name}'`);
  const into = wanted ?? { worldSize: 1, rank: 0 };
  const whole = info.shape;
  const expected = whole.length === 0 ? [] : [shardRows(whole[0], into.worldSize, into.rank), ...whole.slice(1)];
  if ((target.shape as number[]).join() !== expected.join()) {
    const what = wanted && wanted.worldSize > 1 ? `rank ${wanted.rank} of ${wanted.worldSize}'s rows of it ([${expected}])` : `it whole ([${expected}])`;
    throw new Error(`Checkpoint ${file}: '${name}' is [${whole}] but the target is [${target.shape}], not ${what}`);
  }
  if (saved.worldSize === into.worldSize && saved.rank === into.rank) return reads.loadRows(name, target);
  // Rows re-sharded through host memory, a piece at a time.
  const rows = entry.shape[0];
  const width = entry.shape.slice(1).reduce((a, b) => a * b, 1);
  const chunk = Math.max(1, Math.floor(RESHARD_CHUNK_BYTES / Math.max(1, width * checkpointItemSize(entry.dtype))));
  for (let begin = 0; begin < rows; begin += chunk) {
    const count = Math.min(chunk, rows - begin);
    const shape = [count, ...entry.shape.slice(1)];
    const piece = hostZeros(entry.dtype, shape);
    await reads.loadRows(name, piece, { rowBegin: begin, rowEnd: begin + count });
    await native.kernelRun('reshard_rows', [piece], [target], {
      fromWorld: saved.worldSize,
      fromRank: saved.rank,
      toWorld: into.worldSize,
      toRank: into.rank,
      firstRow: begin,
    }, `restore '${name}'`);
    piece.dispose();
  }
}
