// An embedding table as one object: its spec (rows, dim, dtype, initializer and seed),
// its placement (device; local, and later sharded or replicated), its storage and the
// optimizer slots kept beside its rows. It answers lookups (eager, or as a chain of graph
// ops inside a modelFn), applies gradients, saves and loads row ranges natively (a table
// never passes through the JS heap) and reports what it holds. Storage is one dense block
// on the placement's device: every row ('local', 'replicated'), or this rank's shard
// ('sharded': rows x with x floormod W == rank, at local row x floordiv W, each made with
// the values row x has in the whole table, so a seeded table is the same at any world
// size). The dynamic hash table plugs in behind the same methods.
import { currentDevice } from '../backend';
import { CheckpointHeader, CheckpointTensor, loadTensorRows } from '../io/checkpoint_file';
import type { CheckpointSource } from '../io/checkpoint_source';
import { Graph, maybeCurrentGraph, SymbolicTensor } from '../graph/graph';
import { LookupCombiner } from '../graph/ops/segment_combine';
import type { SymbolicRagged } from '../graph/ragged_feed';
import { constant, Initializer } from '../initializers/initializers';
import { embeddingLookupSparse } from '../nn/embedding_lookup_sparse';
import { IndexedSlices } from '../tensor/indexed_slices';
import { Ragged } from '../tensor/ragged';
import { runKernel } from '../tensor/run_kernel';
import { Tensor } from '../tensor/tensor';
import { isPlanning, SlotOwner, Variable, variable } from '../tensor/variable';
import { isPlannedTable, plannedTableRows } from './planned_table';
import { reserveMemory } from '../tensor/memory_budget';
import type { WireDType } from '../graph/ops/exchange';
import { lookupChain } from './lookup_chain';
import { shardRows, TablePlacement } from './placement';
import { shardedLookupChain } from './sharded_lookup_chain';
import { shownValue } from '../shown_value';

export interface EmbeddingTableSpec {
  /** The checkpoint's name (`<column>_embedding/embedding_weights`). */
  name: string;
  rows: number;
  dim: number;
  dtype: 'float32';
  /** Its seed (if any) makes the initial rows the same in every run. */
  initializer: Initializer;
  trainable: boolean;
}

export interface LookupOptions {
  combiner: LookupCombiner;
  maxNorm?: number;
  /** Names the lookup in errors (the column's name). */
  name?: string;
  /** How a sharded table's rows travel between ranks (embWireDtype); default float32. */
  wire?: WireDType;
}

export interface EmbeddingTableStats {
  name: string;
  rows: number;
  /** The rows this rank holds (its shard's, when sharded). */
  localRows: number;
  dim: number;
  dtype: string;
  /** Where the rows are; undefined until the table is made (first use). */
  device?: string;
  placement: TablePlacement['kind'];
  /** Bytes of the rows, and of each optimizer slot. */
  bytes: number;
  slots: Array<{ name: string; bytes: number }>;
}

/** Something with TF's applyGradients (an hb.train optimizer). */
export interface GradientApplier {
  applyGradients(pairs: Array<[IndexedSlices, Variable]>): Promise<void>;
}

export class EmbeddingTable implements SlotOwner {
  readonly spec: EmbeddingTableSpec;
  readonly placement: TablePlacement;
  protected storage?: Variable;
  protected readonly slotVariables = new Map<string, Variable>();
  /** The model (its variable store) whose rows these are, once one has taken them. */
  private claimedBy?: object;
  /** The tables of the same spec that other models hold (see forStore). */
  private readonly otherModels = new WeakMap<object, EmbeddingTable>();

  constructor(spec: EmbeddingTableSpec, placement: TablePlacement) {
    const where = `embedding table '${spec.name}'`;
    for (const key of ['rows', 'dim'] as const) {
      const value: unknown = spec[key];
      if (!Number.isSafeInteger(value) || (value as number) < 1) {
        const message = `${where}: ${key} must be an integer >= 1, got ${shownValue(value)}`;
        throw typeof value === 'number' ? new RangeError(message) : new TypeError(message);
      }
    }
    if (spec.dtype !== 'float32') throw new Error(`${where}: dtype '${spec.dtype}' is not implemented yet; tables are float32`);
    if (placement.kind === 'sharded' && shardRows(spec.rows, placement.worldSize, placement.rank) < 1) {
      throw new Error(`${where}: ${spec.rows} rows cannot be sharded over ${placement.worldSize} ranks (each needs at least one); replicate it`);
    }
    this.spec = spec;
    this.placement = placement;
  }

  get name(): string {
    return this.spec.name;
  }

