// Dataset.fromCriteoTsv: the main-thread side. Each file is cut into byte ranges; a
// range owns the lines that start inside it, so ranges (and partitions, which take equal
// spans of the files' bytes) never share or lose a line.
import * as fs from 'node:fs';
import { CRITEO_INTEGER_FIELDS, CriteoTsvTask, CriteoTsvUnit } from './criteo_tsv_reader';
import { fileList, SourceDescription, SourceOptions, sourceOptions, SOURCE_OPTION_KEYS } from './source';
import { checkOptionKeys } from '../option_keys';

export interface CriteoTsvOptions extends SourceOptions {
  /** Value of an empty integer field, per field (I1..I13); default 0. */
  defaults?: Record<string, number>;
  /** Type of I1..I13: Float32Array (default, what a dense input takes) or Int32Array (exact). */
  integerDtype?: 'float32' | 'int32';
  /** Name of the click label column in `labels` (default 'label'). */
  labelField?: string;
  /** Skip lines that do not parse, counting them in `stats`, instead of failing. */
  skipCorrupted?: boolean;
  /** Rows per block handed from a reader thread (default 8192). */
  blockRows?: number;
  /** Bytes per unit of work (default 4 MiB). */
  blockBytes?: number;
}

const WHERE = 'Dataset.fromCriteoTsv';

/** Dataset.fromCriteoTsv's source: its arguments checked, and its units (byte ranges). */
export function criteoTsvSource(files: string | string[], options: CriteoTsvOptions): SourceDescription {
  checkOptionKeys(options, [...SOURCE_OPTION_KEYS, 'defaults', 'integerDtype', 'labelField', 'skipCorrupted', 'blockRows', 'blockBytes'] satisfies ReadonlyArray<keyof CriteoTsvOptions>, WHERE);
  const paths = fileList(files, WHERE);
  const { numWorkers, partitionCount, partitionIndex, blockRows } = sourceOptions(options, WHERE);
  const { defaults = {}, integerDtype = 'float32', labelField = 'label', skipCorrupted = false, blockBytes = 4 << 20 } = options;
  for (const [name, value] of Object.entries(defaults)) {
    if (!CRITEO_INTEGER_FIELDS.includes(name)) throw new Error(`${WHERE}: defaults.${name}: only I1..I13 take defaults`);
    if (typeof value !== 'number') throw new TypeError(`${WHERE}: defaults.${name} must be a finite number`);
    if (!Number.isFinite(value)) throw new RangeError(`${WHERE}: defaults.${name} must be a finite number`);
  }
  if (integerDtype !== 'float32' && integerDtype !== 'int32') throw new TypeError(`${WHERE}: integerDtype must be 'float32' or 'int32'`);
  if (typeof labelField !== 'string') throw new TypeError(`${WHERE}: labelField must be a string`);
  if (!Number.isInteger(blockBytes) || blockBytes < 1) {
    const message = `${WHERE}: blockBytes must be a positive integer`;
    throw typeof blockBytes === 'number' ? new RangeError(message) : new TypeError(message);
  }
  const task: CriteoTsvTask = {
    defaults: CRITEO_INTEGER_FIELDS.map((name) => defaults[name] ?? 0),
    integerDtype,
    labelField,
    blockRows,
    skipCorrupted,
  };
  return {
    kind: 'criteoTsv',
    numWorkers,
    partitionCount,
    partitionIndex,
    credits: 4,
    labelField,
    // A range owns the lines that start inside it, so it can be cut at any byte: equal
    // bytes make near-equal rows for lines of one kind.
    measure: {
      size: (unit) => (unit as CriteoTsvUnit).end - (unit as CriteoTsvUnit).start,
      part: (unit, from, to) => ({ ...(unit as CriteoTsvUnit), start: (unit as CriteoTsvUnit).start + from, end: (unit as CriteoTsvUnit).start + to }),
    },
    measuredIn: 'bytes',
    plan: async () => {
      const units: CriteoTsvUnit[] = [];
      for (const file of paths) {
        let size: number;
        try {
          const info = await fs.promises.stat(file);
          if (!info.isFile()) throw new Error('not a regular file');
          size = info.size;
        } catch (error) {
          throw new Error(`${WHERE}: cannot read ${file}: ${(error as Error).message}`);
        }
        const pieces = Math.max(1, Math.ceil(size / blockBytes));
        for (let k = 0; k < pieces; k++) {
          units.push({ index: units.length, file, start: Math.floor((size * k) / pieces), end: Math.floor((size * (k + 1)) / pieces), fileSize: size });
        }
      }
      return { task, units };
    },
  };
}
