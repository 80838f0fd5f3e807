// hb.data.Dataset: an async iterable of columnar batches, built from a source and a chain
// of row-level operations. Each `for await` is a new pass: it starts the reader threads
// and ends them when the pass ends, stops early, or fails.
import type { Batch, Column } from './batch';
import { rebatchRows, takeElements } from './batching';
import { prefetchElements } from './prefetch';
import { passSeed, shuffleRows } from './shuffle';
import { DatasetStats, newStats, readSource, SourceDescription } from './source';
import { parquetSource, ParquetOptions } from './parquet_source';
import { criteoTsvSource, CriteoTsvOptions } from './criteo_tsv_source';
import { syntheticSource, SyntheticOptions } from './synthetic_source';

function positiveInteger(value: unknown, argument: string): number {
  if (typeof value !== 'number') throw new TypeError(`${argument} must be a positive integer, got ${String(value)}`);
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${argument} must be a positive integer, got ${String(value)}`);
  return value;
}

export class Dataset implements AsyncIterable<Batch<Column>> {
  /** @internal */
  constructor(
    private readonly pass: () => AsyncIterator<Batch<Column>>,
    /** What the latest pass of the underlying source read and skipped (see DatasetStats). */
    readonly stats: DatasetStats,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<Batch<Column>> {
    return this.pass();
  }

  /** Rows left out by the latest pass under skipCorrupted (stats.skipped). */
  get skipped(): number {
    return this.stats.skipped;
  }

  private derive(pass: (upstream: Dataset) => AsyncIterator<Batch<Column>>): Dataset {
    return new Dataset(() => pass(this), this.stats);
  }

  /**
   * Batches of `batchSize` rows (the last one smaller unless dropRemainder). Sources yield
   * blocks of rows rather than single rows, so this cuts rows exactly as tf.data's
   * batch over single examples would.
   */
  batch(batchSize: number, { dropRemainder = false }: { dropRemainder?: boolean } = {}): Dataset {
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
  rebatch(batchSize: number, options: { dropRemainder?: boolean } = {}): Dataset {
    return this.batch(positiveInteger(batchSize, 'Dataset.rebatch: batchSize'), options);
  }

  /**
   * Shuffles rows through a buffer of `bufferSize` rows, as tf.data's shuffle does for
   * single examples (output blocks keep the input's block sizes; batch after it). With a
   * seed every run gives the same order; reshuffleEachIteration (default true) makes each
   * pass differ, deterministically. Without a seed the order differs from run to run.
   */
  shuffle(bufferSize: number, { seed, reshuffleEachIteration = true }: { seed?: number; reshuffleEachIteration?: boolean } = {}): Dataset {
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
  prefetch(bufferSize = 1): Dataset {
    const n = positiveInteger(bufferSize, 'Dataset.prefetch: bufferSize');
    return this.derive((up) => prefetchElements(up, n));
  }

  /** The first `count` elements (batches, after batch()); the reader threads stop after them. */
  take(count: number): Dataset {
    if (typeof count !== 'number' || !(Number.isInteger(count) || count === Infinity) || count < 0) {
      const message = `Dataset.take: count must be a non-negative integer, got ${String(count)}`;
      throw typeof count === 'number' ? new RangeError(message) : new TypeError(message);
    }
    return this.derive((up) => takeElements(up, count));
  }

  /**
   * Columns of Parquet files. Scalars become typed arrays (int8..int32 and bool ->
   * Int32Array, int64/uint32/uint64 -> BigInt64Array (a uint64 of 2^63 or more is an
   * Error naming the file, column, value and row, skipCorrupted or not), float -> Float32Array, double ->
   * Float64Array), strings and binary -> StringColumn, lists of integers -> hb.Ragged,
   * lists of floats or strings -> hb.data.ListColumn. Each row group is a unit of work.
   */
  static fromParquet(files: string | string[], options: ParquetOptions = {}): Dataset {
    return sourceDataset(parquetSource(files, options));
  }

  /** The raw Criteo layout: label, I1..I13, C1..C26, tab-separated. */
  static fromCriteoTsv(files: string | string[], options: CriteoTsvOptions = {}): Dataset {
    return sourceDataset(criteoTsvSource(files, options));
  }

  /** Criteo-like rows with power-law ids and labels from a planted model, deterministic for a seed. */
  static synthetic(options: SyntheticOptions): Dataset {
    return sourceDataset(syntheticSource(options));
  }
}

// A source's Dataset: every pass reads the source afresh into the same stats, which the
// Datasets derived from it share.
function sourceDataset(source: SourceDescription): Dataset {
  const stats = newStats();
  return new Dataset(() => readSource(source, stats), stats);
}
