// Feature columns as JSON-safe configs (what an exported model keeps of them): each
// column type round-trips through JSON to a column that transforms the same batch to the
// same ids / dense values and fails the same way on bad features; what cannot be exported
// and configs that are corrupt are Errors naming the column and the field.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { ColumnConfig, columnConfig, columnFromConfig } from '../lib/feature_column/column_config';

const fc = hb.featureColumn;

type Caught = { name: string; message: string };

function errorOf(run: () => unknown): Caught {
  try {
    run();
  } catch (error) {
    return { name: (error as Error).name, message: (error as Error).message };
  }
  throw new Error('expected an error');
}

async function asyncErrorOf(run: () => Promise<unknown>): Promise<Caught> {
  try {
    await run();
  } catch (error) {
    return { name: (error as Error).name, message: (error as Error).message };
  }
  throw new Error('expected an error');
}

/** The config through JSON text and back to a column. */
function roundTrip<T extends hb.featureColumn.FeatureColumn>(column: T): { config: ColumnConfig; rebuilt: T } {
  const config = columnConfig(column);
  const text = JSON.stringify(config);
  // JSON-safe: nothing is lost or changed on the way through the text.
  expect(JSON.parse(text)).toEqual(config);
  const rebuilt = columnFromConfig(JSON.parse(text)) as T;
  expect(rebuilt.constructor.name).toBe(column.constructor.name);
  expect(rebuilt.name).toBe(column.name);
  expect(rebuilt.keys).toEqual(column.keys);
  // Exporting the rebuilt column gives the same config again.
  expect(columnConfig(rebuilt)).toEqual(config);
  return { config, rebuilt };
}

// Typed arrays made by the addon fail instanceof here: compare type names and contents.
function raggedView(r: hb.Ragged) {
  return {
    valuesType: r.values.constructor.name,
    values: Array.from(r.values as BigInt64Array, String),
    rowSplits: Array.from(r.rowSplits),
    weights: r.weights === undefined ? undefined : Array.from(r.weights),
  };
}

function expectSameIds(a: hb.featureColumn.CategoricalColumn, b: hb.featureColumn.CategoricalColumn, features: hb.featureColumn.Features): ReturnType<typeof raggedView> {
  expect(b.numBuckets).toBe(a.numBuckets);
  const want = raggedView(a.transform(features));
  expect(raggedView(b.transform(features))).toEqual(want);
  return want;
}

async function expectSameDense(a: hb.featureColumn.DenseColumn, b: hb.featureColumn.DenseColumn, features: hb.featureColumn.Features): Promise<number[]> {
  expect(b.dimension).toBe(a.dimension);
  const want = await a.denseValues(features);
  const got = await b.denseValues(features);
  expect(got.rows).toBe(want.rows);
  expect(got.values.constructor.name).toBe(want.values.constructor.name);
  // toEqual tells -0 from 0.
  expect(Array.from(got.values)).toEqual(Array.from(want.values));
  return Array.from(want.values);
}

function expectSameError(a: hb.featureColumn.CategoricalColumn, b: hb.featureColumn.CategoricalColumn, features: hb.featureColumn.Features): Caught {
  const want = errorOf(() => a.transform(features));
  expect(errorOf(() => b.transform(features))).toEqual(want);
  return want;
}

const bytesColumn = (...rows: number[][]) => {
  const bytes = Uint8Array.from(rows.flat());
  const offsets = Int32Array.from(rows.reduce((o, r) => [...o, o[o.length - 1] + r.length], [0]));
  return new hb.StringColumn(bytes, offsets);
};

