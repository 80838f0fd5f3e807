// Checkpoint files, as the Estimator and embedding tables write and read them: one
// safetensors file per saved step plus a small JSON manifest (checkpoint.json) naming
// them, oldest first, the way TensorFlow's `checkpoint` state file does. A job of W ranks
// saves one safetensors file per rank (model.ckpt-<step>.shard-<r>-of-<W>.safetensors)
// and a layout (model.ckpt-<step>.sharded.json, lib/io/checkpoint_source.ts) that the
// manifest names once every shard is durable. Every file is written to a temporary name, fsynced and
// renamed into place, and the manifest changes only after the checkpoint it names is
// durable, so a crash at any moment leaves either the previous or the new state.
//
// Native tensors are streamed in row ranges by the addon (tensorWriteRows /
// tensorReadRows), so a table never passes through the JS heap whole. One digest covers
// the whole file, header included, with the 64 characters that record it read as zeros: a
// header is as much the model as the data (swapped names or offsets, an edited global step
// or optimizer state would load silently otherwise). It is the SHA-256 of the SHA-256s of
// the file's 4 MiB pieces (format hb-ts/3), hashed on every thread at once; files of
// hb-ts/2, whose digest is one SHA-256 stream over the file, are still read. The header
// and typed arrays are hashed as they are written, native rows by the addon as it writes
// them (lib/io/file_digest.ts: OpenSSL's, found in the process), their page-aligned
// stretches written around the page cache. Without the addon's digest, node's crypto
// hashes the rows read back in small pieces right after they were written, through the
// page cache, where they still are.
import { randomBytes } from 'crypto';
import { promises as fsp } from 'fs';
import type { FileHandle } from 'fs/promises';
import * as os from 'os';
import * as path from 'path';
import { native, NativeSha256, NativeTensorHandle } from '../native';
import { DigestKind, FileDigest, newFileDigest } from './file_digest';
import { shownValue } from '../shown_value';

export type CheckpointDType = 'float32' | 'float64' | 'int32' | 'int64';

type TypedArray = Float32Array | Float64Array | Int32Array | BigInt64Array;

/** Rows [rowBegin, rowEnd) of a native tensor (all rows by default), saved without a JS copy. */
export interface NativeRowSource {
  tensor: NativeTensorHandle;
  rowBegin?: number;
  rowEnd?: number;
}

export interface CheckpointTensor<Data extends TypedArray | NativeRowSource = TypedArray | NativeRowSource> {
  name: string;
  dtype: CheckpointDType;
  /** The shape of the saved values: for a native source, of the rows saved. */
  shape: number[];
  data: Data;
}

export interface CheckpointInfo {
  /** Path of the .safetensors file. */
  path: string;
  globalStep: number;
}

export interface LoadedCheckpoint {
  globalStep: number;
  tensors: Map<string, CheckpointTensor<TypedArray>>;
  /** The caller's metadata as saved; the reserved keys are not included. */
  metadata: Record<string, string>;
}

export interface LatestCheckpoint extends LoadedCheckpoint {
  path: string;
  /** Newer checkpoints that were refused, newest first, with the reason. */
  skipped: Array<{ path: string; error: string }>;
}

/** One tensor as the header describes it. */
export interface CheckpointEntry {
  name: string;
  dtype: CheckpointDType;
  shape: number[];
  /** Byte offsets in the data section: the tensor lies at dataStart + begin .. dataStart + end. */
  begin: number;
  end: number;
}

/** A checkpoint's validated header: what is where, read without the data. */
export interface CheckpointHeader {
  globalStep: number;
  /** The caller's metadata as saved; the reserved keys are not included. */
  metadata: Record<string, string>;
  /** By name, in data order. */
  entries: Map<string, CheckpointEntry>;
  /** File position of the data section. */
  dataStart: number;
  /** Byte length of the data section (the rest of the file). */
  dataLength: number;
  /** The file's digest (lowercase hex, see digestKind) as the writer recorded it, computed with these 64 characters as zeros. */
  sha256: string;
  /** How that digest is taken: over 4 MiB pieces' digests (hb-ts/3), or one stream (hb-ts/2). */
  digestKind: DigestKind;
}

export interface ValidCheckpoint {
  path: string;
  header: CheckpointHeader;
  /** Newer checkpoints that were refused, newest first, with the reason. */
  skipped: Array<{ path: string; error: string }>;
}

type TypedArrayClass = { new (length: number): TypedArray; readonly BYTES_PER_ELEMENT: number };

const DTYPES: Record<CheckpointDType, { code: string; itemSize: number; array: TypedArrayClass }> = {
  float32: { code: 'F32', itemSize: 4, array: Float32Array },
  float64: { code: 'F64', itemSize: 8, array: Float64Array },
  int32: { code: 'I32', itemSize: 4, array: Int32Array },
  int64: { code: 'I64', itemSize: 8, array: BigInt64Array },
};
const DTYPE_BY_CODE = new Map(Object.entries(DTYPES).map(([dtype, d]) => [d.code, dtype as CheckpointDType]));

const FORMAT = 'hb-ts/3';
// Its digest is one SHA-256 stream over the file (FORMAT's is over 4 MiB pieces' digests,
// lib/io/file_digest.ts): still read, verified its own way.
const STREAM_DIGEST_FORMAT = 'hb-ts/2';
// Its checksum covered the data only, so nothing can tell an edited header from a good
// one: such files are refused rather than trusted.
const DATA_ONLY_CHECKSUM_FORMAT = 'hb-ts/1';
// The digest is the header's first value, at a fixed place, so a reader blanks exactly
// those bytes before hashing without having to trust anything the JSON says first.
const DIGEST_LEAD = Buffer.from('{"__metadata__":{"sha256":"', 'utf8');
const DIGEST_AT = 8 + DIGEST_LEAD.length;
const DIGEST_CHARS = 64;
const BLANK_DIGEST = '0'.repeat(DIGEST_CHARS);
const RESERVED_METADATA_KEYS = ['global_step', 'sha256', 'format'];
const MANIFEST = 'checkpoint.json';
// Exactly the names we write (no leading zeros), so a name and a step map one to one
// and nothing in a tampered manifest can point outside the model directory.
const CHECKPOINT_NAME = /^model\.ckpt-(0|[1-9][0-9]*)\.(?:safetensors|sharded\.json)$/;
// A rank's file of a job's checkpoint: listed only through its step's layout.
const SHARD_NAME = /^model\.ckpt-(0|[1-9][0-9]*)\.shard-(0|[1-9][0-9]*)-of-([1-9][0-9]*)\.safetensors$/;
// The temporary names writeAtomically gives the kinds of file it writes here, and
// nothing else: a stale-file sweep must never touch what another program put in modelDir.
const TEMP_NAME =
  /^\.(?:model\.ckpt-(?:0|[1-9][0-9]*)\.(?:safetensors|sharded\.json|shard-(?:0|[1-9][0-9]*)-of-[1-9][0-9]*\.safetensors)|checkpoint\.json)\.tmp-([1-9][0-9]{0,9})-[0-9a-f]{12}$/;
