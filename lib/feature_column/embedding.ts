// embedding_column and shared_embedding_columns: a categorical column's ids looked up
// in a [numBuckets, dimension] table and combined per example, as TF's
// safe_embedding_lookup_sparse (negative ids pruned, empty rows zero).
import { context as distributedContext } from '../distribute/process_group';
import { planTablePlacement } from '../distribute/sharding_planner';
import { DynamicEmbeddingTable } from '../embedding/dynamic_table';
import { EmbeddingTable } from '../embedding/embedding_table';
import { localPlacement } from '../embedding/placement';
import { Initializer, truncatedNormal } from '../initializers';
import { Combiner } from '../nn/lookup_arguments';
import { Ragged } from '../tensor/ragged';
import { Variable } from '../tensor/variable';
import { CategoricalColumn, checkCategorical, checkPositiveInteger, DenseColumn } from './column';
import { checkEmbeddingOptions, EmbeddingOptions, EmbeddingOptionValues, resolveEmbeddingOptions } from './embedding_options';
import { Features } from './feature_input';
import { segmentFeatures } from './segments';
import { shownValue } from '../shown_value';

export interface EmbeddingColumnOptions extends EmbeddingOptions {
  /** Default 'mean'. */
  combiner?: Combiner;
  /** Default: truncated normal, mean 0, stddev 1 / sqrt(dimension). */
  initializer?: Initializer;
  maxNorm?: number;
  trainable?: boolean;
}

export interface SharedEmbeddingColumnsOptions extends EmbeddingColumnOptions {
  sharedEmbeddingCollectionName?: string;
}

const ownOptionNames = ['combiner', 'initializer', 'maxNorm', 'trainable', 'sharedEmbeddingCollectionName'];

interface TableSpec {
  name: string;
  numBuckets: number;
  dimension: number;
  initializer: Initializer;
  trainable: boolean;
  options: EmbeddingOptionValues;
}

/** The table behind one or more embedding columns, made (and checked) on first use. */
class TableHolder {
  private table?: EmbeddingTable;
  constructor(readonly spec: TableSpec) {}

  /** A dynamic table: asked for, or the only kind an unbounded column (no numBuckets) can feed. */
  get dynamic(): boolean {
    return this.spec.options.embBackend === 'DYNAMIC' || !Number.isFinite(this.spec.numBuckets);
  }

  get(): EmbeddingTable {
    if (!this.table) {
      const { name, options } = this.spec;
      // Placed in the job this process is part of (hb-ts launch's environment, or init()).
      const job = distributedContext();
      if (this.dynamic) {
        // Keyed by id floormod W over a job, whole in one process; its rows on the model's
        // device ('') or where embDevice says, its index in host memory.
        const device = options.embDevice;
        const placement = job.worldSize > 1 ? { kind: 'sharded' as const, device, worldSize: job.worldSize, rank: job.rank } : localPlacement(device);
        if (job.worldSize > 1 && !options.embSharded) throw new Error(`embedding table '${name}': a dynamic table is sharded over a job (embSharded: false is for fixed tables)`);
        this.table = new DynamicEmbeddingTable(
          { name, rows: Number.MAX_SAFE_INTEGER, dim: this.spec.dimension, dtype: options.embDtype as 'float32', initializer: this.spec.initializer, trainable: this.spec.trainable },
          placement,
          { admitMinCount: options.embAdmitMinCount, evictAfterSteps: options.embEvictAfterSteps, maxRows: options.embMaxRows },
        );
        return this.table;
      }
      const placement = planTablePlacement(
        { rows: this.spec.numBuckets, device: options.embDevice, embSharded: options.embSharded, batchSize: options.batchSize },
        { size: job.worldSize, rank: job.rank },
      );
      this.table = new EmbeddingTable(
        { name, rows: this.spec.numBuckets, dim: this.spec.dimension, dtype: options.embDtype as 'float32', initializer: this.spec.initializer, trainable: this.spec.trainable },
        placement,
      );
    }
    return this.table;
  }
}

export abstract class LookupColumn implements DenseColumn {
  readonly keys: readonly string[];
  /** Every embedding option, resolved when the column was made. */
  readonly options: EmbeddingOptionValues;

