// hb.data.Dataset: an async iterable of columnar batches, built from a source and a chain
// of row-level operations. Each `for await` is a new pass over the source. Its reader
// threads are kept for the next pass when a pass reads to the end (no restart per epoch:
// Parquet's WebAssembly stays loaded), and ended when a pass stops early or fails; idle,
// they do not keep the process alive, and they end with the dataset.
import type { Batch, Column, ColumnMap, DatasetBatch, DatasetLabels } from './batch';
import type { Ragged } from '../tensor/ragged';
import type { StringColumn } from '../tensor/string_column';
import { rebatchRows, takeElements } from './batching';
import { prefetchElements } from './prefetch';
import { repeatPasses } from './repeat';
import { passSeed, shuffleRows } from './shuffle';
import { DatasetStats, newStats, readSource, SourceDescription } from './source';
import { parquetSource, ParquetOptions } from './parquet_source';
import { criteoTsvSource, CriteoTsvOptions } from './criteo_tsv_source';
import { syntheticSource, SyntheticOptions, SyntheticTableOptions } from './synthetic_source';

/**
 * The features of Dataset.synthetic: I1..I{numDense} (Float32Array) and one hb.Ragged of
 * int64 ids per table, by the names the tables were given (C1, C2, ... for unnamed ones).
 * Table names that are not literals (a string variable) leave the non-I columns typed as
 * either kind.
 */
export type SyntheticFeatures<TableName extends string = string> = string extends TableName
  ? { readonly [dense: `I${number}`]: Float32Array; readonly [name: string]: Float32Array | Ragged }
  : { readonly [dense: `I${number}`]: Float32Array } & { readonly [name in TableName | `C${number}`]: Ragged };

/** The features of Dataset.fromCriteoTsv: I1..I13 (Float32Array, or Int32Array with integerDtype 'int32') and C1..C26 (StringColumn). */
export type CriteoFeatures<Integer extends Float32Array | Int32Array = Float32Array> = {
  readonly [integer: `I${number}`]: Integer;
  readonly [categorical: `C${number}`]: StringColumn;
};