// The reference implementation refuses headers above 100 MB; a larger length is a
// corrupt prefix, and trusting it would mean allocating whatever it says.
const MAX_HEADER_BYTES = 100_000_000;
// Reads and writes go in pieces: a single call is capped near 2 GiB, and chunks let the
// hash advance alongside the I/O.
const IO_CHUNK = 64 * 1024 * 1024;
// Bytes read back to be hashed go through one buffer of this size: small enough that a
// hash step (a few ms) never holds the event loop long.
const HASH_CHUNK = 4 * 1024 * 1024;
// Directory fsync is impossible on some platforms (Windows, some network filesystems);
// there the rename is as durable as that platform makes it.
const DIR_FSYNC_UNSUPPORTED = new Set(['EISDIR', 'EINVAL', 'EPERM', 'EBADF', 'ENOTSUP']);

/** Whether a checkpoint can hold values of `dtype`. */
export function isCheckpointDType(dtype: unknown): dtype is CheckpointDType {
  return typeof dtype === 'string' && Object.prototype.hasOwnProperty.call(DTYPES, dtype);
}

/** Bytes per value of `dtype`. */
export function checkpointItemSize(dtype: CheckpointDType): number {
  return DTYPES[dtype].itemSize;
}

/** A host tensor of zeros of `dtype` and `shape`: where saved rows are read into before they move on. */
export function hostZeros(dtype: CheckpointDType, shape: number[]): NativeTensorHandle {
  return native.tensorFromTypedArray(new DTYPES[dtype].array(shape.reduce((a, b) => a * b, 1)), shape, 'cpu');
}

export function checkpointFileName(globalStep: number): string {
  return `model.ckpt-${globalStep}.safetensors`;
}

/** Rank `rank`'s file of the checkpoint a job of `worldSize` ranks saves at `globalStep`. */
export function shardFileName(globalStep: number, rank: number, worldSize: number): string {
  return `model.ckpt-${globalStep}.shard-${rank}-of-${worldSize}.safetensors`;
}

/** The layout of the checkpoint a job saves at `globalStep`: what the manifest lists. */
export function shardedLayoutName(globalStep: number): string {
  return `model.ckpt-${globalStep}.sharded.json`;
}

/** Whether `name` is a layout (a job's checkpoint) rather than a single file. */
export function isShardedLayoutName(name: string): boolean {
  return CHECKPOINT_NAME.test(name) && name.endsWith('.sharded.json');
}

/**
 * Writes model.ckpt-<globalStep>.safetensors and updates the manifest; deletes
 * checkpoints beyond keepMax (oldest first; keepMax 0 or undefined = keep all; `deltaBase`:
 * this checkpoint is a delta over that one, which is kept while this is), but never
 * one of a later global step than this one. The first save into a directory in this
 * process also removes temp files that killed saves left there (see sweepStaleTemps).
 * The typed arrays must not change until the returned promise settles: they are written
 * straight from their memory, not copied first. A native source is written on its
 * tensor's device when the save reaches it, after everything queued there before; queue
 * no update of it until the promise settles.
 */
export async function saveCheckpoint(
  modelDir: string,
  globalStep: number,
  tensors: CheckpointTensor[],
  options: { keepMax?: number; metadata?: Record<string, string>; deltaBase?: string } = {},
): Promise<CheckpointInfo> {
  assertLittleEndian();
  if (typeof globalStep !== 'number' || !Number.isSafeInteger(globalStep) || globalStep < 0) {
    const message = `saveCheckpoint: globalStep must be a non-negative integer, got ${shownValue(globalStep)}`;
    throw typeof globalStep === 'number' ? new Error(message) : new TypeError(message);
  }
  const keepMax = options.keepMax ?? 0;
  if (!Number.isSafeInteger(keepMax) || keepMax < 0) {
    const message = `saveCheckpoint: keepMax must be a non-negative integer, got ${shownValue(options.keepMax)}`;
    throw typeof keepMax === 'number' ? new Error(message) : new TypeError(message);
  }
  const userMetadata = checkUserMetadata(options.metadata ?? {});
  const layout = planLayout(tensors);

  return exclusive(path.resolve(modelDir), async () => {
    await fsp.mkdir(modelDir, { recursive: true });
    const name = checkpointFileName(globalStep);
    await writeAtomically(modelDir, name, (fh, file) => writeSafetensors(fh, file, layout, globalStep, userMetadata));
    await recordInManifest(modelDir, name, globalStep, keepMax, options.deltaBase);
    return { path: path.join(modelDir, name), globalStep };
  });
}

/**
 * A rank's file of a job's checkpoint (shardFileName): written like a checkpoint, but not
 * listed; the layout that lists it comes once every rank's is durable
 * (recordShardedCheckpoint). Resolves to its path, SHA-256 and size.
 */
export async function writeCheckpointShard(
  modelDir: string,
  globalStep: number,
  shard: { rank: number; worldSize: number },
  tensors: CheckpointTensor[],
  metadata: Record<string, string> = {},
): Promise<{ path: string; sha256: string; bytes: number }> {
  assertLittleEndian();
  const userMetadata = checkUserMetadata(metadata);
  const layout = planLayout(tensors);
  const name = shardFileName(globalStep, shard.rank, shard.worldSize);
  await fsp.mkdir(modelDir, { recursive: true });
  await writeAtomically(modelDir, name, (fh, file) => writeSafetensors(fh, file, layout, globalStep, userMetadata));
  const file = path.join(modelDir, name);
  const header = await readCheckpointHeader(file);
  return { path: file, sha256: header.sha256, bytes: (await fsp.stat(file)).size };
}

