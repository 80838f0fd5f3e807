// Feature columns as plain JSON-safe data, so that an exported model rebuilds its columns
// without the user's code. A config holds only what the column was built from; the way
// back goes through the public constructors, so a config read from disk is checked as
// the user's arguments were, and a column is whatever those constructors make of it.
//
// Layouts (every config also has `type`, the class name, and `name`, the column's name,
// checked against the rebuilt column's):
//   HashedCategoricalColumn      key, hashBucketSize, dtype
//   VocabularyCategoricalColumn  key, dtype, source ('list' | 'file'), defaultValue, numOovBuckets,
//                                and string vocabularies: vocabularyBytes (base64), vocabularyOffsets
//                                (entries + 1 numbers); integer ones: vocabulary (decimal strings)
//   IdentityCategoricalColumn    key, numBuckets (null: unbounded), defaultValue (null: none)
//   NumericColumn                key, shape, defaultValue (null: none)
//   BucketizedColumn             sourceColumn (a NumericColumn config), boundaries
//   CrossedColumn                keys (feature names and categorical column configs), hashBucketSize,
//                                hashKey (a decimal uint64 string; null: the default key)
//   WeightedCategoricalColumn    categoricalColumn, weightFeatureKey
//   IndicatorColumn              categoricalColumn
// JSON has no -0: a float that is -0 is written as the string '-0'.
import { BucketizedColumn, bucketizedColumn } from './bucketized';
import { FeatureColumn } from './column';
import { CrossedColumn, crossedColumn, CrossKey } from './crossed';
import { CategoricalDType, HashedCategoricalColumn, categoricalColumnWithHashBucket } from './hash_bucket';
import { IdentityCategoricalColumn, categoricalColumnWithIdentity } from './identity';
import { IndicatorColumn, indicatorColumn } from './indicator';
import { NumericColumn, numericColumn } from './numeric';
import { VocabularyCategoricalColumn, vocabularyColumnFromEntries } from './vocabulary';
import { WeightedCategoricalColumn, weightedCategoricalColumn } from './weighted';
import { shownValue } from '../shown_value';

/** A column as JSON-safe data: no bigints, typed arrays or functions. */
export type ColumnConfig = { type: string } & Record<string, unknown>;

const FROM_LIST = 'categoricalColumnWithVocabularyList';
const FROM_FILE = 'categoricalColumnWithVocabularyFile';
// Nested crosses are the only recursion a config can repeat; a corrupt one must not
// exhaust the stack.
const MAX_DEPTH = 64;

type ErrorClass = typeof Error | typeof TypeError | typeof RangeError;

function nameOf(column: unknown): string | undefined {
  const name = column !== null && typeof column === 'object' ? (column as { name?: unknown }).name : undefined;
  return typeof name === 'string' ? name : undefined;
}

// Exactly the class: a subclass may transform differently, and its config would rebuild
// the base class.
function isExactly<T>(column: unknown, cls: abstract new (...args: never[]) => T): column is T {
  return column instanceof cls && (column as object).constructor === cls;
}

function encodeFloats(values: readonly number[]): Array<number | '-0'> {
  return values.map((v) => (Object.is(v, -0) ? '-0' : v));
}