function positiveInteger(value: unknown, argument: string): number {
  if (typeof value !== 'number') throw new TypeError(`${argument} must be a positive integer, got ${String(value)}`);
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${argument} must be a positive integer, got ${String(value)}`);
  return value;
}

/**
 * Batches of columns: features F by name and labels L (see DatasetBatch). F and L are
 * what the source makes, known for Dataset.synthetic and fromCriteoTsv (and L for
 * fromParquet from its labelField); batch, shuffle, take... keep them.
 */
export class Dataset<F extends ColumnMap = ColumnMap, L extends DatasetLabels = DatasetLabels> implements AsyncIterable<DatasetBatch<F, L>> {
  /** @internal */
  constructor(
    private readonly pass: () => AsyncIterator<Batch<Column>>,
    /** What the latest pass of the underlying source read and skipped (see DatasetStats). */
    readonly stats: DatasetStats,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<DatasetBatch<F, L>> {
    // The source's columns, by the names and kinds F and L state; the row operations keep both.
    return this.pass() as AsyncIterator<DatasetBatch<F, L>>;
  }

  /** Rows left out by the latest pass under skipCorrupted (stats.skipped). */
  get skipped(): number {
    return this.stats.skipped;
  }

  private derive(pass: (upstream: Dataset<F, L>) => AsyncIterator<Batch<Column>>): Dataset<F, L> {
    return new Dataset<F, L>(() => pass(this), this.stats);
  }

  /**
   * Batches of `batchSize` rows (the last one smaller unless dropRemainder). Sources yield
   * blocks of rows rather than single rows, so this cuts rows exactly as tf.data's
   * batch over single examples would.
   */
  batch(batchSize: number, { dropRemainder = false }: { dropRemainder?: boolean } = {}): Dataset<F, L> {
    const n = positiveInteger(batchSize, 'Dataset.batch: batchSize');
    return this.derive((up) => rebatchRows(up, n, dropRemainder));
  }

  /**
   * HybridBackend's rebatch: the same rows cut into batches of `batchSize`, whatever the
   * incoming batch sizes. HybridBackend needs its own op because its readers yield
   * batches already and tf.data's batch would stack them rather than re-cut their rows;
   * here every element is a block of rows and batch re-cuts rows across blocks, so rebatch
   * is batch under HybridBackend's name. (Its min_batch_size is not offered.)
   */
  rebatch(batchSize: number, options: { dropRemainder?: boolean } = {}): Dataset<F, L> {
    return this.batch(positiveInteger(batchSize, 'Dataset.rebatch: batchSize'), options);
  }

  /**
   * Shuffles rows through a buffer of `bufferSize` rows, as tf.data's shuffle does for
   * single examples (output blocks keep the input's block sizes; batch after it). With a
   * seed every run gives the same order; reshuffleEachIteration (default true) makes each
   * pass differ, deterministically. Without a seed the order differs from run to run.
   */
  shuffle(bufferSize: number, { seed, reshuffleEachIteration = true }: { seed?: number; reshuffleEachIteration?: boolean } = {}): Dataset<F, L> {
    const size = positiveInteger(bufferSize, 'Dataset.shuffle: bufferSize');
    if (seed !== undefined && (typeof seed !== 'number' || !Number.isInteger(seed))) {
      const message = `Dataset.shuffle: seed must be an integer, got ${String(seed)}`;
      throw typeof seed === 'number' ? new RangeError(message) : new TypeError(message);
    }
    const base = seed ?? Math.floor(Math.random() * 2 ** 32);
    let epoch = 0;
    return this.derive((up) => shuffleRows(up, size, passSeed(base, reshuffleEachIteration ? epoch++ : 0)));
  }

  /** Keeps up to `bufferSize` elements ready ahead of the consumer. */
  prefetch(bufferSize = 1): Dataset<F, L> {
    const n = positiveInteger(bufferSize, 'Dataset.prefetch: bufferSize');
    return this.derive((up) => prefetchElements(up, n));
  }

  /** The first `count` elements (batches, after batch()); the reader threads stop after them. */
  take(count: number): Dataset<F, L> {
    if (typeof count !== 'number' || !(Number.isInteger(count) || count === Infinity) || count < 0) {
      const message = `Dataset.take: count must be a non-negative integer, got ${String(count)}`;
      throw typeof count === 'number' ? new RangeError(message) : new TypeError(message);
    }
    return this.derive((up) => takeElements(up, count));
  }

  /**
   * The dataset `count` times over (default: without end), as tf.data's repeat: passes
   * one after another as one stream, so a batch after repeat may hold rows of two passes,
   * and a shuffle before it reshuffles each pass. An empty dataset repeated is empty.
   */
  repeat(count = Infinity): Dataset<F, L> {
    if (typeof count !== 'number' || !(Number.isInteger(count) || count === Infinity) || count < 0) {
      const message = `Dataset.repeat: count must be a non-negative integer or Infinity, got ${String(count)}`;
      throw typeof count === 'number' ? new RangeError(message) : new TypeError(message);
    }
    return this.derive((up) => repeatPasses(up, count));
  }

  /**
   * Columns of Parquet files. Scalars become typed arrays (int8..int32 and bool ->
   * Int32Array, int64/uint32/uint64 -> BigInt64Array (a uint64 of 2^63 or more is an
   * Error naming the file, column, value and row, skipCorrupted or not), float -> Float32Array, double ->
   * Float64Array), strings and binary -> StringColumn, lists of integers -> hb.Ragged,
   * lists of floats or strings -> hb.data.ListColumn. Each row group is a unit of work.
   */
  static fromParquet(files: string | string[], options: ParquetOptions & { labelField: string }): Dataset<ColumnMap, Column>;
  static fromParquet(files: string | string[], options: ParquetOptions & { labelField: string[] }): Dataset<ColumnMap, Readonly<Record<string, Column>>>;
  static fromParquet(files: string | string[], options?: ParquetOptions & { labelField?: undefined }): Dataset<ColumnMap, undefined>;
  static fromParquet(files: string | string[], options?: ParquetOptions): Dataset;
  static fromParquet(files: string | string[], options: ParquetOptions = {}): Dataset {
    return sourceDataset(parquetSource(files, options));
  }

  /** The raw Criteo layout: label, I1..I13, C1..C26, tab-separated. */
  static fromCriteoTsv(files: string | string[], options: CriteoTsvOptions & { integerDtype: 'int32' }): Dataset<CriteoFeatures<Int32Array>, Float32Array>;
  static fromCriteoTsv(files: string | string[], options?: CriteoTsvOptions & { integerDtype?: 'float32' }): Dataset<CriteoFeatures, Float32Array>;
  static fromCriteoTsv(files: string | string[], options?: CriteoTsvOptions): Dataset<CriteoFeatures<Float32Array | Int32Array>, Float32Array>;
  static fromCriteoTsv(files: string | string[], options: CriteoTsvOptions = {}): Dataset {
    return sourceDataset(criteoTsvSource(files, options));
  }

  /** Criteo-like rows with power-law ids and labels from a planted model, deterministic for a seed. */
  static synthetic<TableName extends string = never>(
    options: Omit<SyntheticOptions, 'tables'> & { tables: ReadonlyArray<SyntheticTableOptions & { name?: TableName }> },
  ): Dataset<SyntheticFeatures<TableName>, Float32Array> {
    return sourceDataset(syntheticSource(options as SyntheticOptions));
  }
}

// A source's Dataset: every pass reads the source afresh into the same stats, which the
// Datasets derived from it share.
function sourceDataset<F extends ColumnMap, L extends DatasetLabels>(source: SourceDescription): Dataset<F, L> {
  const stats = newStats();
  return new Dataset<F, L>(() => readSource(source, stats), stats);
}