/**
 * Writes a job's checkpoint layout (`text`, the JSON of lib/io/checkpoint_source.ts) and
 * lists it in the manifest, rotating old checkpoints out as saveCheckpoint does (with
 * their shards). Called by rank 0 once every shard is durable.
 */
export async function recordShardedCheckpoint(modelDir: string, globalStep: number, text: string, keepMax = 0, worldSize?: number, deltaBase?: string): Promise<CheckpointInfo> {
  return exclusive(path.resolve(modelDir), async () => {
    const name = shardedLayoutName(globalStep);
    await writeAtomically(modelDir, name, (fh) => writeAll(fh, Buffer.from(text, 'utf8'), 0));
    await recordInManifest(modelDir, name, globalStep, keepMax, deltaBase);
    // The step saved again by a job of another size: its old files are no one's now.
    if (worldSize !== undefined) await removeShards(modelDir, globalStep, worldSize);
    return { path: path.join(modelDir, name), globalStep };
  });
}

/**
 * Makes `name` (written and durable) the newest checkpoint; rotates beyond keepMax. `base`:
 * `name` is a delta checkpoint over that one (recorded in the manifest): a base stays while
 * a listed delta needs it, and goes once none does, so no delta is left without its base.
 */
async function recordInManifest(modelDir: string, name: string, globalStep: number, keepMax: number, base?: string): Promise<void> {
  // Saving a step again replaces it, and moves it to the newest place: order is the
  // order of saving, as with TensorFlow's CheckpointManager, not of step.
  const previous = (await existingCheckpoints(modelDir)).map((c) => path.basename(c.path));
  let all = previous.filter((n) => n !== name).concat(name);
  const bases = await readManifestBases(modelDir);
  if (base !== undefined) bases[name] = base;
  else delete bases[name];
  if (keepMax > 0) {
    // Oldest first, one at a time: a save behind the steps already kept comes from a run
    // that started over or fell back past refused checkpoints, and the later ones may be
    // the only good copies of the model, so they stay (beyond keepMax) until this run
    // passes them; a base stays while a delta listed names it.
    for (let dropped = true; all.length > keepMax && dropped; ) {
      dropped = false;
      for (const n of all) {
        if (n === name || stepOf(n) > globalStep || all.some((m) => bases[m] === n)) continue;
        all = all.filter((m) => m !== n);
        dropped = true;
        break;
      }
    }
  }
  for (const n of Object.keys(bases)) if (!all.includes(n)) delete bases[n];
  const manifest = JSON.stringify({ latest: name, all, ...(Object.keys(bases).length > 0 ? { bases } : {}) }, null, 2) + '\n';
  await writeAtomically(modelDir, MANIFEST, (fh) => writeAll(fh, Buffer.from(manifest, 'utf8'), 0));

  // Only now, with the manifest no longer naming them, are the old files expendable: a
  // job's checkpoint goes with its shards (the layout last, so nothing listed loses one).
  const kept = new Set(all.filter(isShardedLayoutName).map(stepOf));
  for (const old of previous) {
    if (all.includes(old)) continue;
    if (isShardedLayoutName(old) && !kept.has(stepOf(old))) await removeShards(modelDir, stepOf(old));
    await fsp.rm(path.join(modelDir, old), { force: true });
  }
  // After the save, so that every temp a killed save left is older than a complete checkpoint.
  if (!swept.has(path.resolve(modelDir))) await sweepStaleTemps(modelDir);
}

/** Removes the shard files of step `globalStep` (our names only), but those of a world of `keepWorld`. */
async function removeShards(modelDir: string, globalStep: number, keepWorld?: number): Promise<void> {
  const names = await fsp.readdir(modelDir).catch(() => [] as string[]);
  for (const n of names) {
    const m = SHARD_NAME.exec(n);
    if (m && Number(m[1]) === globalStep && Number(m[3]) !== keepWorld) await fsp.rm(path.join(modelDir, n), { force: true });
  }
}

/** Removes the temp files of killed saves from modelDir (see sweepStaleTemps), as restoring does. */
export async function sweepKilledSaves(modelDir: string): Promise<void> {
  await sweepStaleTemps(modelDir);
}

/** The checkpoints the manifest lists, oldest first (only files that exist). */
export async function listCheckpoints(modelDir: string): Promise<CheckpointInfo[]> {
  return existingCheckpoints(modelDir);
}

/**
 * Reads and verifies one checkpoint file; throws an Error naming the file and what is
 * wrong (truncated, bad header, checksum mismatch, shape/size mismatch).
 */
export async function loadCheckpoint(file: string): Promise<LoadedCheckpoint> {
  const fail = failureIn(file);
  return withCheckpointFile(file, async (fh) => {
    const { header, raw } = await readHeaderAndBytes(fh, file);
    // Each tensor gets its own freshly allocated array, read straight into: the memory is
    // aligned whatever the offsets, and no file-sized buffer is kept alive by views.
    // The entries tile the data in order (parseHeader checks), so this is file order.
    const hasher = hasherOverHeader(raw, header.digestKind);
    const tensors = new Map<string, CheckpointTensor<TypedArray>>();
    for (const entry of header.entries.values()) {
      const { array, itemSize } = DTYPES[entry.dtype];
      const data = new array((entry.end - entry.begin) / itemSize);
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      await readExactly(fh, bytes, header.dataStart + entry.begin, fail, hasher);
      tensors.set(entry.name, { name: entry.name, dtype: entry.dtype, shape: entry.shape, data });
    }
    checkDigest(hasher.hex(), header, fail);
    return { globalStep: header.globalStep, tensors, metadata: header.metadata };
  });
}

/**
 * The validated header of one checkpoint file, without reading or checking the data
 * (verifyCheckpoint does that); throws an Error naming the file and what is wrong.
 */
export async function readCheckpointHeader(file: string): Promise<CheckpointHeader> {
  return withCheckpointFile(file, (fh) => readHeader(fh, file));
}

/**
 * Reads the header, then hashes the whole file (the data through a small buffer, never
 * the whole file in memory) and compares it with the recorded SHA-256; resolves to the
 * header, or throws an Error naming the file.
 */
