// The only file that loads the addon. Everything native is typed here.
//
// Search order: HB_ADDON (a path to a .node file, used by CI to test the CPU-only
// builds), then node-gyp-build's: build/Release, then prebuilds/<platform>-<arch>.
import { packageRoot } from './package_root';
import * as path from 'path';

import type { KernelAttrValue, PlanDType, PlanSpec } from './graph/plan_spec';

export type { KernelAttrValue };
export type DType = 'float32' | 'float64' | 'int32' | 'int64';
/** Every dtype a native tensor or plan value may hold (float16 / bfloat16: wire values). */
export type NativeDType = PlanDType;
export type TypedArray = Float32Array | Float64Array | Int32Array | BigInt64Array;

/**
 * The version of the kernel registry and plan format this TypeScript speaks
 * (native/exec/kernel_def.h's kKernelRegistryVersion). An addon with another one is
 * refused when hb-ts loads.
 */
export const KERNEL_REGISTRY_VERSION = 4;

/** An opaque native tensor. Dispose releases its memory at once; GC does it otherwise. */
export interface NativeTensorHandle {
  readonly shape: number[] | null;
  readonly dtype: DType | null;
  readonly device: string | null;
  readonly disposed: boolean;
  dispose(): void;
}

/**
 * One column of a block for concatRows and shuffleBufferPush, over the column's own arrays
 * (see native/kernels/row_gather.h for the shapes).
 */
export interface NativeRowBlockColumn {
  name: string;
  /** A row is a range of items; null: a row is one item. */
  rowSplits: Int32Array | null;
  /** Arrays indexed by item (null: a string column's flags, all 1). */
  itemArrays: Array<Uint8Array | Int32Array | Float32Array | Float64Array | BigInt64Array | null>;
  /** Items are byte strings: offsets into `bytes`; null: no bytes. */
  itemOffsets: Int32Array | null;
  bytes: Uint8Array | null;
}

/** An addon SHA-256 digest (sha256New). */
export interface NativeSha256 {
  readonly __nativeSha256: unique symbol;
}

/** A native shuffle buffer (shuffleBufferNew). */
export interface NativeShuffleBuffer {
  readonly __nativeShuffleBuffer: unique symbol;
}

/** Rows of a block taken by concatRows. */
export interface NativeRowRange {
  columns: NativeRowBlockColumn[];
  start: number;
  count: number;
}

/** One gathered column: itemArrays[a] null where no block read had it, partial[a] where some lacked it. */
export interface NativeRowGatherResult {
  rowSplits: Int32Array | null;
  itemArrays: Array<Uint8Array | Int32Array | Float32Array | Float64Array | BigInt64Array | null>;
  partial: boolean[];
  itemOffsets: Int32Array | null;
  bytes: Uint8Array | null;
}

export interface LibraryReport {
  loaded: boolean;
  version?: string;
  error?: string;
}

export interface BackendReport {
  device: 'cpu' | 'cuda';
  /**
   * `emulated`: a build made with HB_CUDA_EMULATE=ON, whose CUDA device runs the CUDA kernels
   * on host threads (for testing them without a GPU); chosen only when asked for
   * (HB_DEVICE=cuda-emulated or setDevice('cuda-emulated')), never by default.
   */
  cuda: { compiled: boolean; emulated: boolean; deviceCount: number; error?: string };
  nccl: LibraryReport;
  cublas: LibraryReport;
  /** CPU collectives (hb.distribute) on Gloo; `error` says why not when absent. */
  gloo: { available: boolean; error?: string };
  /** Host threads the CPU kernels use (HB_NUM_THREADS, else the hardware threads). */
  threads: number;
  /**
   * The vector code each CPU kernel that picks one at run time runs: the best the CPU has,
   * capped by HB_CPU_ISA=portable|avx2 (and the GEMMs by HB_SGEMM_ISA).
   */
  cpuKernels: { matmul: CpuKernelIsa; dotInteraction: CpuKernelIsa; randomFill: CpuKernelIsa; embeddingLookup: CpuKernelIsa };
}

export type CpuKernelIsa = 'avx512' | 'avx2' | 'portable';

export interface NativeDynamicTableStats {
  rows: number; pending: number; capacityRows: number; admitted: number; evicted: number; hits: number; misses: number;
  rowBytes: number; slotRowBytes: number; residentBytes: number; indexBytes: number; freeRows: number;
}