  constructor(
    readonly categoricalColumn: CategoricalColumn,
    readonly dimension: number,
    readonly combiner: Combiner,
    readonly maxNorm: number | undefined,
    options: EmbeddingOptionValues,
    private readonly holder: TableHolder,
  ) {
    this.keys = categoricalColumn.keys;
    this.options = options;
  }

  abstract get name(): string;

  /** The table's TF name (`<column>_embedding/embedding_weights`, or the shared collection's), as checkpoints know it. */
  get tableName(): string {
    return this.holder.spec.name;
  }

  /** The embedding table (made on first use), shared by the columns of a shared collection. */
  get embeddingTable(): EmbeddingTable {
    return this.holder.get();
  }

  /** The [numBuckets, dimension] rows (made on first use, on options.embDevice). */
  get variable(): Variable {
    return this.embeddingTable.variable;
  }

  /** Whether its table is dynamic: keyed by the categorical column's raw ids, not its buckets. */
  get keyedByRawIds(): boolean {
    return this.holder.dynamic;
  }

  /** The ids the lookup combines: per example, or per segment with embSegmentRank > 0. */
  lookupIds(features: Features): Ragged {
    const rank = this.options.embSegmentRank;
    const input = rank === 0 ? features : segmentFeatures(features, this.keys, rank, this.name);
    if (!this.keyedByRawIds) return this.categoricalColumn.transform(input);
    const column = this.categoricalColumn;
    if (!column.rawIds) {
      throw new Error(`feature column '${this.name}': a dynamic table (embBackend 'DYNAMIC') is keyed by raw ids, which column '${column.name}' does not give; use an identity or hash bucket column`);
    }
    return column.rawIds(input);
  }

  async denseValues(features: Features): Promise<{ values: Float32Array; rows: number }> {
    const ids = this.lookupIds(features);
    let out;
    try {
      out = await this.embeddingTable.lookup(ids, { combiner: this.combiner, maxNorm: this.maxNorm, name: this.name });
    } catch (error) {
      // Keep the error's type and stack; say which column's lookup failed.
      if (error instanceof Error) error.message = `feature column '${this.name}': ${error.message}`;
      throw error;
    }
    // The result is this call's alone: its memory becomes the array, with no copy.
    return { values: (await out.data({ dispose: true })) as Float32Array, rows: ids.nrows };
  }
}

export class EmbeddingColumn extends LookupColumn {
  get name(): string {
    return `${this.categoricalColumn.name}_embedding`;
  }
}

export class SharedEmbeddingColumn extends LookupColumn {
  get name(): string {
    return `${this.categoricalColumn.name}_shared_embedding`;
  }

  get sharedEmbeddingCollectionName(): string {
    return this.tableName;
  }
}

function checkCommon(fn: string, dimension: number, options: EmbeddingColumnOptions): { combiner: Combiner; initializer: Initializer; trainable: boolean; maxNorm?: number } {
  checkPositiveInteger(dimension, fn, 'dimension');
  if (options === null || typeof options !== 'object') throw new TypeError(`${fn}: options must be an object`);
  const combiner = options.combiner ?? 'mean';
  if (combiner !== 'sum' && combiner !== 'mean' && combiner !== 'sqrtn') {
    const message = `${fn}: combiner must be 'sum', 'mean' or 'sqrtn', got ${JSON.stringify(combiner)}`;
    throw typeof combiner === 'string' ? new Error(message) : new TypeError(message);
  }
  if (options.initializer !== undefined && !(options.initializer instanceof Initializer)) {
    throw new TypeError(`${fn}: initializer must be an hb.initializers initializer`);
  }
  if (options.maxNorm !== undefined && !(typeof options.maxNorm === 'number' && Number.isFinite(options.maxNorm) && options.maxNorm > 0)) {
    const message = `${fn}: maxNorm must be a finite number > 0, got ${shownValue(options.maxNorm)}`;
    throw typeof options.maxNorm === 'number' ? new RangeError(message) : new TypeError(message);
  }
  if (options.trainable !== undefined && typeof options.trainable !== 'boolean') throw new TypeError(`${fn}: trainable must be a boolean`);
  return {
    combiner,
    initializer: options.initializer ?? truncatedNormal({ mean: 0, stddev: 1 / Math.sqrt(dimension) }),
    trainable: options.trainable ?? true,
    maxNorm: options.maxNorm,
  };
}