export async function verifyCheckpoint(file: string): Promise<CheckpointHeader> {
  const fail = failureIn(file);
  // One descriptor for the header and the data: a checkpoint renamed over this one
  // meanwhile cannot mix the two.
  return withCheckpointFile(file, async (fh) => {
    const { header, raw } = await readHeaderAndBytes(fh, file);
    const hasher = hasherOverHeader(raw, header.digestKind);
    await hashFileBytes(fh, file, header.dataStart, header.dataLength, hasher, fail);
    checkDigest(hasher.hex(), header, fail);
    return header;
  });
}

/**
 * Reads saved rows [rowBegin, rowEnd) (default: all) of tensor `name` into rows
 * [targetRowBegin, ...) of `target`, natively and in place, queued on the target's device.
 * A row is the product of shape[1:] values (a scalar is one row): the dtype and the row
 * width must match. The data is not hashed here: verify the file first
 * (verifyCheckpoint, latestValidCheckpoint), or read it through VerifiedReads.
 */
export async function loadTensorRows(
  file: string,
  header: CheckpointHeader,
  name: string,
  target: NativeTensorHandle,
  options: RowReadOptions = {},
): Promise<void> {
  return planRowRead(file, header, name, target, options).run();
}

export interface RowReadOptions {
  rowBegin?: number;
  rowEnd?: number;
  targetRowBegin?: number;
}

/** A checked read of saved rows: where its bytes are in the data section, and the read. */
export interface RowRead {
  /** Its bytes are [begin, end) of the data section. */
  begin: number;
  end: number;
  /** Reads them (loadTensorRows); with `digest`, adds them to it as they land. */
  run(digest?: NativeSha256): Promise<void>;
}

/** loadTensorRows' checks (throwing an Error naming the tensor), and the read to run. */
export function planRowRead(file: string, header: CheckpointHeader, name: string, target: NativeTensorHandle, options: RowReadOptions = {}): RowRead {
  const where = `loadTensorRows: tensor ${JSON.stringify(name)} of ${file}`;
  const entry = header.entries.get(name);
  if (!entry) throw new Error(`${where}: the checkpoint has no such tensor`);
  if (!(target instanceof native.TensorHandle)) throw new TypeError(`${where}: the target must be a native tensor`);
  if (target.disposed) throw new Error(`${where}: the target tensor has been disposed`);
  if (target.dtype !== entry.dtype) throw new TypeError(`${where}: saved as ${entry.dtype} but the target is ${target.dtype}`);
  const saved = rowsOf(entry.shape);
  const into = rowsOf(target.shape as number[]);
  if (saved.width !== into.width) {
    throw new Error(`${where}: saved rows of shape [${entry.shape}] hold ${saved.width} values, the target's rows of shape [${target.shape}] hold ${into.width}`);
  }
  const rowBegin = options.rowBegin ?? 0;
  const rowEnd = options.rowEnd ?? saved.rows;
  const targetRowBegin = options.targetRowBegin ?? 0;
  for (const [key, value] of Object.entries({ rowBegin, rowEnd, targetRowBegin })) {
    if (!Number.isSafeInteger(value) || value < 0) {
      const message = `${where}: ${key} must be a non-negative integer, got ${shownValue(value)}`;
      throw typeof value === 'number' ? new Error(message) : new TypeError(message);
    }
  }
  if (rowEnd > saved.rows) throw new Error(`${where}: rowEnd ${rowEnd} is beyond the ${saved.rows} saved rows`);
  if (rowBegin > rowEnd) throw new Error(`${where}: rowBegin ${rowBegin} is after rowEnd ${rowEnd}`);
  const count = rowEnd - rowBegin;
  if (targetRowBegin + count > into.rows) {
    throw new Error(`${where}: ${count} rows from targetRowBegin ${targetRowBegin} do not fit the target's ${into.rows} rows`);
  }
  const rowBytes = saved.width * DTYPES[entry.dtype].itemSize;
  const begin = entry.begin + rowBegin * rowBytes;
  return {
    begin,
    end: begin + count * rowBytes,
    run: (digest) => native.tensorReadRows(target, targetRowBegin, targetRowBegin + count, file, header.dataStart + begin, digest),
  };
}

/**
 * The validated header of one checkpoint file, and the file's bytes before the data (the
 * length and the header) with the digest's characters read as zeros, as they are hashed.
 */
export async function readHeaderForDigest(file: string): Promise<{ header: CheckpointHeader; head: Buffer }> {
  return withCheckpointFile(file, async (fh) => {
    const { header, raw } = await readHeaderAndBytes(fh, file);
    return { header, head: blankedDigest(raw) };
  });
}

/** Adds bytes [position, position + length) of `file` to a native digest, read and hashed off the JS thread. */
export async function hashFileRange(file: string, digest: NativeSha256, position: number, length: number): Promise<void> {
  return withCheckpointFile(file, (fh) => native.fileSha256Update(digest, fh.fd, file, position, length));
}

/** Runs `use` on `file` opened for reading (one descriptor for all it reads), closed after. */
async function withCheckpointFile<T>(file: string, use: (fh: FileHandle) => Promise<T>): Promise<T> {
  assertLittleEndian();
  const fh = await fsp.open(file, 'r');
  try {
    return await use(fh);
  } finally {
    await fh.close();
  }
}

/** Throws an Error naming the file when `digest` (hex, over the whole file) is not the one its header records. */
export function checkFileDigest(file: string, header: CheckpointHeader, digest: string): void {
  checkDigest(digest, header, failureIn(file));
}

/**
 * The newest checkpoint that verifies, falling back to older ones; `skipped` lists the
 * files refused and why. undefined when the directory has no checkpoint at all; when it
 * has some and none verifies this throws, since quietly starting from scratch would
 * train over (and with keepMax, delete) what is left of the model. Also removes the temp
 * files of killed saves (see sweepStaleTemps).
 */
export async function loadLatestCheckpoint(modelDir: string): Promise<LatestCheckpoint | undefined> {
  return newestUsable(modelDir, loadCheckpoint);
}

/**
 * As loadLatestCheckpoint, but only verifies (natively) and returns the header, so the
 * caller reads the tensors it wants with loadTensorRows, without JS copies.
 */
export async function latestValidCheckpoint(modelDir: string): Promise<ValidCheckpoint | undefined> {
  return newestUsable(modelDir, async (file) => ({ header: await verifyCheckpoint(file) }));
}

