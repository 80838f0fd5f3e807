// A table without a vocabulary (embBackend: 'DYNAMIC'): rows keyed by any int64 id, made
// in training on first use (after `admitMinCount` sightings), dropped when unseen for
// `evictAfterSteps` global steps or beyond `maxRows` (least recently used first). The
// index and the row pool are native (native/embedding/dynamic_table.h); the pool is a
// [capacity, dim] block that only commits what rows use, on the model's device (a GPU's
// address space backed as rows are made) or in host memory (embDevice: 'cpu'), so the
// lookup is the fixed table's chain with one op between unique and gather_rows,
// dynamic_rows, turning ids into pool rows (-1: none yet, read as zeros, not updated).
// The index is in host memory wherever the rows are: a step on a GPU sends it the step's
// distinct ids and gets row numbers back, and the rows stay on the device. Sharded over a
// job, id x lives on rank x floormod W, whose index keys it by x itself.
//
// A new row holds what row x of a fixed table with the same seeded initializer holds, so
// ids 0..n-1 of a dynamic table start (and, with the same updates, stay) equal to a fixed
// table of n rows. Checkpoints hold live rows in id order (ids, values, slots, last seen,
// counts) and restore into any world size.
import { currentDevice } from '../backend';
import { Graph, maybeCurrentGraph, SymbolicTensor } from '../graph/graph';
import { alltoallv } from '../graph/ops/exchange';
import { dynamicRows, tableHandle } from '../graph/ops/dynamic_rows';
import { gatherRows } from '../graph/ops/gather_rows';
import { partitionByOwner } from '../graph/ops/partition_by_owner';
import { pruneIds } from '../graph/ops/prune_ids';
import { restoreOrder } from '../graph/ops/restore_order';
import { segmentCombine } from '../graph/ops/segment_combine';
import { unique } from '../graph/ops/unique';
import type { SymbolicRagged } from '../graph/ragged_feed';
import { seedFor } from '../initializers/random_seed';
import { CheckpointDType, CheckpointTensor, hostZeros } from '../io/checkpoint_file';
import type { CheckpointSource } from '../io/checkpoint_source';
import { native, NativeDynamicTableRows, NativeDynamicTableStats } from '../native';
import { Ragged } from '../tensor/ragged';
import { Tensor } from '../tensor/tensor';
import { isPlanning, plannedVariable, Variable } from '../tensor/variable';
import { isPlannedTable, plannedTableRows } from './planned_table';
import { EmbeddingTable, EmbeddingTableSpec, EmbeddingTableStats, GradientApplier, LookupOptions } from './embedding_table';
import { TablePlacement } from './placement';
import { shownValue } from '../shown_value';

export interface DynamicTableOptions {
  /** Training lookups of an id before it gets a row (1: at once). */
  admitMinCount: number;
  /** A row unseen for more than this many global steps is evicted (0: never). */
  evictAfterSteps: number;
  /** At most this many rows on this rank; the least recently used go first (0: no cap). */
  maxRows: number;
}

export interface DynamicTableStats extends EmbeddingTableStats, Omit<NativeDynamicTableStats, 'rows'> {
  backend: 'DYNAMIC';
}

/** A saved tensor of a dynamic table: rows counted at save time (-1 rows: any number). */
export interface DynamicSavedTensor {
  name: string;
  dtype: CheckpointDType;
  shape: number[];
}

export class DynamicEmbeddingTable extends EmbeddingTable {
  /** Read by the sparse update: ids without a row (-1) are skipped. */
  readonly dynamic = true;
  readonly dynamicOptions: DynamicTableOptions;
  private nativeId?: number;
  private handleTensor?: Tensor;
  private snapshot?: NativeDynamicTableRows;
  private snapshotIsDelta = false;

  constructor(spec: EmbeddingTableSpec, placement: TablePlacement, options: DynamicTableOptions) {
    super(spec, placement);
    const where = `embedding table '${spec.name}'`;
    if (placement.kind === 'replicated') throw new Error(`${where}: a dynamic table cannot be replicated; it is sharded over a job, or local`);
    const counts: Array<[keyof DynamicTableOptions, number]> = [
      ['admitMinCount', 1],
      ['evictAfterSteps', 0],
      ['maxRows', 0],
    ];
    for (const [key, min] of counts) {
      const v: unknown = options[key];
      if (!Number.isSafeInteger(v) || (v as number) < min) {
        const message = `${where}: emb${key[0].toUpperCase()}${key.slice(1)} must be an integer >= ${min}, got ${shownValue(v)}`;
        throw typeof v === 'number' ? new RangeError(message) : new TypeError(message);
      }
    }
    this.dynamicOptions = { ...options };
  }