/** A dynamic table's rows in id order, as host tensors (checkpoints). */
export interface NativeDynamicTableRows {
  ids: NativeTensorHandle;
  values: NativeTensorHandle;
  slots: Array<NativeTensorHandle | null>;
  meta: NativeTensorHandle;
  pendingIds: NativeTensorHandle;
  pendingMeta: NativeTensorHandle;
  removedIds: NativeTensorHandle;
}

export interface NativeFillSpec {
  kind: 'constant' | 'uniform' | 'truncatedNormal';
  value?: number;
  minval?: number;
  maxval?: number;
  mean?: number;
  stddev?: number;
  seed?: number;
  /** A shard of a [rows, dim] table: local row j takes the values of the table's row j * rowStride + rowOffset. */
  rowStride?: number;
  rowOffset?: number;
}

/** An optimizer's rule (one of kernelRegistry().optimizerRules) and its hyperparameters for one step. */
export interface NativeOptimizerHyper {
  rule: 'gradientDescent' | 'momentum' | 'adagrad' | 'adam' | 'ftrl' | 'rowwiseAdagrad';
  learningRate: number;
  momentum?: number;
  nesterov?: boolean;
  beta1?: number;
  beta2?: number;
  epsilon?: number;
  lazy?: boolean;
  beta1Power?: number;
  beta2Power?: number;
  learningRatePower?: number;
  l1?: number;
  l2?: number;
  l2Shrinkage?: number;
}

/** TF's combiners (native/kernels/embedding_combine.h). */
export type NativeCombiner = 'sum' | 'mean' | 'sqrtn';

/** One kernel's description, as native/exec/kernel_def.h registers it. */
export interface NativeKernelTensor {
  name: string;
  dtypes: NativeDType[];
  optional: boolean;
  /** A kernel of placement 'any' reads this input on the host. */
  host: boolean;
  /** An output read and written in place (a variable, a slot, an accumulator). */
  inPlace: boolean;
  /** An output the kernel sizes at run time: its plan value is dynamic, with no memory given. */
  sized: boolean;
}

export interface NativeKernelAttr {
  name: string;
  kind: 'number' | 'integer' | 'boolean' | 'enum' | 'numberList' | 'enumList' | 'optimizer';
  values?: string[];
  required: boolean;
  default?: number;
}

export interface NativeKernelDef {
  name: string;
  placement: 'device' | 'host' | 'any';
  stateful: boolean;
  inputs: NativeKernelTensor[];
  outputs: NativeKernelTensor[];
  /** Entries from this index on repeat as a group (-1: none). */
  repeatInputsFrom: number;
  repeatOutputsFrom: number;
  attrs: NativeKernelAttr[];
}

export interface NativeKernelRegistry {
  version: number;
  dtypes: NativeDType[];
  optimizerRules: Array<NativeOptimizerHyper['rule']>;
  kernels: NativeKernelDef[];
}


export interface NativeAddon {
  TensorHandle: new () => NativeTensorHandle;
  /** Everything but `device`, which is lib/backend.ts's choice. */
  backendReport(): Omit<BackendReport, 'device'>;
  /** Canonical name ('cpu' | 'cuda:N') of a usable device; throws naming `argument` otherwise. */
  resolveDevice(device: string, argument?: string): string;
  /** The emulated CUDA device's schedule, poisoning and counters (HB_CUDA_EMULATE builds; throws elsewhere). */
  cudaEmulation(): { scheduleSeed: number; poison: boolean; launches: number; blocks: number; threads: number; hostWaits: number; deferred: boolean };
  setCudaEmulation(options: { scheduleSeed: number; poison: boolean; deferred?: boolean }): void;
  /** Runs one of cuda/emulation/self_test.cc's kernels on the emulated device. */
  cudaEmulationSelfTest(name: string): { values: number[]; error: string };
  /** The GPU's name, for a usable 'cuda' / 'cuda:N'. */
  cudaDeviceName(device: string): string;