async function newestUsable<T extends object>(
  modelDir: string,
  open: (file: string) => Promise<T>,
): Promise<(T & { path: string; skipped: Array<{ path: string; error: string }> }) | undefined> {
  await sweepStaleTemps(modelDir);
  const candidates = await existingCheckpoints(modelDir);
  const skipped: Array<{ path: string; error: string }> = [];
  for (const candidate of candidates.reverse()) {
    try {
      const opened = await open(candidate.path);
      return { ...opened, path: candidate.path, skipped };
    } catch (err) {
      skipped.push({ path: candidate.path, error: err instanceof Error ? err.message : String(err) });
    }
  }
  if (skipped.length === 0) return undefined;
  throw new Error(`No usable checkpoint in ${modelDir}:\n` + skipped.map((s) => `  ${s.error}`).join('\n'));
}

// ---------------------------------------------------------------------------------------
// Writing

interface PlannedTensor {
  tensor: CheckpointTensor;
  code: string;
  begin: number;
  end: number;
  /** For a native source: the rows to write. */
  rows?: { tensor: NativeTensorHandle; begin: number; end: number };
}

/** The byte length of the values, and the rows for a native source; throws naming the tensor. */
function checkTensor(t: CheckpointTensor, where: string): Pick<PlannedTensor, 'rows'> & { bytes: number } {
  const spec = DTYPES[t.dtype];
  if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    const message = `${where}: the shape must be an array of non-negative integers, got ${JSON.stringify(t.shape)}`;
    throw Array.isArray(t.shape) && t.shape.every((d) => typeof d === 'number') ? new Error(message) : new TypeError(message);
  }
  const count = t.shape.reduce((a, b) => a * b, 1);
  if (!isNativeRowSource(t.data)) {
    if (Object.prototype.toString.call(t.data) !== `[object ${spec.array.name}]`) {
      throw new TypeError(`${where}: dtype ${t.dtype} needs a ${spec.array.name} or a native tensor source, got ${(t.data as object)?.constructor?.name}`);
    }
    if (count !== t.data.length) throw new Error(`${where}: shape [${t.shape}] holds ${count} values but the data has ${t.data.length}`);
    return { bytes: t.data.byteLength };
  }
  const { tensor } = t.data;
  if (!(tensor instanceof native.TensorHandle)) throw new TypeError(`${where}: data.tensor must be a native tensor`);
  if (tensor.disposed) throw new Error(`${where}: the native tensor has been disposed`);
  if (tensor.dtype !== t.dtype) throw new TypeError(`${where}: dtype ${t.dtype} but the native tensor is ${tensor.dtype}`);
  const { rows, width } = rowsOf(tensor.shape as number[]);
  const begin = t.data.rowBegin ?? 0;
  const end = t.data.rowEnd ?? rows;
  for (const [key, value] of Object.entries({ rowBegin: begin, rowEnd: end })) {
    if (!Number.isSafeInteger(value) || value < 0) {
      const message = `${where}: ${key} must be a non-negative integer, got ${shownValue(value)}`;
      throw typeof value === 'number' ? new Error(message) : new TypeError(message);
    }
  }
  if (end > rows) throw new Error(`${where}: rowEnd ${end} is beyond the native tensor's ${rows} rows`);
  if (begin > end) throw new Error(`${where}: rowBegin ${begin} is after rowEnd ${end}`);
  if (count !== (end - begin) * width) {
    throw new Error(`${where}: shape [${t.shape}] holds ${count} values but rows ${begin}..${end} of [${tensor.shape}] hold ${(end - begin) * width}`);
  }
  return { bytes: count * spec.itemSize, rows: { tensor, begin, end } };
}

function planLayout(tensors: CheckpointTensor[]): PlannedTensor[] {
  const seen = new Set<string>();
  const checked = tensors.map((t) => {
    const where = `saveCheckpoint: tensor ${JSON.stringify(t?.name)}`;
    if (typeof t?.name !== 'string') throw new TypeError(`${where}: the name must be a non-empty string`);
    if (t.name === '') throw new Error(`${where}: the name must be a non-empty string`);
    if (t.name === '__metadata__') throw new Error(`${where}: the name is reserved by the safetensors format`);
    if (seen.has(t.name)) throw new Error(`${where}: duplicate tensor name`);
    seen.add(t.name);
    if (!Object.prototype.hasOwnProperty.call(DTYPES, t.dtype)) throw new TypeError(`${where}: unknown dtype ${JSON.stringify(t.dtype)}`);
    return checkTensor(t, where);
  });
  // Eight-byte types first (stable otherwise), as the reference writer does: with the
  // header padded to 8, every tensor then starts aligned for its type, which zero-copy
  // readers (mmap) elsewhere rely on.
  const ordered = tensors
    .map((tensor, index) => ({ tensor, index }))
    .sort((a, b) => DTYPES[b.tensor.dtype].itemSize - DTYPES[a.tensor.dtype].itemSize || a.index - b.index);
  let offset = 0;
  return ordered.map(({ tensor, index }) => {
    const begin = offset;
    offset += checked[index].bytes;
    return { tensor, code: DTYPES[tensor.dtype].code, begin, end: offset, rows: checked[index].rows };
  });
}

function isNativeRowSource(data: unknown): data is NativeRowSource {
  return typeof data === 'object' && data !== null && !ArrayBuffer.isView(data) && 'tensor' in data;
}

/** Rows and values per row of a shape, as the addon counts them: a scalar is one row. */
function rowsOf(shape: number[]): { rows: number; width: number } {
  return shape.length === 0 ? { rows: 1, width: 1 } : { rows: shape[0], width: shape.slice(1).reduce((a, b) => a * b, 1) };
}

function checkUserMetadata(metadata: Record<string, string>): Record<string, string> {
  for (const [key, value] of Object.entries(metadata)) {
    if (RESERVED_METADATA_KEYS.includes(key)) {
      throw new Error(`saveCheckpoint: metadata key ${JSON.stringify(key)} is reserved (${RESERVED_METADATA_KEYS.join(', ')})`);
    }
    if (typeof value !== 'string') throw new TypeError(`saveCheckpoint: metadata ${JSON.stringify(key)} must be a string, got ${typeof value}`);
  }
  return metadata;
}