const stringRows = (values: string[][]) => ({
  values: hb.StringColumn.fromStrings(values.flat()),
  rowSplits: Int32Array.from([0, ...values.map((_, i) => values.slice(0, i + 1).flat().length)]),
});

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-column-config-'));
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('round trips: the rebuilt column transforms as the original', () => {
  test('categoricalColumnWithHashBucket (string and int64), ids and raw ids', () => {
    const wire = fc.categoricalColumnWithHashBucket('wire', 10);
    const { config, rebuilt } = roundTrip(wire);
    expect(config).toEqual({ type: 'HashedCategoricalColumn', name: 'wire', key: 'wire', hashBucketSize: 10, dtype: 'string' });
    const features = { wire: [['omar', 'stringer'], [], ['marlo', '']] };
    expect(expectSameIds(wire, rebuilt, features).values).toEqual(['6', '4', '1', String(hb.strings.toHashBucketFast([''], 10)[0])]);
    expect(raggedView(rebuilt.rawIds(features))).toEqual(raggedView(wire.rawIds(features)));
    expectSameError(wire, rebuilt, { wire: [1, 2] });
    expectSameError(wire, rebuilt, { other: ['a'] });

    const ints = fc.categoricalColumnWithHashBucket('n', 7, 'int64');
    const back = roundTrip(ints).rebuilt;
    expectSameIds(ints, back, { n: BigInt64Array.from([101n, -1n, 2n ** 62n]) });
    expectSameError(ints, back, { n: ['a'] });
  });

  test('categoricalColumnWithVocabularyList of strings, with OOV buckets, defaultValue, and UTF-8 beyond ASCII', () => {
    const list = ['omar', 'stringer', 'marlo', 'é', '日本', '🙂', ''];
    const oov = fc.categoricalColumnWithVocabularyList('aaa', list, { numOovBuckets: 100 });
    const { config, rebuilt } = roundTrip(oov);
    expect(config).toMatchObject({ type: 'VocabularyCategoricalColumn', key: 'aaa', dtype: 'string', source: 'list', defaultValue: -1, numOovBuckets: 100 });
    expect(config.vocabularyOffsets).toHaveLength(list.length + 1);
    expect(Buffer.from(config.vocabularyBytes as string, 'base64').toString('utf8')).toBe(list.join(''));
    const features = { aaa: [['marlo', 'skywalker', 'omar'], ['heisenberg', '日本'], ['🙂', 'é', '']] };
    expect(expectSameIds(oov, rebuilt, features).values.slice(0, 4)).toEqual(['2', '37', '0', '66']);
    expectSameIds(oov, rebuilt, { aaa: bytesColumn([0xc3, 0xa9], [0xe9], [0xff, 0x61]) });
    expectSameError(oov, rebuilt, { aaa: [1n] });

    const withDefault = fc.categoricalColumnWithVocabularyList('aaa', ['a', 'b'], { defaultValue: 1 });
    const again = roundTrip(withDefault).rebuilt;
    expect(expectSameIds(withDefault, again, { aaa: ['b', 'z', 'a'] }).values).toEqual(['1', '1', '0']);
  });

  test('categoricalColumnWithVocabularyFile keeps lines that are not UTF-8 byte for byte, and needs no file once exported', () => {
    const file = path.join(dir, 'bytes.txt');
    // line 0: 0xff 'a' (invalid UTF-8); line 1: 'é' in Latin-1 (invalid UTF-8); line 2: 'é' in UTF-8; line 3 CRLF-ended
    fs.writeFileSync(file, Buffer.from([0xff, 0x61, 0x0a, 0xe9, 0x0a, 0xc3, 0xa9, 0x0a, 0x62, 0x0d, 0x0a, 0x63, 0x0a]));
    const col = fc.categoricalColumnWithVocabularyFile('raw', file, { numOovBuckets: 3 });
    const config = columnConfig(col);
    fs.rmSync(file);
    expect(config).toMatchObject({ source: 'file', vocabularyOffsets: [0, 2, 3, 5, 6, 7] });
    expect(Array.from(Buffer.from(config.vocabularyBytes as string, 'base64'))).toEqual([0xff, 0x61, 0xe9, 0xc3, 0xa9, 0x62, 0x63]);
    const { rebuilt } = roundTrip(col);
    expect(rebuilt.numBuckets).toBe(8);
    const raw = { raw: bytesColumn([0xc3, 0xa9], [0xe9], [0xff, 0x61], [0xef, 0xbf, 0xbd, 0x61], [0x62], [0x63, 0x0d]) };
    const got = expectSameIds(col, rebuilt, raw);
    expect(got.values.slice(0, 3)).toEqual(['2', '1', '0']);
    expect(got.values[4]).toBe('3');
    expectSameIds(col, rebuilt, { raw: [['é', 'c'], [], ['zzz']] });

    // The native table's errors carry the constructor's name: the same after the round trip.
    const plain = hb.StringColumn.fromStrings(['é', 'c']);
    const shared = new Uint8Array(new SharedArrayBuffer(plain.bytes.byteLength));
    shared.set(plain.bytes);
    const error = expectSameError(col, rebuilt, { raw: { values: new hb.StringColumn(shared, plain.offsets), rowSplits: Int32Array.from([0, 2]) } });
    expect(error.message).toMatch(/categoricalColumnWithVocabularyFile\('raw'\).*SharedArrayBuffer/);
    expectSameError(col, rebuilt, { raw: BigInt64Array.from([1n]) });

    // A file column round-trips as a file column, a list one as a list one.
    fs.writeFileSync(file, 'omar\nstringer\n');
    const fromFile = fc.categoricalColumnWithVocabularyFile('w', file);
    const fromList = fc.categoricalColumnWithVocabularyList('w', ['omar', 'stringer']);
    expect(columnConfig(fromFile).source).toBe('file');
    expect({ ...columnConfig(fromFile), source: 'list' }).toEqual(columnConfig(fromList));
  });

  test('integer vocabularies (list and file, int64 beyond 2^53, int32), with OOV buckets', () => {
    const big = [2n ** 62n + 1n, -(2n ** 63n), 9007199254740993n, 2n ** 63n - 1n, 5n];
    const col = fc.categoricalColumnWithVocabularyList('id', big, { numOovBuckets: 3 });
    const { config, rebuilt } = roundTrip(col);
    expect(config.vocabulary).toEqual(['4611686018427387905', '-9223372036854775808', '9007199254740993', '9223372036854775807', '5']);
    const features = { id: [[9007199254740993n, 9007199254740992n], [-(2n ** 63n)], [5n, 6n, 2n ** 63n - 1n]] };
    expect(expectSameIds(col, rebuilt, features).values.slice(0, 1)).toEqual(['2']);
    expectSameIds(col, rebuilt, { id: BigInt64Array.from([2n ** 62n + 1n, -1n, 7n]) });
    expectSameError(col, rebuilt, { id: ['x'] });

    const file = path.join(dir, 'ints.txt');
    fs.writeFileSync(file, '30\n35\n11\n-7\n');
    const int32 = fc.categoricalColumnWithVocabularyFile('aaa', file, { dtype: 'int32', defaultValue: -100 });
    const back = roundTrip(int32);
    expect(back.config).toMatchObject({ dtype: 'int32', source: 'file', vocabulary: ['30', '35', '11', '-7'], defaultValue: -100 });
    expect(expectSameIds(int32, back.rebuilt, { aaa: Int32Array.from([11, -1, 100, -7]) }).values).toEqual(['2', '-100', '3']);
  });

  test('categoricalColumnWithIdentity with and without numBuckets and defaultValue', () => {
    const strict = fc.categoricalColumnWithIdentity('aaa', 3);
    const a = roundTrip(strict);
    expect(a.config).toEqual({ type: 'IdentityCategoricalColumn', name: 'aaa', key: 'aaa', numBuckets: 3, defaultValue: null });
    expectSameIds(strict, a.rebuilt, { aaa: [[0, 2], [], [1]] });
    expect(expectSameError(strict, a.rebuilt, { aaa: [[1, 3]] }).message).toMatch(/outside \[0, 3\)/);

    const withDefault = fc.categoricalColumnWithIdentity('aaa', 5, 4);
    const b = roundTrip(withDefault);
    expect(b.config.defaultValue).toBe(4);
    expect(expectSameIds(withDefault, b.rebuilt, { aaa: BigInt64Array.from([0n, 7n, -1n, -5n, 2n]) }).values).toEqual(['0', '4', '4', '2']);

    const unbounded = fc.categoricalColumnWithIdentity('uid');
    const c = roundTrip(unbounded);
    expect(c.config).toMatchObject({ numBuckets: null, defaultValue: null });
    expect(c.rebuilt.unbounded).toBe(true);
    expect(c.rebuilt.numBuckets).toBe(Number.POSITIVE_INFINITY);
    const features = { uid: BigInt64Array.from([2n ** 62n, 3n, -1n]) };
    expect(raggedView(c.rebuilt.rawIds(features))).toEqual(raggedView(unbounded.rawIds(features)));
    expectSameError(unbounded, c.rebuilt, features);
  });

  test('numericColumn: shape and defaultValue (-0 included); bucketizedColumn as ids and one-hot', async () => {
    const price = fc.numericColumn('price', { shape: [2, 3], defaultValue: [1.5, -0, 0.1, 1e30, -2, 3] });
    const { config, rebuilt } = roundTrip(price);
    expect(config).toEqual({ type: 'NumericColumn', name: 'price', key: 'price', shape: [2, 3], defaultValue: [1.5, '-0', 0.1, 1e30, -2, 3] });
    const features = { price: [[1, null, 3, 4, 5, null], [null, null, null, null, null, null]] as unknown as number[][] };
    const values = await expectSameDense(price, rebuilt, features);
    expect(Object.is(values[7], -0)).toBe(true);
    expect(await asyncErrorOf(() => rebuilt.denseValues({ price: [[1, 2]] }))).toEqual(await asyncErrorOf(() => price.denseValues({ price: [[1, 2]] })));
    const plain = fc.numericColumn('x');
    const plainBack = roundTrip(plain);
    expect(plainBack.config.defaultValue).toBeNull();
    await expectSameDense(plain, plainBack.rebuilt, { x: Float64Array.from([0.25, -3]) });

    const x = fc.numericColumn('x', { shape: [2] });
    const bucketized = fc.bucketizedColumn(x, [-0, 0.1, 0.10000000001, 2, 1e10]);
    const b = roundTrip(bucketized);
    expect(b.config).toMatchObject({ type: 'BucketizedColumn', name: 'x_bucketized', boundaries: ['-0', 0.1, 0.10000000001, 2, 1e10] });
    expect((b.config.sourceColumn as ColumnConfig).type).toBe('NumericColumn');
    const xs = { x: [[-1, 0], [0.1, 0.2], [3, 1e11]] };
    expectSameIds(bucketized, b.rebuilt, xs);
    await expectSameDense(bucketized, b.rebuilt, xs);
    expectSameError(bucketized, b.rebuilt, { x: [[1, 2, 3]] });
  });

  test('crossedColumn: raw keys, categorical and bucketized columns, nested crosses, hash keys', () => {
    const b = fc.bucketizedColumn(fc.numericColumn('a', { shape: [2] }), [0, 1]);
    const vocab = fc.categoricalColumnWithVocabularyList('v', ['x', 'y'], { numOovBuckets: 2 });
    const inner = fc.crossedColumn(['d1', 'd2'], 10);
    const crossed = fc.crossedColumn([b, 'c', inner, vocab], 15, 2n ** 63n + 12345n);
    const { config, rebuilt } = roundTrip(crossed);
    expect(config).toMatchObject({ type: 'CrossedColumn', name: crossed.name, hashBucketSize: 15, hashKey: (2n ** 63n + 12345n).toString() });
    expect((config.keys as unknown[])[1]).toBe('c');
    expect(((config.keys as ColumnConfig[])[2]).type).toBe('CrossedColumn');
    const features = {
      a: [[-1, 0.5], [0.5, 1]],
      c: stringRows([['cA'], ['cB', 'cC']]),
      d1: stringRows([['d1A'], ['d1B', 'd1C']]),
      d2: stringRows([['d2A'], ['d2B', 'd2C']]),
      v: [['x', 'q'], ['y']],
    };
    expectSameIds(crossed, rebuilt, features);
    expectSameError(crossed, rebuilt, { ...features, v: [1] });

    const plain = fc.crossedColumn(['f1', 'f2'], 100);
    const back = roundTrip(plain);
    expect(back.config.hashKey).toBeNull();
    const f = { f1: ['a', '', 'c'], f2: BigInt64Array.from([-1n, 2n ** 60n, 3n]) };
    expectSameIds(plain, back.rebuilt, f);
    const keyed = fc.crossedColumn(['f1', 'f2'], 100, -5);
    expectSameIds(keyed, roundTrip(keyed).rebuilt, f);
  });

  test('weightedCategoricalColumn and indicatorColumn, nested', async () => {
    const vocab = fc.categoricalColumnWithVocabularyList('w', ['omar', 'stringer', 'marlo']);
    const weighted = fc.weightedCategoricalColumn(vocab, 'w_weight');
    const { config, rebuilt } = roundTrip(weighted);
    expect(config).toMatchObject({ type: 'WeightedCategoricalColumn', name: 'w_weighted_by_w_weight', weightFeatureKey: 'w_weight' });
    const features = { w: [['omar', 'skywalker'], ['marlo', 'marlo']], w_weight: [[0.5, 2], [1.25, 3]] };
    expect(expectSameIds(weighted, rebuilt, features).weights).toEqual([0.5, 2, 1.25, 3]);
    expectSameError(weighted, rebuilt, { ...features, w_weight: [[1]] });

    const indicator = fc.indicatorColumn(weighted);
    const i = roundTrip(indicator);
    expect(i.config).toMatchObject({ type: 'IndicatorColumn', name: 'w_weighted_by_w_weight_indicator' });
    expect(await expectSameDense(indicator, i.rebuilt, features)).toEqual([0.5, 0, 0, 0, 0, 4.25]);

    const identityWeighted = fc.weightedCategoricalColumn(fc.categoricalColumnWithIdentity('n', 4, 0), 'nw');
    const iw = roundTrip(identityWeighted);
    expectSameIds(identityWeighted, iw.rebuilt, { n: BigInt64Array.from([1n, -1n, 9n]), nw: Float32Array.from([1, 2, 3]) });

    const crossedIndicator = fc.indicatorColumn(fc.crossedColumn(['p', 'q'], 6));
    const ci = roundTrip(crossedIndicator);
    await expectSameDense(crossedIndicator, ci.rebuilt, { p: ['a', 'b'], q: [['x', 'y'], []] });
    const hashedIndicator = fc.indicatorColumn(fc.categoricalColumnWithHashBucket('h', 5));
    await expectSameDense(hashedIndicator, roundTrip(hashedIndicator).rebuilt, { h: [['a', 'a', 'b']] });
  });
});