function base64Of(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

// ---------------------------------------------------------------------------------------
// column -> config

// `within` says where a sub-column sits: ' (sourceColumn of column ...)'.
function configOf(column: unknown, within: string): ColumnConfig {
  if (column === null || typeof column !== 'object' || nameOf(column) === undefined) {
    const what = column !== null && typeof column === 'object' ? ' (an object with a name)' : '';
    throw new TypeError(`columnConfig: expected a feature column${what}${within}, got ${shownValue(column)}`);
  }
  const name = nameOf(column) as string;
  const here = `column '${name}'${within}`;
  const fail = (message: string): never => {
    throw new Error(`columnConfig: ${here} ${message}`);
  };
  const inner = (label: string) => ` (${label} of ${here})`;

  if (isExactly(column, HashedCategoricalColumn)) {
    return { type: 'HashedCategoricalColumn', name, key: column.key, hashBucketSize: column.hashBucketSize, dtype: column.dtype };
  }
  if (isExactly(column, VocabularyCategoricalColumn)) {
    const { entries } = column;
    const head = {
      type: 'VocabularyCategoricalColumn',
      name,
      key: column.key,
      dtype: column.dtype,
      source: entries.fn === FROM_FILE ? 'file' : 'list',
      defaultValue: column.defaultValue,
      numOovBuckets: column.numOovBuckets,
    };
    if (column.dtype === 'string') {
      return { ...head, vocabularyBytes: base64Of(entries.values as Uint8Array), vocabularyOffsets: Array.from(entries.offsets as Int32Array) };
    }
    return { ...head, vocabulary: Array.from(entries.values as BigInt64Array, String) };
  }
  if (isExactly(column, IdentityCategoricalColumn)) {
    return {
      type: 'IdentityCategoricalColumn',
      name,
      key: column.key,
      numBuckets: column.unbounded ? null : column.numBuckets,
      defaultValue: column.defaultValue ?? null,
    };
  }
  if (isExactly(column, NumericColumn)) {
    if (column.normalizerFn !== undefined) {
      return fail(
        `has a normalizerFn, a JavaScript function, which cannot be exported: move the transform into the model graph ` +
          '(e.g. hb.math ops on the dense features) and build the column without normalizerFn',
      );
    }
    return {
      type: 'NumericColumn',
      name,
      key: column.key,
      shape: column.shape.slice(),
      defaultValue: column.defaultValue === undefined ? null : encodeFloats(column.defaultValue),
    };
  }
  if (isExactly(column, BucketizedColumn)) {
    return {
      type: 'BucketizedColumn',
      name,
      sourceColumn: configOf(column.sourceColumn, inner('sourceColumn')),
      boundaries: encodeFloats(column.boundaries),
    };
  }
  if (isExactly(column, CrossedColumn)) {
    return {
      type: 'CrossedColumn',
      name,
      keys: column.crossKeys.map((k, i) => (typeof k === 'string' ? k : configOf(k, inner(`keys[${i}]`)))),
      hashBucketSize: column.hashBucketSize,
      hashKey: column.hashKey === undefined ? null : column.hashKey.toString(),
    };
  }
  if (isExactly(column, WeightedCategoricalColumn)) {
    return {
      type: 'WeightedCategoricalColumn',
      name,
      categoricalColumn: configOf(column.categoricalColumn, inner('categoricalColumn')),
      weightFeatureKey: column.weightFeatureKey,
    };
  }
  if (isExactly(column, IndicatorColumn)) {
    return { type: 'IndicatorColumn', name, categoricalColumn: configOf(column.categoricalColumn, inner('categoricalColumn')) };
  }
  const kind = (column as object).constructor?.name ?? 'object';
  return fail(
    `is of class ${kind}, which has no config: only the categorical columns and the numeric, bucketized and indicator ` +
      'columns of hb.featureColumn are exported (an embedding column: export its categoricalColumn)',
  );
}

/** The column as JSON-safe data; throws an Error naming the column when it cannot be exported. */
export function columnConfig(column: FeatureColumn): ColumnConfig {
  return configOf(column, '');
}

// ---------------------------------------------------------------------------------------
// config -> column

// One config being read: every error names the column (as far as the config tells it)
// and the field.
class ConfigReader {
  readonly where: string;
  private readonly used = new Set<string>(['type', 'name']);

  constructor(
    readonly config: Record<string, unknown>,
    within: string,
    readonly depth: number,
  ) {
    const name = typeof config.name === 'string' ? config.name : typeof config.key === 'string' ? config.key : undefined;
    this.where = `${name === undefined ? 'a column' : `column '${name}'`}${within}`;
  }

  fail(field: string | undefined, message: string, cls: ErrorClass = Error): never {
    throw new cls(`columnFromConfig: ${this.where}: ${field === undefined ? '' : `field '${field}' `}${message}`);
  }

  private has(field: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.config, field);
  }

  /** The field's value, which must be present. */
  field(field: string): unknown {
    this.used.add(field);
    if (!this.has(field) || this.config[field] === undefined) this.fail(field, 'is missing', TypeError);
    return this.config[field];
  }

  string(field: string): string {
    const value = this.field(field);
    if (typeof value !== 'string') this.fail(field, `must be a string, got ${shownValue(value)}`, TypeError);
    return value as string;
  }

  oneOf<T extends string>(field: string, choices: readonly T[]): T {
    const value = this.field(field);
    if (typeof value !== 'string') this.fail(field, `must be one of ${choices.map((c) => `'${c}'`).join(', ')}, got ${shownValue(value)}`, TypeError);
    if (!choices.includes(value as T)) this.fail(field, `must be one of ${choices.map((c) => `'${c}'`).join(', ')}, got ${shownValue(value)}`);
    return value as T;
  }

  integer(field: string): number {
    const value = this.field(field);
    if (typeof value !== 'number') this.fail(field, `must be an integer, got ${shownValue(value)}`, TypeError);
    if (!Number.isSafeInteger(value)) this.fail(field, `must be an integer, got ${shownValue(value)}`, RangeError);
    return value as number;
  }

  /** null (present) means absent in the column. */
  nullableInteger(field: string): number | undefined {
    return this.field(field) === null ? undefined : this.integer(field);
  }

  array(field: string): unknown[] {
    const value = this.field(field);
    if (!Array.isArray(value)) this.fail(field, `must be an array, got ${shownValue(value)}`, TypeError);
    return value as unknown[];
  }

  floats(field: string): number[] {
    return this.array(field).map((v, i) => {
      if (v === '-0') return -0;
      if (typeof v !== 'number') this.fail(field, `[${i}] must be a number, got ${shownValue(v)}`, TypeError);
      return v as number;
    });
  }

  /** After every field was read: a field nobody asked for is one this version does not know. */
  checkNoOtherFields(): void {
    for (const field of Object.keys(this.config)) {
      if (!this.used.has(field)) this.fail(field, 'is not a field of this column type (a config from another version?)');
    }
  }

  /** A sub-column's config, read with this column named as where it sits. */
  child(field: string, value: unknown): FeatureColumn {
    return fromConfig(value, ` (${field} of ${this.where})`, this.depth + 1);
  }

  /** Runs a public constructor: its errors get this config's place, keeping their class. */
  build<T extends FeatureColumn>(make: () => T): T {
    let column: T;
    try {
      column = make();
    } catch (error) {
      // By name: errors made by the addon come from another realm.
      const name = error instanceof Object ? (error as Error).name : undefined;
      const cls = name === 'TypeError' ? TypeError : name === 'RangeError' ? RangeError : Error;
      const message = error instanceof Object && typeof (error as Error).message === 'string' ? (error as Error).message : String(error);
      throw new cls(`columnFromConfig: ${this.where}: ${message}`, { cause: error });
    }
    const name = this.string('name');
    if (column.name !== name) this.fail('name', `is '${name}' but the other fields make column '${column.name}'`);
    this.checkNoOtherFields();
    return column;
  }
}