  /** The rows this rank holds: its shard's when sharded, else all of them. */
  get localRows(): number {
    const p = this.placement;
    return p.kind === 'sharded' ? shardRows(this.spec.rows, p.worldSize, p.rank) : this.spec.rows;
  }

  /** Whether this rank holds only a shard of the rows. */
  get isSharded(): boolean {
    return this.placement.kind === 'sharded';
  }

  /** Whether the rows exist yet (they are made on first use). */
  get isMade(): boolean {
    return this.storage !== undefined && !this.storage.isDisposed;
  }

  /**
   * The rows as a [rows, dim] variable, made on first use on the placement's device
   * ('' there: `defaultDevice`, else the current device).
   */
  variableOn(defaultDevice?: string): Variable {
    // A model being planned (hb.estimator.memoryPlan) that asks for the rows (a varList of
    // column variables) gets its planned ones, not these made.
    const planned = isPlanning() && !isPlannedTable(this) ? maybeCurrentGraph() : undefined;
    if (planned) return this.graphVariableOf(planned);
    if (!this.isMade) {
      const device = this.placement.device === '' ? (defaultDevice ?? currentDevice()) : this.placement.device;
      const p = this.placement;
      reserveMemory(device, this.localRows * this.spec.dim * 4, `embedding table '${this.name}' (${this.localRows} x ${this.spec.dim})`);
      const made = variable(this.spec.initializer, {
        shape: [this.localRows, this.spec.dim],
        name: this.spec.name,
        trainable: this.spec.trainable,
        device,
        exactName: true,
        shardOf: p.kind === 'sharded' ? { rows: this.spec.rows, stride: p.worldSize, offset: p.rank } : undefined,
      });
      made.slotOwner = this;
      this.storage = made;
      this.slotVariables.clear();
    }
    return this.storage as Variable;
  }

  get variable(): Variable {
    return this.variableOn();
  }

  /** @internal An optimizer's slot beside the rows: same device, one value per element (or per row). */
  createSlot(name: string, initialValue: number, perRow: boolean): Variable {
    const rows = this.variable;
    reserveMemory(rows.device, (perRow ? this.localRows : this.localRows * this.spec.dim) * 4, `optimizer slot '${name}'`);
    const slot = variable(constant(initialValue), { shape: perRow ? [this.localRows] : [this.localRows, this.spec.dim], device: rows.device, name, trainable: false, exactName: true });
    this.slotVariables.set(name, slot);
    return slot;
  }

  /** The optimizer slots made so far, by name (`<table>/Adagrad`, ...). */
  get slots(): ReadonlyMap<string, Variable> {
    return this.slotVariables;
  }

  /** tf.nn.safe_embedding_lookup_sparse of `ids` now: [ids.nrows, dim] on the table's device. */
  lookup(ids: Ragged, options: LookupOptions): Promise<Tensor> {
    this.refuseEagerShard('lookup');
    return embeddingLookupSparse(this.variable, ids, { combiner: options.combiner, maxNorm: options.maxNorm, name: options.name ?? this.name });
  }

  /**
   * The table whose rows `store` (one model's variables) holds: this one for the first
   * model to ask (which shares them with eager use), a new one of the same spec and
   * placement for each other model. Columns made once and given to two Estimators (a
   * modelFn built once) then train two models, as in TF, where each Estimator's graph
   * makes its own variables; one table for both had the second train, restore and take
   * the optimizer slots of the first one's rows.
   */
  protected forStore(store: object): EmbeddingTable {
    if (this.claimedBy === undefined || this.claimedBy === store) {
      this.claimedBy = store;
      return this;
    }
    let own = this.otherModels.get(store);
    if (!own) {
      own = this.another();
      own.claimedBy = store;
      this.otherModels.set(store, own);
    }
    return own;
  }

  /** A table of the same spec and placement, its rows not made yet. */
  protected another(): EmbeddingTable {
    return new EmbeddingTable(this.spec, this.placement);
  }

  /** The rows as `graph`'s model holds them (planned ones while it is planned). */
  private graphVariableOf(graph: Graph): Variable {
    const made = () =>
      isPlanning()
        ? plannedTableRows(this, this.localRows, this.placement.device === '' ? graph.device : this.placement.device)
        : this.forStore(graph.store).variableOn(graph.device);
    return graph.store.adopt(this.name, made, [this.localRows, this.spec.dim], (existing) => ((existing.slotOwner as { dynamic?: boolean } | undefined)?.dynamic ? 'one fixed, one dynamic' : undefined));
  }