  protected override another(): EmbeddingTable {
    return new DynamicEmbeddingTable(this.spec, this.placement, this.dynamicOptions);
  }

  /** The row pool's capacity on this rank (the most rows it can hold at once). */
  override get localRows(): number {
    this.variableOn();
    return this.storage!.shape[0];
  }

  /** The row pool, made on first use on the placement's device ('' there: `defaultDevice`, else the current device). */
  override variableOn(defaultDevice?: string): Variable {
    // A model being planned that asks for the rows gets its planned ones (see EmbeddingTable).
    const planned = isPlanning() && !isPlannedTable(this) ? maybeCurrentGraph() : undefined;
    if (planned) return this.inGraph(planned).variableOn();
    if (!this.isMade) {
      const { spec } = this;
      if (spec.initializer.holdsValues) {
        throw new Error(`embedding table '${spec.name}' is dynamic: its rows are made on first use, so an initializer of given values (initializers.constant of an array) does not apply; use a fixed table to start from pretrained rows`);
      }
      const fill = spec.initializer.fillSpec([spec.rows, spec.dim]);
      const init = fill.seed === undefined && fill.kind !== 'constant' ? { ...fill, seed: seedFor(spec.name) } : fill;
      const device = this.placement.device === '' ? (defaultDevice ?? currentDevice()) : this.placement.device;
      const made = native.dynamicTableCreate({ name: spec.name, dim: spec.dim, init, device, ...this.dynamicOptions });
      this.nativeId = made.id;
      this.handleTensor = new Tensor(made.handle);
      const pool = new Variable(made.values, spec.name, spec.trainable);
      pool.slotOwner = this;
      this.storage = pool;
      this.slotVariables.clear();
    }
    return this.storage as Variable;
  }

  private get id(): number {
    this.variableOn();
    return this.nativeId as number;
  }

  override createSlot(name: string, initialValue: number, perRow: boolean): Variable {
    const handle = native.dynamicTableAddSlot(this.id, initialValue, perRow);
    const slot = new Variable(handle, name, false);
    this.slotVariables.set(name, slot);
    return slot;
  }

  /**
   * tf.nn.safe_embedding_lookup_sparse of `ids` (int64, any value) now, reading only: an
   * id without a row reads zeros. Rows are made by training steps.
   */
  override async lookup(ids: Ragged, options: LookupOptions): Promise<Tensor> {
    this.refuseEagerShardOfDynamic('lookup');
    const name = options.name ?? this.name;
    // int32 ids widened natively (no per-id loop here); int64 taken as they are.
    const values = native.featureRawIds(`embedding table '${this.name}': ids`, ids.values as Int32Array | BigInt64Array);
    const idsT = new Tensor(native.tensorFromTypedArray(values, [values.length], 'cpu'));
    const splitsT = new Tensor(native.tensorFromTypedArray(ids.rowSplits, [ids.rowSplits.length], 'cpu'));
    const owned: Tensor[] = [idsT, splitsT];
    try {
      const pruneIn = [idsT, splitsT];
      if (ids.weights) {
        const w = new Tensor(native.tensorFromTypedArray(ids.weights, [ids.weights.length], 'cpu'));
        owned.push(w);
        pruneIn.push(w);
      }
      const pruned = await native.kernelRun('prune_ids', pruneIn.map((t) => t.handle), [{ dtype: 'int64' }, { dtype: 'int32' }, ...(ids.weights ? [{ dtype: 'float32' as const }] : [])], { combiner: options.combiner, keepNegative: true }, `${name}/prune_ids`);
      const [prunedIds, prunedSplits, prunedWeights] = pruned.map((h) => (h ? new Tensor(h) : undefined));
      owned.push(...[prunedIds, prunedSplits, prunedWeights].filter((t): t is Tensor => t !== undefined));
      const [distinct, inverse] = (await native.kernelRun('unique', [prunedIds!.handle], [{ dtype: 'int64' }, { dtype: 'int32' }], {}, `${name}/unique`)).map((h) => new Tensor(h!));
      owned.push(distinct, inverse);
      const rows = new Tensor((await native.kernelRun('dynamic_rows', [this.handleTensor!.handle, distinct.handle], [{ dtype: 'int64' }], { train: false }, `${name}/dynamic_rows`))[0]!);
      owned.push(rows);
      const [gathered] = (await native.kernelRun('gather_rows', [this.variable.handle, rows.handle], [{ dtype: 'float32' }], { maxNorm: options.maxNorm ?? 0 }, `${name}/gather_rows`)).map((h) => new Tensor(h!));
      owned.push(gathered);
      // Combined where the rows are (the table's device), its ids read on the host.
      const out = await native.kernelRun(
        'segment_combine',
        [gathered.handle, prunedSplits!.handle, inverse.handle, prunedWeights ? prunedWeights.handle : null],
        [[ids.nrows, this.spec.dim]],
        { combiner: options.combiner },
        name,
      );
      return new Tensor(out[0]!);
    } finally {
      for (const t of owned) t.dispose();
    }
  }