  /** A copy of `values` on `device` (never a view: JS may transfer or resize the array at any time). */
  tensorFromTypedArray(values: TypedArray, shape: number[], device: string): NativeTensorHandle;
  /** A new tensor on `device` whose copy of `tensor` is queued there; `done` settles when it has run. */
  tensorCopy(tensor: NativeTensorHandle, device: string): { handle: NativeTensorHandle; done: Promise<void> };
  /** A float32 tensor whose fill is queued on its device. */
  tensorFill(shape: number[], device: string, spec: NativeFillSpec): NativeTensorHandle;
  /** A CUDA device's free and total memory now, in bytes. */
  cudaMemoryInfo(device: string): { free: number; total: number };
  tensorData(tensor: NativeTensorHandle, into?: TypedArray): Promise<TypedArray>;
  tensorDataDispose(tensor: NativeTensorHandle): Promise<TypedArray>;
  /** A host tensor's values now (waits for the CPU queue); a device tensor is refused. */
  tensorDataSync(tensor: NativeTensorHandle): TypedArray;
  tensorClone(tensor: NativeTensorHandle): Promise<NativeTensorHandle>;
  /** Copies `source` into `destination` (same dtype and size), queued on the destination's device. */
  tensorAssign(destination: NativeTensorHandle, source: NativeTensorHandle): Promise<void>;

  // Files (native/binding/io_binding.cc). A row is the product of shape[1:] elements; a
  // rank-0 tensor is one row. Errors carry code HB_ERR_IO (the OS refused), HB_ERR_CORRUPT
  // (a read past the end of the file) or HB_ERR_OUT_OF_RANGE (rows, positions).
  /**
   * Writes rows [rowBegin, rowEnd) of `tensor` at byte `position` of the existing file
   * `path` (not truncated); resolves to the byte count. Queued on the tensor's device
   * after everything queued there before. With `digest`, the rows are added to it as they
   * are written (hashed on a thread beside the one that writes). `direct` (default false):
   * page-aligned stretches bypass the page cache (O_DIRECT) where the filesystem allows.
   */
  tensorWriteRows(tensor: NativeTensorHandle, rowBegin: number, rowEnd: number, path: string, position: number, digest?: NativeSha256, direct?: boolean): Promise<number>;
  /**
   * Overwrites rows [rowBegin, rowEnd) of `tensor` with the file's bytes from `position`,
   * queued on its device; with `digest`, the bytes are added to it as they land.
   */
  tensorReadRows(tensor: NativeTensorHandle, rowBegin: number, rowEnd: number, path: string, position: number, digest?: NativeSha256): Promise<void>;

  /** Whether the addon found OpenSSL's digest calls in this process (node's own), so that sha256New works. */
  sha256Available(): boolean;
  /**
   * A new digest (lib/io/file_digest.ts): one SHA-256 stream, or with `pieces` the SHA-256
   * of the SHA-256s of 4 MiB pieces, hashed on the pool's threads side by side. `origin`
   * (pieces only): the file offset of the first byte it will be given, for a run of the
   * file's bytes whose whole pieces sha256TakePieces hands over.
   */
  sha256New(pieces?: boolean, origin?: number): NativeSha256;
  /**
   * The 32-byte digests of the whole 4 MiB pieces a digest of pieces hashed, in file order
   * from the first piece boundary at or after its origin; with `fileEnds` the piece it
   * began last counts too (the file's last, shorter piece). The digest is finished after.
   */
  sha256TakePieces(digest: NativeSha256, fileEnds: boolean): Uint8Array;
  /** Adds the bytes to the digest now, on this thread. */
  sha256Update(digest: NativeSha256, bytes: Uint8Array): void;
  /** The hex digest; the digest refuses bytes after it. */
  sha256Hex(digest: NativeSha256): string;
  /**
   * Adds bytes [position, position + length) of the open file `fd` (kept open by the caller
   * until this settles; `name` names it in errors) to the digest, read and hashed on a queue
   * of their own. HB_ERR_CORRUPT when the file is shorter, HB_ERR_IO when unreadable.
   */
  fileSha256Update(digest: NativeSha256, fd: number, name: string, position: number, length: number): Promise<void>;

  /** Fingerprint64 of each value; with numBuckets, TF's to_hash_bucket_fast (uint64 modulo). */
  stringsFingerprint(
    values: Array<string | number | bigint> | NativeFeatureValues,
    offsets: Int32Array | BigInt64Array | undefined,
    numBuckets?: number | bigint,
    device?: string,
  ): BigUint64Array | BigInt64Array;