  /**
   * The rows as a tensor of `graph` (this rank's shard, when sharded), made on first use
   * on the graph's device unless the placement says where; checked against the graph's
   * world.
   */
  graphVariable(graph: Graph): SymbolicTensor {
    const rows = this.graphVariableOf(graph);
    if (rows.device !== 'cpu' && rows.device !== graph.device) {
      throw new Error(`embedding table '${this.name}' is on ${rows.device} but the model runs on ${graph.device}; use embDevice: 'cpu' or '${graph.device}'`);
    }
    const p = this.placement;
    if (p.kind !== 'local' && graph.world.size !== p.worldSize) {
      throw new Error(`embedding table '${this.name}' is ${p.kind} over ${p.worldSize} ranks but the model is built for a world of ${graph.world.size}`);
    }
    return graph.variableTensor(rows);
  }

  /** The same inside a modelFn: a chain of graph ops over the ragged feed `ids`; [batch, dim]. */
  lookupGraph(graph: Graph, ids: SymbolicRagged, options: LookupOptions): SymbolicTensor {
    const table = this.graphVariable(graph);
    const name = options.name ?? this.name;
    const p = this.placement;
    if (p.kind === 'sharded') {
      return shardedLookupChain(table, ids, {
        combiner: options.combiner,
        maxNorm: options.maxNorm,
        name,
        worldSize: p.worldSize,
        rank: p.rank,
        rows: this.spec.rows,
        wire: options.wire ?? 'float32',
      });
    }
    return lookupChain(table, ids, { combiner: options.combiner, maxNorm: options.maxNorm, name });
  }

  private refuseEagerShard(what: string): void {
    if (this.isSharded) {
      throw new Error(
        `embedding table '${this.name}' is sharded over ${this.placement.worldSize} ranks: an eager ${what} would need every rank to take part; ` +
          'use it inside a modelFn (the Estimator or MonitoredTrainingSession), where each step exchanges rows between the ranks',
      );
    }
  }

  /**
   * `optimizer`'s update from sparse gradients of this table: one update, the slices'
   * rows stacked (duplicates summed), as TF aggregates IndexedSlices of one variable.
   */
  async applyGradients(optimizer: GradientApplier, grads: IndexedSlices[]): Promise<void> {
    if (!Array.isArray(grads) || grads.length === 0 || !grads.every((g) => g instanceof IndexedSlices)) {
      const message = `embedding table '${this.name}': applyGradients takes a non-empty array of hb.IndexedSlices`;
      throw Array.isArray(grads) && grads.length === 0 ? new Error(message) : new TypeError(message);
    }
    this.refuseEagerShard('applyGradients');
    const rows = this.variable;
    if (grads.length === 1) return optimizer.applyGradients([[grads[0], rows]]);
    const count = grads.reduce((n, g) => n + g.indices.length, 0);
    // Indices keep their type where all agree (typed-array copies, no per-id work in JS);
    // only a mix of int32 and int64 widens the int32 ones.
    let indices: Int32Array | BigInt64Array;
    if (grads.every((g) => g.indices instanceof Int32Array)) {
      const stacked = new Int32Array(count);
      grads.reduce((at, g) => (stacked.set(g.indices as Int32Array, at), at + g.indices.length), 0);
      indices = stacked;
    } else {
      const stacked = new BigInt64Array(count);
      const wide = (ids: Int32Array | BigInt64Array) => (ids instanceof BigInt64Array ? ids : BigInt64Array.from(ids, (x) => BigInt(x)));
      grads.reduce((at, g) => (stacked.set(wide(g.indices), at), at + g.indices.length), 0);
      indices = stacked;
    }
    const [values] = await runKernel('concat', grads.map((g) => g.values), [[count, this.spec.dim]], { axis: 0 }, this.name);
    return optimizer.applyGradients([[new IndexedSlices(values, indices), rows]]);
  }

  /**
   * What a checkpoint saves of rows [begin, end): the rows and each slot's, as native
   * row sources (streamed by the addon, never copied into JS), under their own names.
   */
  save(rowRange: [number, number] = [0, this.localRows]): CheckpointTensor[] {
    const [begin, end] = this.checkRange(rowRange, 'save');
    const source = (v: Variable): CheckpointTensor => ({
      name: v.name,
      dtype: 'float32',
      shape: [end - begin, ...v.shape.slice(1)],
      data: { tensor: v.handle, rowBegin: begin, rowEnd: end },
    });
    return [source(this.variable), ...[...this.slotVariables.values()].map(source)];
  }