describe('columns that cannot be exported', () => {
  test('a numericColumn with a normalizerFn, also inside a bucketized column, names the column and says where the transform goes', () => {
    const price = fc.numericColumn('price', { normalizerFn: (v) => v.map((x) => x * 2) });
    const error = errorOf(() => columnConfig(price));
    expect(error.name).toBe('Error');
    expect(error.message).toMatch(/columnConfig: column 'price' has a normalizerFn.*cannot be exported.*model graph.*hb\.math/);
    expect(errorOf(() => columnConfig(fc.bucketizedColumn(price, [1]))).message).toMatch(
      /^columnConfig: column 'price' \(sourceColumn of column 'price_bucketized'\) has a normalizerFn/,
    );
    expect(errorOf(() => columnConfig(fc.indicatorColumn(fc.crossedColumn([fc.bucketizedColumn(price, [1]), 'c'], 5)))).message).toMatch(
      "columnConfig: column 'price' (sourceColumn of column 'price_bucketized' (keys[0] of column 'c_X_price_bucketized' (categoricalColumn of column " +
        "'c_X_price_bucketized_indicator'))) has a normalizerFn",
    );
  });

  test('embedding columns, subclasses and things that are not columns', () => {
    const emb = fc.embeddingColumn(fc.categoricalColumnWithIdentity('a', 3), 2);
    expect(errorOf(() => columnConfig(emb)).message).toMatch(/column 'a_embedding' is of class EmbeddingColumn, which has no config.*categoricalColumn/);
    class MyHashed extends fc.HashedCategoricalColumn {}
    expect(errorOf(() => columnConfig(new MyHashed('h', 3, 'string'))).message).toMatch(/column 'h' is of class MyHashed, which has no config/);
    expect(errorOf(() => columnConfig(null as never))).toEqual({ name: 'TypeError', message: 'columnConfig: expected a feature column, got null' });
    expect(errorOf(() => columnConfig({} as never)).name).toBe('TypeError');
  });
});