  unique(ids: BigInt64Array | Int32Array, device: string): Promise<{ uniqueIds: BigInt64Array | Int32Array; inverse: Int32Array }>;
  partitionByOwner(
    ids: BigInt64Array | Int32Array,
    worldSize: number,
    device: string,
  ): Promise<{ ids: BigInt64Array | Int32Array; sizes: Int32Array; restore: Int32Array }>;

  optimizerApply(
    hyper: NativeOptimizerHyper,
    variable: NativeTensorHandle,
    name: string,
    slot0: NativeTensorHandle | null,
    slot1: NativeTensorHandle | null,
    grad: NativeTensorHandle | null,
    values: NativeTensorHandle | null,
    indices: BigInt64Array | Int32Array | null,
    checkOnly?: boolean,
  ): Promise<void>;
  embeddingLookupSparseGrad(
    table: NativeTensorHandle,
    name: string,
    values: BigInt64Array | Int32Array,
    rowSplits: Int32Array,
    weights: Float32Array | null,
    combiner: NativeCombiner,
    outputGrad: NativeTensorHandle,
    maxNorm?: number,
  ): Promise<{ indices: BigInt64Array; values: NativeTensorHandle }>;

  /**
   * A compiled step's fused update of one table: the backward of each lookup of it, then
   * the optimizer's sparse rule on the rows seen (native/train/lookup_backward_apply.h).
   */
  lookupBackwardApply(
    hyper: NativeOptimizerHyper,
    table: NativeTensorHandle,
    name: string,
    slot0: NativeTensorHandle | null,
    slot1: NativeTensorHandle | null,
    lookups: Array<{
      values: BigInt64Array | Int32Array;
      rowSplits: Int32Array;
      weights: Float32Array | null;
      combiner: NativeCombiner;
      maxNorm?: number;
      outputGrad: NativeTensorHandle;
    }>,
  ): Promise<void>;

  embeddingLookupSparse(
    table: NativeTensorHandle,
    name: string,
    values: BigInt64Array | Int32Array,
    rowSplits: Int32Array,
    weights: Float32Array | null,
    combiner: NativeCombiner,
    maxNorm: number,
  ): Promise<NativeTensorHandle>;

  /**
   * The pieces' rows one after another, one copy per array and piece (the batch op's cut
   * across blocks). Synchronous: the arrays are read before it returns.
   */
  concatRows(pieces: NativeRowRange[]): NativeRowGatherResult[];
  /** concatRows on the "data" queue, off the JS thread: the arrays must not change until it settles. */
  concatRowsAsync(pieces: NativeRowRange[]): Promise<NativeRowGatherResult[]>;

  /**
   * An empty shuffle buffer of bufferSize rows, picking with RowRandom(seed, 0). compact
   * (default true) moves its rows into one block when its blocks hold over twice them.
   */
  shuffleBufferNew(bufferSize: number, seed: number, compact?: boolean): NativeShuffleBuffer;
  /**
   * A block enters the buffer (checked and copied on the "data" queue; its arrays must not
   * change until the promise settles): the rows it displaced, or null while filling.
   */
  shuffleBufferPush(buffer: NativeShuffleBuffer, columns: NativeRowBlockColumn[]): Promise<NativeRowGatherResult[] | null>;
  /** Once the input ended: up to maxRows of the rows left, in random order; null when none. */
  shuffleBufferDrain(buffer: NativeShuffleBuffer, maxRows: number): Promise<NativeRowGatherResult[] | null>;
  /** The rows buffered, the rows of the blocks holding them, and how often they were compacted. */
  shuffleBufferStats(buffer: NativeShuffleBuffer): { buffered: number; heldRows: number; compactions: number };
  /** Frees the buffer's blocks now (work in flight keeps what it reads). */
  shuffleBufferRelease(buffer: NativeShuffleBuffer): void;

  /**
   * Dataset.synthetic's rows [firstRow, firstRow + n) (native/data/synthetic_rows.h),
   * written into the block's arrays: label and each dense column n values, each table's
   * row splits n + 1, its ids at least n * hotness[1]. Synchronous: reader threads call it.
   */
  syntheticRows(
    spec: { seed: number; numDense: number; tables: Array<{ vocabularySize: number; hotness: [number, number]; alpha: number }> },
    firstRow: number,
    n: number,
    outputs: { label: Float32Array; dense: Float32Array[]; splits: Int32Array[]; ids: BigInt64Array[] },
  ): void;

