// categorical_column_with_vocabulary_list / _file: the value's position in the
// vocabulary; values not in it go to an OOV bucket (vocabulary size + Fingerprint64
// modulo numOovBuckets) or to defaultValue (-1, which the embedding lookup prunes).
import * as fs from 'fs';
import { native, NativeVocabularyTable } from '../native';
import { Ragged } from '../tensor/ragged';
import { StringColumn } from '../tensor/string_column';
import { CategoricalColumn, checkKey } from './column';
import { Features, featureOf } from './feature_input';
import { CategoricalDType, checkCategoricalDType, checkValuesMatch } from './hash_bucket';
import { idsOfFeature, presentCount, WeightsBeside } from './raw_ids';
import { shownValue } from '../shown_value';
import { checkOptionKeys } from '../option_keys';

export interface VocabularyListOptions {
  /** Default: 'string' for string vocabularies, 'int64' for integer ones. */
  dtype?: CategoricalDType;
  defaultValue?: number;
  numOovBuckets?: number;
}

export interface VocabularyFileOptions extends VocabularyListOptions {
  /** The first `vocabularySize` lines; default: every line of the file. */
  vocabularySize?: number;
}

/**
 * @internal The entries a vocabulary column was built from. Kept so that columnConfig can
 * export the vocabulary without its file (the native table gives no keys back), and with
 * the constructor's name, which the table's errors carry.
 */
export interface VocabularyEntries {
  readonly fn: string;
  /** Strings: their bytes as read (not necessarily UTF-8), with offsets; integers: int64. */
  readonly values: Uint8Array | BigInt64Array;
  readonly offsets?: Int32Array;
}

export class VocabularyCategoricalColumn implements CategoricalColumn {
  readonly keys: readonly string[];
  private readonly table: NativeVocabularyTable;

  /** @internal */
  constructor(
    readonly key: string,
    readonly vocabularySize: number,
    readonly dtype: CategoricalDType,
    readonly defaultValue: number,
    readonly numOovBuckets: number,
    table: NativeVocabularyTable,
    /** @internal */
    readonly entries: VocabularyEntries,
  ) {
    this.keys = [key];
    this.table = table;
  }

  get name(): string {
    return this.key;
  }

  get numBuckets(): number {
    return this.vocabularySize + this.numOovBuckets;
  }

  transform(features: Features): Ragged {
    return this.idsWithWeights(features, undefined);
  }

  /** @internal */
  idsWithWeights(features: Features, weights: WeightsBeside | undefined): Ragged {
    const ids = idsOfFeature(featureOf(features, this.key, this.name), this.name, this.key, weights);
    checkValuesMatch(ids, this.dtype, this.name, this.key);
    const looked = presentCount(ids) === 0 ? new BigInt64Array(0) : this.table.lookup(ids.values, ids.offsets);
    return new Ragged(looked, ids.rowSplits, ids.weights);
  }
}

function checkOovAndDefault(fn: string, key: string, options: VocabularyListOptions): { defaultValue: number; numOovBuckets: number } {
  const numOovBuckets = options.numOovBuckets ?? 0;
  if (!Number.isSafeInteger(numOovBuckets) || numOovBuckets < 0) {
    const message = `${fn}: invalid numOovBuckets ${String(numOovBuckets)} in column '${key}'`;
    throw typeof numOovBuckets === 'number' ? new RangeError(message) : new TypeError(message);
  }
  const defaultValue = options.defaultValue ?? -1;
  if (!Number.isSafeInteger(defaultValue)) {
    const message = `${fn}: defaultValue must be an integer (column '${key}'), got ${shownValue(defaultValue)}`;
    throw typeof defaultValue === 'number' ? new RangeError(message) : new TypeError(message);
  }
  if (numOovBuckets > 0 && defaultValue !== -1) {
    throw new Error(`${fn}: can't specify both numOovBuckets and defaultValue in column '${key}'`);
  }
  return { defaultValue, numOovBuckets };
}

function vocabularyValues(list: ReadonlyArray<string | number | bigint>, dtype: CategoricalDType, fn: string, key: string): { values: Uint8Array | BigInt64Array; offsets?: Int32Array } {
  if (dtype === 'string') {
    if (!list.every((v) => typeof v === 'string')) throw new TypeError(`${fn}: column '${key}' has dtype 'string' but its vocabulary holds non-strings`);
    const column = StringColumn.fromStrings(list as string[]);
    return { values: column.bytes, offsets: column.offsets };
  }
  const ints = new BigInt64Array(list.length);
  list.forEach((v, i) => {
    const bits = dtype === 'int32' ? 31n : 63n;
    const value = typeof v === 'bigint' ? v : typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : undefined;
    if (value === undefined || value < -(2n ** bits) || value >= 2n ** bits) {
      // Not an integer at all is a dtype mismatch; an integer beyond the dtype, a range.
      const message = `${fn}: column '${key}' has dtype '${dtype}' but vocabulary[${i}] = ${typeof v === 'string' ? JSON.stringify(v) : String(v)} is not an ${dtype}`;
      throw typeof v === 'bigint' || Number.isInteger(v) ? new RangeError(message) : new TypeError(message);
    }
    ints[i] = value;
  });
  return { values: ints };
}

function buildColumn(fn: string, key: string, list: ReadonlyArray<string | number | bigint>, dtype: CategoricalDType, options: VocabularyListOptions): VocabularyCategoricalColumn {
  return buildColumnFrom(fn, key, list.length, dtype, vocabularyValues(list, dtype, fn, key), options);
}