function embeddingOptionsOf(fn: string, options: EmbeddingColumnOptions): EmbeddingOptions {
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(options)) if (!ownOptionNames.includes(k)) rest[k] = v;
  return checkEmbeddingOptions(rest, fn, false, ownOptionNames);
}

export function embeddingColumn(categoricalColumn: CategoricalColumn, dimension: number, options: EmbeddingColumnOptions = {}): EmbeddingColumn {
  const fn = 'embeddingColumn';
  checkCategorical(categoricalColumn, fn, 'categoricalColumn');
  const common = checkCommon(fn, dimension, options);
  const name = `${categoricalColumn.name}_embedding`;
  const resolved = resolveEmbeddingOptions(embeddingOptionsOf(fn, options), [categoricalColumn.name, name]);
  const table = new TableHolder({
    name: `${name}/embedding_weights`,
    numBuckets: categoricalColumn.numBuckets,
    dimension,
    initializer: common.initializer,
    trainable: common.trainable,
    options: resolved,
  });
  return new EmbeddingColumn(categoricalColumn, dimension, common.combiner, common.maxNorm, resolved, table);
}

export function sharedEmbeddingColumns(
  categoricalColumns: readonly CategoricalColumn[],
  dimension: number,
  options: SharedEmbeddingColumnsOptions = {},
): SharedEmbeddingColumn[] {
  const fn = 'sharedEmbeddingColumns';
  if (!Array.isArray(categoricalColumns)) throw new TypeError(`${fn}: categoricalColumns must be a non-empty array`);
  if (categoricalColumns.length === 0) throw new Error(`${fn}: categoricalColumns must be a non-empty array`);
  categoricalColumns.forEach((c, i) => checkCategorical(c, fn, `categoricalColumns[${i}]`));
  const first = categoricalColumns[0];
  for (const c of categoricalColumns.slice(1)) {
    if (c.numBuckets !== first.numBuckets) {
      throw new RangeError(
        `${fn}: all categorical columns must have the same number of buckets; column '${c.name}' has ${c.numBuckets} but column '${first.name}' has ${first.numBuckets}`,
      );
    }
  }
  const names = categoricalColumns.map((c) => c.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate !== undefined) throw new Error(`${fn}: column '${duplicate}' is given twice`);
  const common = checkCommon(fn, dimension, options);
  const collection = options.sharedEmbeddingCollectionName ?? `${[...names].sort().join('_')}_shared_embedding`;
  if (typeof collection !== 'string') throw new TypeError(`${fn}: sharedEmbeddingCollectionName must be a non-empty string`);
  if (collection === '') throw new Error(`${fn}: sharedEmbeddingCollectionName must be a non-empty string`);
  const embeddingOptions = embeddingOptionsOf(fn, options);
  const resolved = categoricalColumns.map((c) => resolveEmbeddingOptions(embeddingOptions, [c.name, `${c.name}_shared_embedding`]));
  for (const key of ['embDevice', 'embDtype', 'embBackend'] as const) {
    const differing = resolved.findIndex((r) => r[key] !== resolved[0][key]);
    if (differing > 0) {
      const message = `${fn}: columns sharing table '${collection}' must agree on ${key}: '${names[0]}' has ${JSON.stringify(resolved[0][key])}, '${names[differing]}' has ${JSON.stringify(resolved[differing][key])}`;
      // A dtype mismatch is a TypeError, as TF's are; other settings are values.
      throw key === 'embDtype' ? new TypeError(message) : new Error(message);
    }
  }
  const table = new TableHolder({
    name: collection,
    numBuckets: first.numBuckets,
    dimension,
    initializer: common.initializer,
    trainable: common.trainable,
    options: resolved[0],
  });
  return categoricalColumns.map((c, i) => new SharedEmbeddingColumn(c, dimension, common.combiner, common.maxNorm, resolved[i], table));
}