function decimalInteger(reader: ConfigReader, field: string, text: unknown, index?: number): bigint {
  const at = index === undefined ? '' : `[${index}]`;
  if (typeof text !== 'string') reader.fail(field, `${at}must be an integer as a decimal string, got ${shownValue(text)}`, TypeError);
  if (!/^-?(0|[1-9][0-9]*)$/.test(text as string) || text === '-0') reader.fail(field, `${at}must be an integer as a decimal string, got ${shownValue(text)}`);
  return BigInt(text as string);
}

function base64Bytes(reader: ConfigReader, field: string): Uint8Array {
  const text = reader.string(field);
  const bytes = Buffer.from(text, 'base64');
  // Buffer skips characters that are not base64: only the canonical text is taken, so a
  // damaged one is an error, not other bytes.
  if (bytes.toString('base64') !== text) reader.fail(field, 'is not valid base64');
  // A copy: a small Buffer is a view into a pool shared with other Buffers.
  return new Uint8Array(bytes);
}

function stringEntries(reader: ConfigReader): { values: Uint8Array; offsets: Int32Array } {
  const values = base64Bytes(reader, 'vocabularyBytes');
  const list = reader.array('vocabularyOffsets');
  if (list.length < 2) reader.fail('vocabularyOffsets', `must hold entries + 1 offsets for a non-empty vocabulary, got ${list.length}`, RangeError);
  const offsets = new Int32Array(list.length);
  list.forEach((v, i) => {
    if (typeof v !== 'number') reader.fail('vocabularyOffsets', `[${i}] must be an integer, got ${shownValue(v)}`, TypeError);
    const previous = i === 0 ? 0 : offsets[i - 1];
    if (!Number.isSafeInteger(v) || (v as number) < previous || (v as number) > values.length || (i === 0 && v !== 0)) {
      reader.fail(
        'vocabularyOffsets',
        `[${i}] = ${shownValue(v)} does not fit: offsets start at 0, never decrease and end at the ${values.length} bytes of vocabularyBytes`,
        RangeError,
      );
    }
    offsets[i] = v as number;
  });
  if (offsets[offsets.length - 1] !== values.length) {
    reader.fail('vocabularyOffsets', `end at ${offsets[offsets.length - 1]} but vocabularyBytes holds ${values.length} bytes`, RangeError);
  }
  return { values, offsets };
}