/** The 8-byte length and the space-padded JSON header, the digest first (at DIGEST_AT). */
function encodeHeader(layout: PlannedTensor[], globalStep: number, userMetadata: Record<string, string>, sha256: string): Buffer {
  // Written field by field: JSON.stringify would put integer-like keys (a tensor or a
  // metadata key named "0") ahead of the digest.
  const field = (key: string, value: unknown) => `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
  const metadata = Object.entries(userMetadata).map(([k, v]) => field(k, v)).join('') + field('global_step', String(globalStep)) + field('format', FORMAT);
  const tensors = layout.map((p) => field(p.tensor.name, { dtype: p.code, shape: p.tensor.shape, data_offsets: [p.begin, p.end] })).join('');
  const json = Buffer.from(`${DIGEST_LEAD.toString('utf8')}${sha256}"${metadata}}${tensors}}`, 'utf8');
  const padded = Math.ceil(json.length / 8) * 8;
  const out = Buffer.alloc(8 + padded, 0x20);
  out.writeBigUInt64LE(BigInt(padded), 0);
  json.copy(out, 8);
  return out;
}

/**
 * Whether rows may go around the page cache (native/io/file_stream_writer.h): a new file's
 * pages cost a fresh page each (300-400 MB/s on the VMs we measure, against 1.1-1.5 GB/s
 * direct), and a big checkpoint would push the trainer's memory out. HB_DIRECT_IO=0: no.
 */
function directWrites(): boolean {
  return process.env.HB_DIRECT_IO !== '0';
}

async function writeSafetensors(
  fh: FileHandle,
  file: string,
  layout: PlannedTensor[],
  globalStep: number,
  userMetadata: Record<string, string>,
): Promise<void> {
  // The checksum belongs in the header but is known only after the data went by, so the
  // header goes out first with zeros in its place (hex sha256 is always 64 characters),
  // which is also how readers hash it, and is rewritten in place at the end: a single
  // pass over the data.
  const placeholder = encodeHeader(layout, globalStep, userMetadata, BLANK_DIGEST);
  // One write at a time, in file order: the hasher must see the bytes in that order.
  const hasher = newFileDigest('pieces');
  await writeAll(fh, placeholder, 0, hasher);
  const dataStart = placeholder.length;
  for (const p of layout) {
    if (p.rows) {
      // A native digest takes the rows as they are written; node's reads them back (from the
      // page cache: not written around it then).
      const direct = hasher.native !== undefined && directWrites();
      const written = await native.tensorWriteRows(p.rows.tensor, p.rows.begin, p.rows.end, file, dataStart + p.begin, hasher.native, direct);
      if (written !== p.end - p.begin) throw new Error(`saveCheckpoint: internal error, ${written} bytes written for tensor ${JSON.stringify(p.tensor.name)}, expected ${p.end - p.begin}`);
      if (!hasher.native) await hashFileBytes(fh, file, dataStart + p.begin, written, hasher, failureIn(file));
    } else {
      const data = p.tensor.data as TypedArray;
      await writeAll(fh, new Uint8Array(data.buffer, data.byteOffset, data.byteLength), dataStart + p.begin, hasher);
    }
  }
  const header = encodeHeader(layout, globalStep, userMetadata, hasher.hex());
  if (header.length !== placeholder.length) throw new Error('saveCheckpoint: internal error, header length changed');
  await writeAll(fh, header, 0);
}

/**
 * Creates `dir/name` through a temporary file in the same directory (so the rename
 * cannot cross filesystems), durable before and after the rename.
 */