  /**
   * Reads rows [begin, end) of the table and of each slot the checkpoint holds from a
   * verified checkpoint, natively; resolves to the names read. A tensor saved whole has
   * those rows read out of it; one saved for exactly this range is read as it is. A slot
   * the checkpoint lacks keeps its value (a new optimizer starts fresh). `only`: just
   * these names. Every tensor is checked before any is read, so nothing loads half.
   */
  async load(file: string, header: CheckpointHeader, rowRange: [number, number] = [0, this.localRows], only?: ReadonlySet<string>): Promise<string[]> {
    const [begin, end] = this.checkRange(rowRange, 'load');
    const reads: Array<{ v: Variable; fromRow: number }> = [];
    for (const v of [this.variable, ...this.slotVariables.values()]) {
      if (only && !only.has(v.name)) continue;
      const entry = header.entries.get(v.name);
      if (!entry) {
        if (v === this.storage) throw new Error(`checkpoint ${file} has no '${v.name}'`);
        continue;
      }
      const rowShape = v.shape.slice(1).join();
      const fits = entry.shape.length === v.shape.length && entry.shape.slice(1).join() === rowShape;
      const whole = fits && entry.shape[0] === v.shape[0];
      const range = fits && entry.shape[0] === end - begin;
      if (!whole && !range) {
        throw new Error(`checkpoint ${file}: '${v.name}' has shape [${entry.shape}], neither the model's [${v.shape}] nor its rows ${begin}..${end} ([${[end - begin, ...v.shape.slice(1)]}])`);
      }
      reads.push({ v, fromRow: whole ? begin : 0 });
    }
    for (const { v, fromRow } of reads) {
      await loadTensorRows(file, header, v.name, v.handle, { rowBegin: fromRow, rowEnd: fromRow + end - begin, targetRowBegin: begin });
    }
    return reads.map(({ v }) => v.name);
  }

  /** The rows and each slot as a checkpoint describes them: whole (all the table's rows), sharded or not. */
  describeSaved(): Array<{ name: string; dtype: 'float32'; shape: number[] }> {
    return [this.variable, ...this.slotVariables.values()].map((v) => ({ name: v.name, dtype: 'float32', shape: [this.spec.rows, ...v.shape.slice(1)] }));
  }

  /**
   * Restores the rows and each slot among `only` (all by default) from a checkpoint of
   * any world size: this rank's shard of them when sharded, else all of them; resolves to
   * the names read. A slot the checkpoint lacks keeps its value (a new optimizer starts
   * fresh). Every tensor is checked before any is read, so nothing loads half.
   */
  async restoreFrom(source: CheckpointSource, only?: ReadonlySet<string>): Promise<string[]> {
    const shard = this.isSharded ? { worldSize: this.placement.worldSize, rank: this.placement.rank } : undefined;
    const reads: Variable[] = [];
    for (const v of [this.variable, ...this.slotVariables.values()]) {
      if (only && !only.has(v.name)) continue;
      const entry = source.entries.get(v.name);
      if (!entry) {
        if (v === this.storage) throw new Error(`checkpoint ${source.path} has no '${v.name}'`);
        continue;
      }
      const whole = [this.spec.rows, ...v.shape.slice(1)];
      if (entry.dtype !== 'float32' || entry.shape.join() !== whole.join()) {
        throw new Error(`checkpoint ${source.path}: '${v.name}' is ${entry.dtype} [${entry.shape}] but the model's is float32 [${whole}]`);
      }
      reads.push(v);
    }
    for (const v of reads) await source.read(v.name, v.handle, shard);
    return reads.map((v) => v.name);
  }

  stats(): EmbeddingTableStats {
    const rowBytes = this.spec.dim * 4;
    return {
      name: this.name,
      rows: this.spec.rows,
      localRows: this.localRows,
      dim: this.spec.dim,
      dtype: this.spec.dtype,
      device: this.isMade ? this.storage!.device : undefined,
      placement: this.placement.kind,
      bytes: this.localRows * rowBytes,
      slots: [...this.slotVariables.values()].map((s) => ({ name: s.name, bytes: s.size * 4 })),
    };
  }

  private checkRange(range: [number, number], what: string): [number, number] {
    const [begin, end] = Array.isArray(range) ? range : [NaN, NaN];
    const rows = this.localRows;
    if (!Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || begin < 0 || begin > end || end > rows) {
      const message = `embedding table '${this.name}': ${what}: the row range must be [begin, end] within [0, ${rows}], got ${JSON.stringify(range)}`;
      throw Array.isArray(range) && typeof begin === 'number' && typeof end === 'number' ? new RangeError(message) : new TypeError(message);
    }
    return [begin, end];
  }
}