const DTYPES: readonly CategoricalDType[] = ['string', 'int32', 'int64'];

function vocabularyFromConfig(reader: ConfigReader): VocabularyCategoricalColumn {
  const key = reader.string('key');
  const dtype = reader.oneOf('dtype', DTYPES);
  const fn = reader.oneOf('source', ['list', 'file'] as const) === 'file' ? FROM_FILE : FROM_LIST;
  const options = { defaultValue: reader.integer('defaultValue'), numOovBuckets: reader.integer('numOovBuckets') };
  if (dtype === 'string') {
    const entries = stringEntries(reader);
    return reader.build(() => vocabularyColumnFromEntries(fn, key, dtype, entries, options));
  }
  const list = reader.array('vocabulary');
  if (list.length === 0) reader.fail('vocabulary', 'must not be empty');
  const ints = list.map((v, i) => decimalInteger(reader, 'vocabulary', v, i));
  return reader.build(() => vocabularyColumnFromEntries(fn, key, dtype, { ints }, options));
}

function crossedFromConfig(reader: ConfigReader): CrossedColumn {
  const keys: CrossKey[] = reader.array('keys').map((k, i) => {
    if (typeof k === 'string') return k;
    // Whether it is categorical is crossedColumn's check, as for the user's keys.
    return reader.child(`keys[${i}]`, k) as CrossKey;
  });
  const hashBucketSize = reader.integer('hashBucketSize');
  let hashKey: bigint | undefined;
  if (reader.field('hashKey') !== null) {
    hashKey = decimalInteger(reader, 'hashKey', reader.field('hashKey'));
    if (hashKey < 0n || hashKey >= 2n ** 64n) reader.fail('hashKey', `must be a uint64, got ${hashKey}`, RangeError);
  }
  return reader.build(() => crossedColumn(keys, hashBucketSize, hashKey));
}

function fromConfig(config: unknown, within: string, depth: number): FeatureColumn {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new TypeError(`columnFromConfig: a column config${within} must be an object, got ${shownValue(config)}`);
  }
  const reader = new ConfigReader(config as Record<string, unknown>, within, depth);
  if (depth > MAX_DEPTH) reader.fail(undefined, `columns nest more than ${MAX_DEPTH} deep`);
  const type = reader.string('type');
  reader.string('name');
  switch (type) {
    case 'HashedCategoricalColumn': {
      const key = reader.string('key');
      const size = reader.integer('hashBucketSize');
      const dtype = reader.oneOf('dtype', DTYPES);
      return reader.build(() => categoricalColumnWithHashBucket(key, size, dtype));
    }
    case 'VocabularyCategoricalColumn':
      return vocabularyFromConfig(reader);
    case 'IdentityCategoricalColumn': {
      const key = reader.string('key');
      const numBuckets = reader.nullableInteger('numBuckets');
      const defaultValue = reader.nullableInteger('defaultValue');
      return reader.build(() => categoricalColumnWithIdentity(key, numBuckets, defaultValue));
    }
    case 'NumericColumn': {
      const key = reader.string('key');
      const shape = reader.array('shape') as number[];
      const defaultValue = reader.field('defaultValue') === null ? undefined : reader.floats('defaultValue');
      return reader.build(() => numericColumn(key, defaultValue === undefined ? { shape } : { shape, defaultValue }));
    }
    case 'BucketizedColumn': {
      const source = reader.child('sourceColumn', reader.field('sourceColumn'));
      const boundaries = reader.floats('boundaries');
      return reader.build(() => bucketizedColumn(source as NumericColumn, boundaries));
    }
    case 'CrossedColumn':
      return crossedFromConfig(reader);
    case 'WeightedCategoricalColumn': {
      const categorical = reader.child('categoricalColumn', reader.field('categoricalColumn'));
      const weightFeatureKey = reader.string('weightFeatureKey');
      return reader.build(() => weightedCategoricalColumn(categorical as never, weightFeatureKey));
    }
    case 'IndicatorColumn': {
      const categorical = reader.child('categoricalColumn', reader.field('categoricalColumn'));
      return reader.build(() => indicatorColumn(categorical as never));
    }
    default:
      return reader.fail('type', `${shownValue(type)} is not a column type this version can rebuild`);
  }
}

/** Rebuilds a column from columnConfig's data, checking all of it: a bad config is an Error naming the column and the field. */
export function columnFromConfig(config: unknown): FeatureColumn {
  return fromConfig(config, '', 0);
}
