// Dataset.fromParquet: the main-thread side. Reader threads read each file's footer,
// then every row group becomes a unit of work; partitions take equal spans of the rows
// of the files in order, so one file (even of one row group) is split between partitions
// as readily as many files are. A thread hands over one block per row group.
import type { Default } from './arrow_columns';
import type { ParquetFilePlan, ParquetTask, ParquetUnit } from './parquet_reader';
import { fileList, planFiles, SourceDescription, SourceOptions, sourceOptions, SOURCE_OPTION_KEYS } from './source';
import { checkOptionKeys } from '../option_keys';

export interface ParquetOptions extends SourceOptions {
  /** Feature columns to read (default: every column but the labels). */
  fields?: string[];
  /** The label column, or several; they go to `labels` instead of `features`. */
  labelField?: string | string[];
  /** Value of a missing (null) number, per column; default 0. */
  defaults?: Record<string, number | bigint>;
  /** Skip row groups that cannot be decoded and files whose footer cannot be read, counting them in `stats`, instead of failing. */
  skipCorrupted?: boolean;
}

const WHERE = 'Dataset.fromParquet';

/** Dataset.fromParquet's source: its arguments checked, and its units (row groups). */
export function parquetSource(files: string | string[], options: ParquetOptions): SourceDescription {
  checkOptionKeys(options, [...SOURCE_OPTION_KEYS, 'fields', 'labelField', 'defaults', 'skipCorrupted'] satisfies ReadonlyArray<keyof ParquetOptions>, WHERE);
  const paths = fileList(files, WHERE);
  const { numWorkers, partitionCount, partitionIndex } = sourceOptions(options, WHERE);
  const { fields, labelField, defaults = {}, skipCorrupted = false } = options;
  if (fields !== undefined && (!Array.isArray(fields) || !fields.every((f) => typeof f === 'string'))) {
    throw new TypeError(`${WHERE}: fields must be an array of column names`);
  }
  const labels = labelField === undefined ? [] : Array.isArray(labelField) ? labelField : [labelField];
  if (!labels.every((f) => typeof f === 'string')) throw new TypeError(`${WHERE}: labelField must be a column name or an array of them`);
  for (const [name, value] of Object.entries(defaults)) {
    if (typeof value !== 'bigint' && (typeof value !== 'number' || !Number.isFinite(value))) {
      const message = `${WHERE}: defaults.${name} must be a finite number or a bigint`;
      throw typeof value === 'number' ? new RangeError(message) : new TypeError(message);
    }
  }
  const task: ParquetTask = {
    columns: fields === undefined ? undefined : [...labels, ...fields.filter((f) => !labels.includes(f))],
    defaults: defaults as Record<string, Default>,
    skipCorrupted,
  };
  return {
    kind: 'parquet',
    numWorkers,
    partitionCount,
    partitionIndex,
    credits: 4,
    labelField,
    // A partition's span of rows may start or end inside a row group: both partitions
    // decode that group and keep their own rows of it.
    measure: {
      size: (unit) => (unit as ParquetUnit).keep[1] - (unit as ParquetUnit).keep[0],
      part: (unit, from, to) => ({ ...(unit as ParquetUnit), keep: [(unit as ParquetUnit).keep[0] + from, (unit as ParquetUnit).keep[0] + to] }),
    },
    measuredIn: 'rows',
    plan: async (pool, stats) => {
      const plans = await planFiles<ParquetFilePlan>(pool, 'parquet', paths, task);
      const units: ParquetUnit[] = [];
      plans.forEach((plan, f) => {
        if (plan.skipped !== undefined) {
          stats.skippedFiles++;
          if (stats.messages.length < 10) stats.messages.push(plan.skipped);
        }
        let firstRow = 0;
        plan.rowGroups.forEach((rows, rowGroup) => {
          units.push({ index: units.length, file: paths[f], rowGroup, firstRow, rows, keep: [0, rows] });
          firstRow += rows;
        });
      });
      return { task, units };
    },
  };
}