  /** The kernel table: names, inputs, outputs, dtypes, attrs (native/exec/kernel_def.h). */
  kernelRegistry(): NativeKernelRegistry;

  /**
   * One registered kernel, eagerly, on the executor of its inputs' device (else
   * `device`, else the host). An output given as a shape is a new float32 tensor of
   * zeros; `{ dtype, shape }` zeros of that dtype; `{ dtype }` alone an output the kernel
   * sizes; a tensor is written in place (accumulators). A null input is an absent
   * optional one, as are trailing optional inputs and outputs left out (null in the
   * result). `name` is the op named in errors.
   */
  kernelRun(
    kernel: string,
    inputs: Array<NativeTensorHandle | null>,
    outputs: Array<number[] | NativeTensorHandle | { dtype: NativeDType; shape?: number[] }>,
    attrs: Record<string, KernelAttrValue>,
    name?: string,
    device?: string,
  ): Promise<Array<NativeTensorHandle | null>>;

  // Dynamic embedding tables (native/embedding/dynamic_table.h; lib/embedding/dynamic_table.ts).
  dynamicTableCreate(spec: {
    name: string; dim: number; init: NativeFillSpec; capacityRows?: number; admitMinCount: number; evictAfterSteps: number; maxRows: number;
    /** Where the rows live ('cpu' when absent); the hash index is in host memory either way. */
    device?: string;
  }): { id: number; handle: NativeTensorHandle; values: NativeTensorHandle; capacityRows: number };
  dynamicTableAddSlot(id: number, initial: number, perRow: boolean): NativeTensorHandle;
  dynamicTableStats(id: number): NativeDynamicTableStats;
  dynamicTableSnapshot(id: number, changesOnly: boolean): Promise<NativeDynamicTableRows>;
  dynamicTableMarkSaved(id: number, step: number): Promise<void>;
  dynamicTableRestore(id: number, saved: Partial<NativeDynamicTableRows>, replace: boolean, worldSize: number, rank: number): Promise<void>;
  dynamicTableRelease(id: number): void;

  // hb.distribute (lib/distribute): the process group and its collectives, each on the
  // group's own queue in call order.
  distInit(config: {
    rank: number; worldSize: number; localRank: number; localWorldSize: number; masterAddr: string; masterPort: number;
    backend: string; device: string; timeoutMs: number;
  }): Promise<void>;
  distShutdown(): Promise<void>;
  distAllreduce(tensor: NativeTensorHandle, op?: string): Promise<NativeTensorHandle>;
  distAllgather(tensor: NativeTensorHandle): Promise<{ tensor: NativeTensorHandle; rowsPerRank: number[] }>;
  distAlltoallv(tensor: NativeTensorHandle, sendCounts: number[], wireDtype?: string): Promise<{ tensor: NativeTensorHandle; recvCounts: number[] }>;
  distBroadcast(tensor: NativeTensorHandle, root: number): Promise<NativeTensorHandle>;
  distBarrier(): Promise<void>;
  /** What this rank's collectives moved since init (payload bytes) and the seconds spent in them. */
  distStats(): { collectives: number; bytesSent: number; bytesReceived: number; seconds: number; transport: 'shm' | 'tcp' | 'nccl' | 'local'; whyNotSharedMemory?: string };

  /** A compiled graph (lib/graph/plan_spec.ts) as a native plan; `params` are bound to spec.params in order. */
  planCreate(spec: PlanSpec, params: NativeTensorHandle[]): NativePlan;
  /**
   * One step of `plan` on its device's executor: feeds are copied now; `hypers` are the
   * optimizers' hyperparameters for this step; resolves to copies of the fetched values.
   */
  planRun(
    plan: NativePlan,
    batchSize: number,
    feeds: Array<Float32Array | BigInt64Array | Int32Array>,
    hypers: NativeOptimizerHyper[],
    fetch: number[],
    globalStep?: number,
  ): Promise<{ outputs: TypedArray[]; nativeMs: number }>;
  /**
   * This rank will not run the step it prepared (its batch failed before planRun): the
   * other ranks, waiting in the step's first exchange, fail with `why` at once.
   */
  planTellPeersOfFailure(plan: NativePlan, why: string): Promise<void>;
  /** For benches: the FMA peak of the GEMM's instruction set, measured on every pool thread for about `seconds`. */
  measureFmaPeak(seconds: number): { isa: 'avx512' | 'avx2' | 'portable'; threads: number; gflops: number };
  /** Starts timing every kernel step of every plan run; false when a profile is already on. */
  profileStart(): boolean;
  /** Ends the profile and returns what it recorded (nothing when none was on). */
  profileStop(): {
    planRuns: number;
    planMs: number;
    kernels: Array<{ kernel: string; phase: 'forward' | 'backward' | 'update' | 'exchange'; calls: number; ms: number; besideOthers: number }>;
  };