describe('corrupt configs are Errors naming the column and the field', () => {
  const hashed = () => columnConfig(fc.categoricalColumnWithHashBucket('wire', 10)) as Record<string, unknown>;
  const vocab = () => columnConfig(fc.categoricalColumnWithVocabularyList('v', ['a', 'bc', 'def'])) as Record<string, unknown>;
  const ints = () => columnConfig(fc.categoricalColumnWithVocabularyList('n', [1n, 2n])) as Record<string, unknown>;
  const fail = (config: unknown) => errorOf(() => columnFromConfig(config));

  test('not an object, unknown type, missing and unknown fields, wrong field types', () => {
    expect(fail('x')).toEqual({ name: 'TypeError', message: 'columnFromConfig: a column config must be an object, got "x" (a string)' });
    expect(fail([])).toMatchObject({ name: 'TypeError' });
    expect(fail({ ...hashed(), type: 'EmbeddingColumn' })).toEqual({
      name: 'Error',
      message: `columnFromConfig: column 'wire': field 'type' "EmbeddingColumn" (a string) is not a column type this version can rebuild`,
    });
    expect(fail({ name: 'wire' })).toEqual({ name: 'TypeError', message: "columnFromConfig: column 'wire': field 'type' is missing" });
    const { key: _key, ...noKey } = hashed();
    expect(fail(noKey)).toEqual({ name: 'TypeError', message: "columnFromConfig: column 'wire': field 'key' is missing" });
    const { name: _name, ...noName } = hashed();
    expect(fail(noName)).toEqual({ name: 'TypeError', message: "columnFromConfig: column 'wire': field 'name' is missing" });
    expect(fail({ ...hashed(), hashBucketSize: '10' })).toEqual({
      name: 'TypeError',
      message: `columnFromConfig: column 'wire': field 'hashBucketSize' must be an integer, got "10" (a string)`,
    });
    expect(fail({ ...hashed(), hashBucketSize: 1.5 })).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/'wire'.*'hashBucketSize'/) });
    expect(fail({ ...hashed(), dtype: 'float32' })).toMatchObject({ name: 'Error', message: expect.stringMatching(/'wire'.*field 'dtype' must be one of 'string', 'int32', 'int64'/) });
    expect(fail({ ...hashed(), extra: 1 })).toMatchObject({ name: 'Error', message: expect.stringMatching(/'wire'.*field 'extra' is not a field of this column type/) });
    expect(fail({ ...hashed(), name: 'other' })).toEqual({
      name: 'Error',
      message: "columnFromConfig: column 'other': field 'name' is 'other' but the other fields make column 'wire'",
    });
  });

  test("the constructors' own checks, named as coming from the config", () => {
    expect(fail({ ...hashed(), hashBucketSize: 0 })).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/^columnFromConfig: column 'wire': .*hashBucketSize.*>= 1/) });
    const identity = columnConfig(fc.categoricalColumnWithIdentity('aaa', 3)) as Record<string, unknown>;
    expect(fail({ ...identity, defaultValue: 3 })).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/^columnFromConfig: column 'aaa': .*defaultValue 3 not in range/) });
    expect(fail({ ...vocab(), defaultValue: 0, numOovBuckets: 2 })).toMatchObject({ message: expect.stringMatching(/^columnFromConfig: column 'v': .*both numOovBuckets and defaultValue/) });
    const numeric = columnConfig(fc.numericColumn('p')) as Record<string, unknown>;
    expect(fail({ ...numeric, shape: [0] })).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/'p'.*shape/) });
    expect(fail({ ...numeric, defaultValue: [1, 2] })).toMatchObject({ message: expect.stringMatching(/'p'.*defaultValue/) });
    expect(fail({ ...numeric, defaultValue: ['1'] })).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/'p'.*field 'defaultValue' \[0\] must be a number/) });
    const indicator = columnConfig(fc.indicatorColumn(fc.categoricalColumnWithIdentity('u', 3))) as Record<string, unknown>;
    const unbounded = { ...indicator, categoricalColumn: { ...(indicator.categoricalColumn as object), numBuckets: null } };
    expect(fail(unbounded)).toMatchObject({ message: expect.stringMatching(/^columnFromConfig: column 'u_indicator': .*no numBuckets/) });
  });

  test('string vocabularies: bad base64, offsets that do not fit the bytes, duplicates', () => {
    expect(fail({ ...vocab(), vocabularyBytes: 'YWJjZGVm!' })).toEqual({ name: 'Error', message: "columnFromConfig: column 'v': field 'vocabularyBytes' is not valid base64" });
    expect(fail({ ...vocab(), vocabularyBytes: 'YWJjZGV' })).toMatchObject({ message: expect.stringMatching(/'v'.*'vocabularyBytes' is not valid base64/) });
    expect(fail({ ...vocab(), vocabularyBytes: 7 })).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/'v'.*'vocabularyBytes' must be a string/) });
    expect(fail({ ...vocab(), vocabularyOffsets: [0, 1, 3, 5] })).toEqual({
      name: 'RangeError',
      message: "columnFromConfig: column 'v': field 'vocabularyOffsets' end at 5 but vocabularyBytes holds 6 bytes",
    });
    expect(fail({ ...vocab(), vocabularyOffsets: [0, 3, 1, 6] })).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/'v'.*'vocabularyOffsets' \[2\] = 1 does not fit/) });
    expect(fail({ ...vocab(), vocabularyOffsets: [1, 3, 6] })).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/'vocabularyOffsets' \[0\] = 1/) });
    expect(fail({ ...vocab(), vocabularyOffsets: [0, 3, 9] })).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/'vocabularyOffsets' \[2\] = 9/) });
    expect(fail({ ...vocab(), vocabularyOffsets: [0] })).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/'v'.*'vocabularyOffsets'.*non-empty/) });
    expect(fail({ ...vocab(), vocabularyOffsets: [0, '3', 6] })).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/'vocabularyOffsets' \[1\] must be an integer/) });
    expect(fail({ ...vocab(), vocabularyOffsets: [0, 0, 0, 6] })).toMatchObject({ message: expect.stringMatching(/^columnFromConfig: column 'v': .*duplicate key/) });
    // A string vocabulary's config has bytes, not a list; an integer one's a list.
    expect(fail({ ...vocab(), vocabulary: ['a'] })).toMatchObject({ message: expect.stringMatching(/'v'.*field 'vocabulary' is not a field/) });
    expect(fail({ ...vocab(), dtype: 'int64' })).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/'v'.*field 'vocabulary' is missing/) });
    expect(fail({ ...vocab(), source: 'url' })).toMatchObject({ message: expect.stringMatching(/'v'.*field 'source' must be one of 'list', 'file'/) });
  });

  test('integer vocabularies: decimal strings within the dtype', () => {
    expect(fail({ ...ints(), vocabulary: ['1', 2] })).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/'n'.*field 'vocabulary' \[1\]must be an integer as a decimal string/) });
    expect(fail({ ...ints(), vocabulary: ['1', '02'] })).toMatchObject({ name: 'Error', message: expect.stringMatching(/'n'.*'vocabulary' \[1\]/) });
    expect(fail({ ...ints(), vocabulary: ['1', '1e3'] })).toMatchObject({ name: 'Error' });
    expect(fail({ ...ints(), vocabulary: [] })).toMatchObject({ message: expect.stringMatching(/'n'.*'vocabulary' must not be empty/) });
    expect(fail({ ...ints(), vocabulary: ['9223372036854775808'] })).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/^columnFromConfig: column 'n': .*vocabulary\[0\]/) });
    expect(fail({ ...ints(), dtype: 'int32', vocabulary: ['2147483648'] })).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/'n'.*int32/) });
    expect(fail({ ...ints(), vocabulary: ['1', '1'] })).toMatchObject({ message: expect.stringMatching(/'n'.*duplicate key 1/) });
  });

  test('nested configs name the inner column and where it sits', () => {
    const crossed = columnConfig(fc.crossedColumn(['c', fc.categoricalColumnWithIdentity('b', 4)], 10)) as Record<string, unknown>;
    const keys = crossed.keys as Array<Record<string, unknown>>;
    const badInner = { ...crossed, keys: [keys[0], { ...keys[1], numBuckets: 'four' }] };
    expect(fail(badInner)).toEqual({
      name: 'TypeError',
      message: "columnFromConfig: column 'b' (keys[1] of column 'b_X_c'): field 'numBuckets' must be an integer, got \"four\" (a string)",
    });
    expect(fail({ ...crossed, keys: [keys[0], 7] })).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/a column config \(keys\[1\] of column 'b_X_c'\) must be an object/) });
    expect(fail({ ...crossed, hashKey: 5 })).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/'b_X_c'.*field 'hashKey'/) });
    expect(fail({ ...crossed, hashKey: '18446744073709551616' })).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/'b_X_c'.*field 'hashKey' must be a uint64/) });
    expect(fail({ ...crossed, keys: 'c' })).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/'b_X_c'.*field 'keys' must be an array/) });
    // A hashed column is no key for a cross (crossedColumn's own rule).
    const withHashed = { ...crossed, keys: ['c', columnConfig(fc.categoricalColumnWithHashBucket('h', 3))], name: 'c_X_h' };
    expect(fail(withHashed)).toMatchObject({ message: expect.stringMatching(/^columnFromConfig: column 'c_X_h': .*not supported for crossing/) });

    const bucketized = columnConfig(fc.bucketizedColumn(fc.numericColumn('x'), [0, 1])) as Record<string, unknown>;
    expect(fail({ ...bucketized, sourceColumn: columnConfig(fc.categoricalColumnWithIdentity('x', 3)) })).toMatchObject({
      name: 'TypeError',
      message: expect.stringMatching(/^columnFromConfig: column 'x_bucketized': bucketizedColumn: sourceColumn must be a column made by numericColumn/),
    });
    expect(fail({ ...bucketized, boundaries: [1, 0] })).toMatchObject({ message: expect.stringMatching(/'x_bucketized'.*sorted/) });
    expect(fail({ ...bucketized, boundaries: [0, 'x'] })).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/'x_bucketized'.*field 'boundaries' \[1\] must be a number/) });
    const weighted = columnConfig(fc.weightedCategoricalColumn(fc.categoricalColumnWithIdentity('i', 3), 'iw')) as Record<string, unknown>;
    const { categoricalColumn: _c, ...noInner } = weighted;
    expect(fail(noInner)).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/'i_weighted_by_iw'.*field 'categoricalColumn' is missing/) });
    expect(fail({ ...weighted, categoricalColumn: columnConfig(fc.numericColumn('i')) })).toMatchObject({ message: expect.stringMatching(/'i_weighted_by_iw'.*categorical column/) });

    // Crosses nested past any sane depth are an Error, not a blown stack.
    let deep: Record<string, unknown> = { type: 'CrossedColumn', name: 'a_X_b', keys: ['a', 'b'], hashBucketSize: 3, hashKey: null };
    for (let i = 0; i < 100; i++) deep = { ...deep, keys: ['a', deep] };
    expect(fail(deep).message).toMatch(/nest more than 64 deep/);
  });
});