function buildColumnFrom(
  fn: string,
  key: string,
  size: number,
  dtype: CategoricalDType,
  { values, offsets }: { values: Uint8Array | BigInt64Array; offsets?: Int32Array },
  options: VocabularyListOptions,
): VocabularyCategoricalColumn {
  const { defaultValue, numOovBuckets } = checkOovAndDefault(fn, key, options);
  const table = new native.VocabularyTable(`${fn}('${key}')`, values, offsets, numOovBuckets, defaultValue);
  return new VocabularyCategoricalColumn(key, size, dtype, defaultValue, numOovBuckets, table, { fn, values, offsets });
}

/**
 * @internal columnFromConfig's way back to a column: `fn` is the constructor that first
 * built it. String entries come as bytes (a file's lines need not be UTF-8); integers
 * as bigints, range-checked against the dtype as a list's are.
 */
export function vocabularyColumnFromEntries(
  fn: string,
  key: string,
  dtype: CategoricalDType,
  entries: { values: Uint8Array; offsets: Int32Array } | { ints: ReadonlyArray<bigint> },
  options: VocabularyListOptions,
): VocabularyCategoricalColumn {
  if ('ints' in entries) return buildColumn(fn, key, entries.ints, dtype, options);
  return buildColumnFrom(fn, key, entries.offsets.length - 1, dtype, entries, options);
}

// The file's lines as bytes, split on '\n' with a trailing '\r' dropped (TF's line
// reader), and no final empty line. Never decoded: TF matches entries byte for byte, so
// a line that is not valid UTF-8 must still match the same bytes in the data.
function fileLines(bytes: Buffer): Array<[number, number]> {
  const lines: Array<[number, number]> = [];
  let start = 0;
  while (start < bytes.length) {
    let end = bytes.indexOf(0x0a, start);
    const next = end < 0 ? bytes.length : end + 1;
    if (end < 0) end = bytes.length;
    lines.push([start, end > start && bytes[end - 1] === 0x0d ? end - 1 : end]);
    start = next;
  }
  return lines;
}

export function categoricalColumnWithVocabularyList(
  key: string,
  vocabularyList: ReadonlyArray<string | number | bigint>,
  options: VocabularyListOptions = {},
): VocabularyCategoricalColumn {
  const fn = 'categoricalColumnWithVocabularyList';
  checkKey(key, fn);
  if (!Array.isArray(vocabularyList)) throw new TypeError(`${fn}: vocabularyList must be a non-empty array (column '${key}')`);
  if (vocabularyList.length === 0) throw new Error(`${fn}: vocabularyList must be a non-empty array (column '${key}')`);
  checkOptionKeys(options, ['dtype', 'defaultValue', 'numOovBuckets'], fn);
  const dtype = checkCategoricalDType(options.dtype ?? (typeof vocabularyList[0] === 'string' ? 'string' : 'int64'), fn, key);
  return buildColumn(fn, key, vocabularyList, dtype, options);
}

/** One entry per line, as TF's TextFileIndex.WHOLE_LINE (no other trimming; no final empty line). */
export function categoricalColumnWithVocabularyFile(key: string, path: string, options: VocabularyFileOptions = {}): VocabularyCategoricalColumn {
  const fn = 'categoricalColumnWithVocabularyFile';
  checkKey(key, fn);
  checkOptionKeys(options, ['dtype', 'defaultValue', 'numOovBuckets', 'vocabularySize'], fn);
  if (typeof path !== 'string') throw new TypeError(`${fn}: missing vocabulary file path in column '${key}'`);
  if (path === '') throw new Error(`${fn}: missing vocabulary file path in column '${key}'`);
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(path);
  } catch (error) {
    throw new Error(`${fn}: cannot read the vocabulary file '${path}' of column '${key}': ${(error as Error).message}`);
  }
  const lines = fileLines(bytes);
  const size = options.vocabularySize ?? lines.length;
  if (!Number.isSafeInteger(size) || size < 1) {
    const message = `${fn}: invalid vocabularySize ${String(size)} in column '${key}'`;
    throw typeof size === 'number' ? new RangeError(message) : new TypeError(message);
  }
  if (size > lines.length) {
    throw new RangeError(`${fn}: vocabularySize ${size} is larger than the ${lines.length} lines of '${path}' (column '${key}')`);
  }
  const dtype = checkCategoricalDType(options.dtype ?? 'string', fn, key);
  const used = lines.slice(0, size);
  if (dtype === 'string') {
    const total = used.reduce((n, [a, b]) => n + (b - a), 0);
    const values = new Uint8Array(total);
    const offsets = new Int32Array(size + 1);
    used.forEach(([a, b], i) => {
      values.set(bytes.subarray(a, b), offsets[i]);
      offsets[i + 1] = offsets[i] + (b - a);
    });
    return buildColumnFrom(fn, key, size, dtype, { values, offsets }, options);
  }
  const entries = used.map(([a, b], i) => {
    const line = bytes.toString('latin1', a, b);
    // The file's text is always the right type; a line that is no integer is a wrong value.
    if (!/^-?\d+$/.test(line)) throw new Error(`${fn}: line ${i + 1} of '${path}' is not an integer (column '${key}', dtype ${dtype})`);
    return BigInt(line);
  });
  return buildColumn(fn, key, entries, dtype, options);
}