async function writeAtomically(dir: string, name: string, write: (fh: FileHandle, file: string) => Promise<void>): Promise<void> {
  const temp = path.join(dir, `.${name}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
  let renamed = false;
  try {
    // Read as well as written: native rows are read back to be hashed.
    const fh = await fsp.open(temp, 'wx+');
    try {
      await write(fh, temp);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(temp, path.join(dir, name));
    renamed = true;
    await fsyncDirectory(dir);
  } finally {
    if (!renamed) await fsp.rm(temp, { force: true }).catch(() => undefined);
  }
}

async function fsyncDirectory(dir: string): Promise<void> {
  let fh: FileHandle | undefined;
  try {
    fh = await fsp.open(dir, 'r');
    await fh.sync();
  } catch (err) {
    if (!DIR_FSYNC_UNSUPPORTED.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
  } finally {
    await fh?.close();
  }
}

async function writeAll(fh: FileHandle, bytes: Uint8Array, position: number, hasher?: FileDigest): Promise<void> {
  for (let done = 0; done < bytes.byteLength; ) {
    const chunk = bytes.subarray(done, done + IO_CHUNK);
    let written = 0;
    while (written < chunk.byteLength) {
      const { bytesWritten } = await fh.write(chunk, written, chunk.byteLength - written, position + done + written);
      written += bytesWritten;
    }
    hasher?.update(chunk);
    done += chunk.byteLength;
  }
}

// ---------------------------------------------------------------------------------------
// Reading

type Fail = (what: string) => never;

function failureIn(file: string): Fail {
  return (what: string): never => {
    throw new Error(`Checkpoint ${file}: ${what}`);
  };
}

function checkDigest(actual: string, header: CheckpointHeader, fail: Fail): void {
  if (actual !== header.sha256) fail(`checksum mismatch: the file's sha256 is ${actual}, the header records ${header.sha256}`);
}

/** A copy of the file's first bytes (length and header) with its digest read as zeros. */
function blankedDigest(raw: Buffer): Buffer {
  const blanked = Buffer.from(raw);
  blanked.write(BLANK_DIGEST, DIGEST_AT, 'latin1');
  return blanked;
}

/** A hash started on the file's first bytes (length and header), its digest read as zeros. */
function hasherOverHeader(raw: Buffer, kind: DigestKind): FileDigest {
  const hasher = newFileDigest(kind);
  hasher.update(blankedDigest(raw));
  return hasher;
}

/** The 8-byte length, the JSON header and its checks against the file's size and name. */
async function readHeader(fh: FileHandle, file: string): Promise<CheckpointHeader> {
  return (await readHeaderAndBytes(fh, file)).header;
}

/** readHeader, and the file's bytes up to the data (length and header) for the hash. */
async function readHeaderAndBytes(fh: FileHandle, file: string): Promise<{ header: CheckpointHeader; raw: Buffer }> {
  const fail = failureIn(file);
  const fileSize = (await fh.stat()).size;
  if (fileSize < 8) fail(`truncated: ${fileSize} bytes, not even the 8-byte header length`);
  const prefix = Buffer.alloc(8);
  await readExactly(fh, prefix, 0, fail);
  const headerLength = prefix.readBigUInt64LE(0);
  if (headerLength > BigInt(MAX_HEADER_BYTES)) fail(`bad header: header length ${headerLength} is implausible (limit ${MAX_HEADER_BYTES})`);
  if (headerLength > BigInt(fileSize - 8)) fail(`truncated: header length ${headerLength} runs past the end of the ${fileSize}-byte file`);
  const raw = Buffer.alloc(8 + Number(headerLength));
  prefix.copy(raw);
  const headerBytes = raw.subarray(8);
  await readExactly(fh, headerBytes, 8, fail);

  const dataStart = raw.length;
  const header = parseHeader(headerBytes, fileSize - dataStart, fail);
  // Where the hash will read zeros must be where the digest is, or the bytes the JSON
  // reader takes for it would go unchecked.
  const digestEnd = DIGEST_AT + DIGEST_CHARS;
  if (raw.length <= digestEnd || !raw.subarray(8, DIGEST_AT).equals(DIGEST_LEAD) || raw.toString('latin1', DIGEST_AT, digestEnd) !== header.sha256 || raw[digestEnd] !== 0x22) {
    fail('bad header: the sha256 is not the first value of __metadata__, the first key');
  }
  const stepInName = CHECKPOINT_NAME.exec(path.basename(file));
  if (stepInName && Number(stepInName[1]) !== header.globalStep) {
    fail(`bad header: global_step ${header.globalStep} does not match the file name`);
  }
  return { header: { ...header, dataStart, dataLength: fileSize - dataStart }, raw };
}

function parseHeader(bytes: Buffer, dataLength: number, fail: Fail): Omit<CheckpointHeader, 'dataStart' | 'dataLength'> {
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (err) {
    fail(`bad header: not valid UTF-8 JSON (${(err as Error).message})`);
  }
  if (!isPlainObject(header)) fail('bad header: the JSON is not an object');

  const meta = header.__metadata__;
  if (!isPlainObject(meta) || !Object.values(meta).every((v) => typeof v === 'string')) {
    fail('bad header: __metadata__ is missing or not a map of strings');
  }
  const strings = meta as Record<string, string>;
  if (strings.format === DATA_ONLY_CHECKSUM_FORMAT) {
    fail(
      `unsupported format ${JSON.stringify(strings.format)} (an older hb-ts): its checksum covers only the data, not the header, so edited tensor ` +
        `names, shapes, offsets, global step or optimizer state cannot be detected and the file is not loaded; restore it with the hb-ts version that wrote it, or train in a new modelDir`,
    );
  }
  if (strings.format !== FORMAT && strings.format !== STREAM_DIGEST_FORMAT) fail(`bad header: format ${JSON.stringify(strings.format)} is not ${FORMAT} (or ${STREAM_DIGEST_FORMAT})`);
  if (!/^(0|[1-9][0-9]*)$/.test(strings.global_step ?? '') || !Number.isSafeInteger(Number(strings.global_step))) {
    fail(`bad header: global_step ${JSON.stringify(strings.global_step)} is not a non-negative integer`);
  }
  if (!/^[0-9a-f]{64}$/.test(strings.sha256 ?? '')) fail(`bad header: sha256 ${JSON.stringify(strings.sha256)} is not a hex SHA-256`);
  const userMetadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(strings)) if (!RESERVED_METADATA_KEYS.includes(k)) userMetadata[k] = v;

  const entries: CheckpointEntry[] = [];
  for (const [name, raw] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const where = `bad header: tensor ${JSON.stringify(name)}`;
    if (!isPlainObject(raw)) fail(`${where} is not an object`);
    const dtype = typeof raw.dtype === 'string' ? DTYPE_BY_CODE.get(raw.dtype) : undefined;
    if (!dtype) fail(`${where} has unsupported dtype ${JSON.stringify(raw.dtype)}`);
    const shape = raw.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      fail(`${where} has an invalid shape ${JSON.stringify(shape)}`);
    }
    const offsets = raw.data_offsets;
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0)) {
      fail(`${where} has invalid data_offsets ${JSON.stringify(offsets)}`);
    }
    entries.push({ name, dtype: dtype!, shape: shape as number[], begin: offsets[0], end: offsets[1] });
  }

  // Tensors must tile the data buffer exactly: in order, no gaps, no overlaps, nothing
  // after the last one, and each exactly as long as its shape says.
  entries.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let cursor = 0;
  for (const e of entries) {
    const where = `tensor ${JSON.stringify(e.name)}`;
    if (e.begin !== cursor) fail(`bad header: ${where} starts at ${e.begin}, expected ${cursor} (offsets must be contiguous)`);
    if (e.end < e.begin) fail(`bad header: ${where} ends before it begins`);
    const expected = e.shape.reduce((a, b) => a * b, 1) * DTYPES[e.dtype].itemSize;
    if (e.end - e.begin !== expected) {
      fail(`shape/size mismatch: ${where} has shape [${e.shape}] of ${DTYPES[e.dtype].code} (${expected} bytes) but data_offsets span ${e.end - e.begin}`);
    }
    cursor = e.end;
  }
  if (cursor > dataLength) fail(`truncated: the header describes ${cursor} data bytes but the file holds ${dataLength}`);
  if (cursor < dataLength) fail(`bad size: ${dataLength - cursor} bytes after the last tensor`);

  return {
    entries: new Map(entries.map((e) => [e.name, e])),
    globalStep: Number(strings.global_step),
    sha256: strings.sha256,
    digestKind: strings.format === STREAM_DIGEST_FORMAT ? 'stream' : 'pieces',
    metadata: userMetadata,
  };
}

async function readExactly(fh: FileHandle, target: Uint8Array, position: number, fail: Fail, hasher?: FileDigest): Promise<void> {
  for (let done = 0; done < target.byteLength; ) {
    const length = Math.min(target.byteLength - done, IO_CHUNK);
    const { bytesRead } = await fh.read(target, done, length, position + done);
    // The size was checked up front, so this is the file shrinking under us.
    if (bytesRead === 0) fail(`truncated: unexpected end of file at byte ${position + done}`);
    hasher?.update(target.subarray(done, done + bytesRead));
    done += bytesRead;
  }
}