  // Feature-column transforms (synchronous; `what` names the column in errors).
  // Values are UTF-8 bytes with Int32Array offsets, or integer typed arrays.
  /** Throws unless a ragged input's rowSplits start at 0, never decrease and end at `count`. */
  featureCheckRowSplits(what: string, rowSplits: Int32Array, count: number): void;
  featureDropMissing(
    what: string,
    values: NativeFeatureValues,
    offsets: Int32Array | undefined,
    valid: Uint8Array | undefined,
    rowSplits: Int32Array,
    weights: Float32Array | undefined,
    dropIgnoreValues: boolean,
  ): { values: Uint8Array | BigInt64Array; offsets?: Int32Array; rowSplits: Int32Array; weights?: Float32Array } | null;
  featureIdentity(what: string, values: Int32Array | BigInt64Array, numBuckets: number, defaultValue: number | undefined): BigInt64Array;
  /** Integer ids widened to int64, any value (a dynamic table's keys). */
  featureRawIds(what: string, values: Int32Array | BigInt64Array): BigInt64Array;
  featureBucketize(what: string, values: Float32Array, sourceDim: number, boundaries: Float32Array): BigInt64Array;
  featureCross(
    what: string,
    inputs: Array<[NativeFeatureValues, Int32Array | undefined, Int32Array]>,
    numBuckets: number,
    hashKey: bigint,
  ): { ids: BigInt64Array; rowSplits: Int32Array };
  featureIndicator(what: string, ids: BigInt64Array, rowSplits: Int32Array, weights: Float32Array | undefined, numBuckets: number): Float32Array;
  featureConcatRows(parts: Float32Array[], widths: number[], rows: number): Float32Array;
  featureRegularSplits(rows: number, width: number): Int32Array;
  featureFirstNaN(values: Float32Array): number;
  VocabularyTable: new (
    what: string,
    keys: NativeFeatureValues,
    offsets: Int32Array | undefined,
    numOovBuckets: number,
    defaultValue: number,
  ) => NativeVocabularyTable;
}

/** An opaque compiled plan. */
export type NativePlan = { readonly __plan: unique symbol };

export type NativeFeatureValues = Uint8Array | Int32Array | BigInt64Array;

export interface NativeVocabularyTable {
  readonly size: number;
  readonly stringKeys: boolean;
  lookup(values: NativeFeatureValues, offsets: Int32Array | undefined): BigInt64Array;
}

function load(): NativeAddon {
  const explicit = process.env.HB_ADDON;
  if (explicit) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      return require(path.resolve(explicit)) as NativeAddon;
    } catch (error) {
      throw new Error(`hb-ts: HB_ADDON=${explicit} does not load (${(error as Error).message.split('\n')[0]}); unset HB_ADDON to use the package's own build`);
    }
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const nodeGypBuild = require('node-gyp-build') as (dir: string) => NativeAddon;
  try {
    return nodeGypBuild(packageRoot());
  } catch (error) {
    throw new Error(
      `hb-ts: the native addon is not built or does not load here (${(error as Error).message}). ` +
        'Run `npm run build:addon` in the hb-ts package (needs cmake or node-gyp, and g++).',
    );
  }
}

/** Refuses an addon built from other sources than this TypeScript (a stale build). */
function checkVersion(addon: NativeAddon): NativeAddon {
  const version = typeof addon.kernelRegistry === 'function' ? addon.kernelRegistry().version : undefined;
  if (version !== KERNEL_REGISTRY_VERSION) {
    throw new Error(
      `hb-ts: the native addon speaks kernel registry version ${String(version ?? 'unknown (too old)')} but this ` +
        `hb-ts needs ${KERNEL_REGISTRY_VERSION}: it was built from other sources. Rebuild it with \`npm run build:addon\`.`,
    );
  }
  return addon;
}

export const native: NativeAddon = checkVersion(load());