  private refuseEagerShardOfDynamic(what: string): void {
    if (this.isSharded) {
      throw new Error(`embedding table '${this.name}' is sharded over ${this.placement.worldSize} ranks: an eager ${what} would need every rank; use it inside a modelFn`);
    }
  }

  /**
   * The table this one is in `graph`: itself, or the table of the same name the model
   * registered first (a modelFn that makes its columns at each call makes this table
   * again; the rows, their index and the slots are the first one's).
   */
  private inGraph(graph: Graph): DynamicEmbeddingTable {
    // Planned: one row stands for the rows to come (their bytes are per row, not reserved).
    const made = () =>
      isPlanning() ? plannedTableRows(this, 1, this.placement.device === '' ? graph.device : this.placement.device) : this.forStore(graph.store).variableOn(graph.device);
    const pool = graph.store.adopt(this.name, made, [-1, this.spec.dim], (existing) => (existing.slotOwner instanceof DynamicEmbeddingTable ? undefined : 'one fixed, one dynamic'));
    return pool.slotOwner instanceof DynamicEmbeddingTable ? pool.slotOwner : this;
  }

  override graphVariable(graph: Graph): SymbolicTensor {
    const pool = this.inGraph(graph).variableOn(graph.device);
    if (pool.device !== 'cpu' && pool.device !== graph.device) {
      throw new Error(`embedding table '${this.name}' is on ${pool.device} but the model runs on ${graph.device}; use embDevice: 'cpu' or '${graph.device}'`);
    }
    const p = this.placement;
    if (p.kind !== 'local' && graph.world.size !== p.worldSize) {
      throw new Error(`embedding table '${this.name}' is ${p.kind} over ${p.worldSize} ranks but the model is built for a world of ${graph.world.size}`);
    }
    return graph.variableTensor(pool);
  }

  override lookupGraph(graph: Graph, ids: SymbolicRagged, options: LookupOptions): SymbolicTensor {
    const owner = this.inGraph(graph);
    if (owner !== this) return owner.lookupGraph(graph, ids, options);
    const pool = this.graphVariable(graph);
    const name = options.name ?? this.name;
    const train = graph.mode === 'train';
    // A planned model (an export's) has no native table: a stand-in handle the export binds.
    const handleTensor = this.handleTensor ?? (isPlanning() ? plannedVariable(`${this.name}/handle`, [1], 'int64', 'cpu', false) : undefined);
    if (!handleTensor) throw new Error(`embedding table '${this.name}': its native table was not made`);
    const handle = tableHandle(graph, handleTensor, name, this.name);
    if (ids.ids.dtype !== 'int64') throw new TypeError(`${name}: a dynamic table takes int64 ids, got ${ids.ids.dtype}`);
    const pruned = pruneIds(ids.ids, ids.rowSplits, ids.weights, options.combiner, `${name}/prune_ids`, true);
    const distinct = unique(pruned.ids, `${name}/unique`);
    const p = this.placement;
    let rowsRead: SymbolicTensor;
    if (p.kind === 'sharded') {
      // HybridBackend's exchange, keyed by the ids themselves: each owner finds (and in
      // training makes) the rows of the ids it owns. Admission counts each rank's
      // sighting of an id in a step once.
      const W = p.worldSize;
      const routed = partitionByOwner(distinct.ids, W, `${name}/partition_by_owner`);
      const requested = alltoallv(routed.ids, routed.sizes, { worldSize: W, name: `${name}/exchange_ids` });
      const rows = dynamicRows(handle, requested.values, { train, name: `${name}/dynamic_rows` });
      const found = gatherRows(pool, rows, { maxNorm: options.maxNorm ?? 0, name: `${name}/gather_rows` });
      const answered = alltoallv(found, requested.counts, { worldSize: W, wire: options.wire ?? 'float32', gradScale: 1 / W, name: `${name}/exchange_rows` });
      rowsRead = restoreOrder(answered.values, routed.restore, `${name}/restore_order`);
    } else {
      const rows = dynamicRows(handle, distinct.ids, { train, inverse: distinct.inverse, name: `${name}/dynamic_rows` });
      rowsRead = gatherRows(pool, rows, { maxNorm: options.maxNorm ?? 0, name: `${name}/gather_rows` });
    }
    return segmentCombine(rowsRead, pruned.rowSplits, { idx: distinct.inverse, weights: pruned.weights, rowIds: distinct.ids, combiner: options.combiner, name });
  }