/**
 * Feeds `length` bytes of the file from `position` to `hasher`. A native digest reads and
 * hashes off this thread. Else through two small buffers: the next piece is read (in the
 * thread pool) while this one is hashed (on this thread), so reading and hashing overlap
 * instead of taking turns.
 */
async function hashFileBytes(fh: FileHandle, file: string, position: number, length: number, hasher: FileDigest, fail: Fail): Promise<void> {
  if (hasher.native) return native.fileSha256Update(hasher.native, fh.fd, file, position, length);
  const size = Math.min(length, HASH_CHUNK);
  const buffers = [Buffer.allocUnsafe(size), Buffer.allocUnsafe(size)];
  const readPiece = (k: number, at: number): Promise<Buffer> => {
    const piece = buffers[k % 2].subarray(0, Math.min(length - at, size));
    return readExactly(fh, piece, position + at, fail).then(() => piece);
  };
  let at = 0;
  let pending = length > 0 ? readPiece(0, 0) : undefined;
  for (let k = 0; pending; k++) {
    const piece = await pending;
    at += piece.length;
    // Into the other buffer: this one is hashed meanwhile (synchronously, before the next await).
    pending = at < length ? readPiece(k + 1, at) : undefined;
    hasher.update(piece);
  }
}

// ---------------------------------------------------------------------------------------
// The manifest

/** The manifest's list, or the directory by step when the manifest cannot be used; only existing files. */
async function existingCheckpoints(modelDir: string): Promise<CheckpointInfo[]> {
  const listed = await readManifest(modelDir);
  const found = listed && (await keepExisting(modelDir, listed));
  // A readable manifest none of whose files exist says nothing about what is there
  // (files copied in by hand, say); the directory is the better witness then.
  if (found && found.length > 0) return found;
  return keepExisting(modelDir, await scanDirectory(modelDir));
}

/** The manifest's record of which listed checkpoints are deltas over which base ({} when none or unreadable). */
async function readManifestBases(modelDir: string): Promise<Record<string, string>> {
  try {
    const manifest: unknown = JSON.parse(await fsp.readFile(path.join(modelDir, MANIFEST), 'utf8'));
    if (!isPlainObject(manifest) || !isPlainObject(manifest.bases)) return {};
    return Object.fromEntries(Object.entries(manifest.bases).filter((e): e is [string, string] => typeof e[1] === 'string' && CHECKPOINT_NAME.test(e[0]) && CHECKPOINT_NAME.test(e[1])));
  } catch {
    return {};
  }
}

async function readManifest(modelDir: string): Promise<string[] | undefined> {
  let text: string;
  try {
    text = await fsp.readFile(path.join(modelDir, MANIFEST), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const manifest: unknown = JSON.parse(text);
    if (!isPlainObject(manifest) || !Array.isArray(manifest.all)) return undefined;
    const all = manifest.all;
    if (!all.every((n) => typeof n === 'string' && CHECKPOINT_NAME.test(n))) return undefined;
    if (new Set(all).size !== all.length) return undefined;
    if (all.length > 0 && manifest.latest !== all[all.length - 1]) return undefined;
    return all as string[];
  } catch {
    return undefined;
  }
}

async function scanDirectory(modelDir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fsp.readdir(modelDir);
  } catch {
    return [];
  }
  return names
    .filter((n) => CHECKPOINT_NAME.test(n))
    .sort((a, b) => stepOf(a) - stepOf(b));
}

async function keepExisting(modelDir: string, names: string[]): Promise<CheckpointInfo[]> {
  const found: CheckpointInfo[] = [];
  for (const name of names) {
    const file = path.join(modelDir, name);
    const stat = await fsp.stat(file).catch(() => undefined);
    if (stat?.isFile()) found.push({ path: file, globalStep: stepOf(name) });
  }
  return found;
}

function stepOf(name: string): number {
  return Number(CHECKPOINT_NAME.exec(name)![1]);
}

// ---------------------------------------------------------------------------------------
// Temp files of killed saves

/** Directories whose first save has swept them, in this process. */
const swept = new Set<string>();

/**
 * Removes the temp files a save killed mid-write left in modelDir (a checkpoint's can be
 * as large as the model, and nothing else ever removes them): only names writeAtomically
 * gives, only regular files older than the newest complete checkpoint, and only those of
 * a process that no longer runs, so a save in progress elsewhere keeps its file. Best
 * effort: a directory that cannot be read or written is left as it is.
 */
async function sweepStaleTemps(modelDir: string): Promise<void> {
  let names: string[];
  try {
    names = await fsp.readdir(modelDir);
  } catch {
    return;
  }
  let newest = -Infinity;
  for (const name of names.filter((n) => CHECKPOINT_NAME.test(n))) {
    const stat = await fsp.stat(path.join(modelDir, name)).catch(() => undefined);
    if (stat?.isFile()) newest = Math.max(newest, stat.mtimeMs);
  }
  if (newest === -Infinity) return;
  swept.add(path.resolve(modelDir));
  for (const name of names) {
    const temp = TEMP_NAME.exec(name);
    if (!temp || processRuns(Number(temp[1]))) continue;
    const file = path.join(modelDir, name);
    const stat = await fsp.lstat(file).catch(() => undefined);
    if (!stat?.isFile() || stat.mtimeMs >= newest) continue;
    await fsp.rm(file, { force: true }).catch(() => undefined);
  }
}

/** Whether a process of that id runs on this host (one of another user's counts). */
function processRuns(pid: number): boolean {
  if (pid === process.pid) return true;
  if (pid > 0x7fffffff) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// ---------------------------------------------------------------------------------------
// Helpers

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// safetensors is little-endian and the typed arrays are written as they lie in memory.
function assertLittleEndian(): void {
  if (os.endianness() !== 'LE') throw new Error('checkpoints: big-endian hosts are not supported');
}

// Saves into one directory run one after another, so two overlapping saves in this
// process cannot interleave their read-modify-write of the manifest.
const directoryQueues = new Map<string, Promise<unknown>>();

async function exclusive<T>(key: string, work: () => Promise<T>): Promise<T> {
  const before = directoryQueues.get(key) ?? Promise.resolve();
  const run = before.then(work, work);
  const tail = run.catch(() => undefined);
  directoryQueues.set(key, tail);
  try {
    return await run;
  } finally {
    if (directoryQueues.get(key) === tail) directoryQueues.delete(key);
  }
}