  override async applyGradients(_optimizer: GradientApplier, _grads: unknown[]): Promise<void> {
    throw new Error(`embedding table '${this.name}' is dynamic: it trains inside a modelFn (the Estimator or MonitoredTrainingSession), where each step makes the rows it updates`);
  }

  /** The names a checkpoint holds for this table. */
  get savedNames(): string[] {
    const t = this.name;
    return [t, `${t}/ids`, `${t}/meta`, `${t}/pending_ids`, `${t}/pending_meta`, ...this.slotVariables.keys()];
  }

  /** The tensors a checkpoint holds for this table (a delta's with `<table>/removed_ids`). */
  describeDynamic(delta = false): DynamicSavedTensor[] {
    const t = this.name;
    const dim = this.spec.dim;
    return [
      { name: t, dtype: 'float32', shape: [-1, dim] },
      { name: `${t}/ids`, dtype: 'int64', shape: [-1] },
      { name: `${t}/meta`, dtype: 'int64', shape: [-1, 3] },
      { name: `${t}/pending_ids`, dtype: 'int64', shape: [-1] },
      { name: `${t}/pending_meta`, dtype: 'int64', shape: [-1, 2] },
      ...(delta ? [{ name: `${t}/removed_ids`, dtype: 'int64' as const, shape: [-1] }] : []),
      // A slot one float wide (per row, or of a table of dim 1) is saved [n], as the native snapshot holds it.
      ...[...this.slotVariables.values()].map((s) => ({ name: s.name, dtype: 'float32' as const, shape: s.shape.length === 1 || dim === 1 ? [-1] : [-1, dim] })),
    ];
  }

  /**
   * Reads the live rows out (in id order), for the save that follows; `changes`: only
   * what changed since the last full save (rows updated, ids waiting, ids removed), for
   * a delta checkpoint.
   */
  async prepareSave(changes = false): Promise<void> {
    this.disposeSnapshot();
    this.snapshot = await native.dynamicTableSnapshot(this.id, changes);
    this.snapshotIsDelta = changes;
  }

  /** What prepareSave read, as the checkpoint's tensors (a delta's with `<table>/removed_ids`). */
  saveDynamic(): CheckpointTensor[] {
    const s = this.snapshot;
    if (!s) throw new Error(`embedding table '${this.name}': save before prepareSave`);
    const t = this.name;
    const entry = (name: string, h: NonNullable<NativeDynamicTableRows['ids']>): CheckpointTensor => ({
      name,
      dtype: h.dtype as CheckpointDType,
      shape: [...(h.shape as number[])],
      data: { tensor: h },
    });
    const slots = [...this.slotVariables.keys()].map((name, k) => entry(name, s.slots[k]!));
    const removed = this.snapshotIsDelta ? [entry(`${t}/removed_ids`, s.removedIds)] : [];
    return [entry(t, s.values), entry(`${t}/ids`, s.ids), entry(`${t}/meta`, s.meta), entry(`${t}/pending_ids`, s.pendingIds), entry(`${t}/pending_meta`, s.pendingMeta), ...removed, ...slots];
  }

  /** The live rows now, in id order (an export of a model without a modelDir). */
  async liveRows(): Promise<{ ids: BigInt64Array; values: Float32Array }> {
    const s = await native.dynamicTableSnapshot(this.id, false);
    try {
      return { ids: (await native.tensorData(s.ids)) as BigInt64Array, values: (await native.tensorData(s.values)) as Float32Array };
    } finally {
      for (const h of [s.ids, s.values, s.meta, s.pendingIds, s.pendingMeta, s.removedIds, ...s.slots]) h?.dispose();
    }
  }

  /**
   * The save of step `globalStep` is durable: the snapshot goes. A full save is the base
   * that later deltas are taken against; a delta leaves the base as it was.
   */
  async saved(globalStep: number, delta = false): Promise<void> {
    this.disposeSnapshot();
    if (!delta) await native.dynamicTableMarkSaved(this.id, globalStep);
  }

  private disposeSnapshot(): void {
    const s = this.snapshot;
    this.snapshot = undefined;
    if (!s) return;
    for (const h of [s.ids, s.values, s.meta, s.pendingIds, s.pendingMeta, s.removedIds, ...s.slots]) h?.dispose();
  }

  /**
   * Restores the rows (this rank's ids, when sharded) from a checkpoint of any world size;
   * resolves to the names read. A slot the checkpoint lacks starts at its initial value.
   * `delta`: the source holds changes on top of the full checkpoint restored just before
   * (rows put over it, its removed ids dropped), and that full checkpoint stays the base.
   */
  async restoreDynamic(source: CheckpointSource, only?: ReadonlySet<string>, delta = false): Promise<string[]> {
    const t = this.name;
    const got: Array<{ dispose(): void } | null> = [];
    const read = async (name: string) => {
      const entry = source.entries.get(name);
      if (!entry) return null;
      const host = hostZeros(entry.dtype, entry.shape);
      got.push(host);
      await source.read(name, host);
      return host;
    };
    const needed = [t, `${t}/ids`, `${t}/meta`];
    for (const name of needed) if (!source.entries.has(name)) throw new Error(`checkpoint ${source.path} has no '${name}'`);
    try {
      // In the file's order (its int64 tensors first, then the values and slots): with the
      // tables before and after this one, the int64 reads and the float reads each continue
      // one run, so the restore hashes what it reads and reads little again (verified_reads.ts).
      const ids = (await read(`${t}/ids`))!;
      const meta = (await read(`${t}/meta`))!;
      const pendingIds = await read(`${t}/pending_ids`);
      const pendingMeta = await read(`${t}/pending_meta`);
      const removedIds = delta ? await read(`${t}/removed_ids`) : null;
      if (delta && !removedIds) throw new Error(`checkpoint ${source.path} is a delta but has no '${t}/removed_ids'`);
      const values = (await read(t))!;
      const slotNames = [...this.slotVariables.keys()];
      const slots: Array<ReturnType<typeof hostZeros> | null> = [];
      for (const n of slotNames) slots.push(only && !only.has(n) ? null : await read(n));
      const { worldSize, rank } = this.placement;
      const saved = { ids, values, meta, slots, pendingIds: pendingIds ?? undefined, pendingMeta: pendingMeta ?? undefined, removedIds: removedIds ?? undefined };
      await native.dynamicTableRestore(this.id, saved, !delta, worldSize, rank);
      if (!delta) await native.dynamicTableMarkSaved(this.id, source.globalStep);
      return [t, `${t}/ids`, `${t}/meta`, ...slotNames.filter((_, k) => slots[k] !== null)];
    } finally {
      for (const h of got) h?.dispose();
    }
  }

  override save(): CheckpointTensor[] {
    return this.saveDynamic();
  }

  override async restoreFrom(source: CheckpointSource, only?: ReadonlySet<string>): Promise<string[]> {
    return this.restoreDynamic(source, only);
  }

  override async load(): Promise<string[]> {
    throw new Error(`embedding table '${this.name}' is dynamic: restore it from a checkpoint (restoreFrom), not by row ranges`);
  }

  override describeSaved(): Array<{ name: string; dtype: 'float32'; shape: number[] }> {
    return this.describeDynamic() as Array<{ name: string; dtype: 'float32'; shape: number[] }>;
  }

  override stats(): DynamicTableStats {
    const s = native.dynamicTableStats(this.id);
    return {
      ...s,
      backend: 'DYNAMIC',
      name: this.name,
      rows: s.rows,
      localRows: s.rows,
      dim: this.spec.dim,
      dtype: this.spec.dtype,
      device: 'cpu',
      placement: this.placement.kind,
      bytes: s.rows * s.rowBytes,
      slots: [...this.slotVariables.values()].map((v) => ({ name: v.name, bytes: s.rows * (v.shape.length === 1 ? 4 : s.rowBytes) })),
    };
  }
}
