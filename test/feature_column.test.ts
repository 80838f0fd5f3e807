// hb.featureColumn against TensorFlow 1.15's published values (feature_column_v2_test.py,
// sparse_cross_op_test.py) and HybridBackend's embSegmentRank test, through the public API.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';

const fc = hb.featureColumn;
const ids = (r: hb.Ragged) => Array.from(r.values as BigInt64Array, Number);
const splits = (r: hb.Ragged) => Array.from(r.rowSplits);

describe('categoricalColumnWithHashBucket', () => {
  it("hashes strings as TF's to_hash_bucket_fast", () => {
    expect(ids(fc.categoricalColumnWithHashBucket('wire', 10).transform({ wire: ['omar', 'stringer', 'marlo'] }))).toEqual([6, 4, 1]);
    const four = fc.categoricalColumnWithHashBucket('wire', 4);
    const r = four.transform({ wire: hb.StringColumn.fromStrings(['marlo', 'skywalker', 'omar', 'stringer']) });
    expect(ids(r)).toEqual([3, 2, 2, 0]);
    expect(four.name).toBe('wire');
    expect(four.numBuckets).toBe(4);
  });

  it('hashes integers as their decimal strings (int64 and int32 alike)', () => {
    const col = fc.categoricalColumnWithHashBucket('wire', 10, 'int64');
    expect(ids(col.transform({ wire: BigInt64Array.from([101n, 201n, 301n]) }))).toEqual([3, 7, 5]);
    expect(ids(col.transform({ wire: Int32Array.from([101, 201, 301]) }))).toEqual([3, 7, 5]);
    expect(ids(col.transform({ wire: [101, 201n, 301] }))).toEqual([3, 7, 5]);
  });

  it("drops TF's ignore values from dense inputs only, and missing values always", () => {
    const col = fc.categoricalColumnWithHashBucket('wire', 10);
    const dense = col.transform({ wire: ['omar', '', null, 'marlo'] });
    expect(ids(dense)).toEqual([6, 1]);
    expect(splits(dense)).toEqual([0, 1, 1, 1, 2]);
    const sparse = col.transform({ wire: [['omar', ''], [], ['marlo']] });
    expect(splits(sparse)).toEqual([0, 2, 2, 3]);
    expect(ids(sparse)[0]).toBe(6);
    expect(ids(sparse)[1]).toBe(Number(hb.strings.toHashBucketFast([''], 10)[0]));
    const ints = fc.categoricalColumnWithHashBucket('n', 10, 'int64').transform({ n: BigInt64Array.from([101n, -1n, 201n]) });
    expect(ids(ints)).toEqual([3, 7]);
    expect(splits(ints)).toEqual([0, 1, 1, 2]);
  });

  it('takes ragged string rows as one UTF-8 buffer', () => {
    const values = hb.StringColumn.fromStrings(['omar', 'stringer', 'marlo']);
    const r = fc.categoricalColumnWithHashBucket('wire', 10).transform({ wire: { values, rowSplits: Int32Array.from([0, 2, 2, 3]) } });
    expect(ids(r)).toEqual([6, 4, 1]);
    expect(splits(r)).toEqual([0, 2, 2, 3]);
  });

  it('refuses ragged inputs whose rowSplits do not describe their values, and StringColumns of the wrong kinds', () => {
    const values = hb.StringColumn.fromStrings(['omar', 'stringer', 'marlo']);
    const col = fc.categoricalColumnWithHashBucket('w', 10);
    const ragged = (splits: number[]) => ({ w: { values, rowSplits: Int32Array.from(splits) } });
    expect(() => col.transform(ragged([0, 1, 2]))).toThrow("feature column 'w': feature 'w': rowSplits end at 2 but there are 3 values");
    expect(() => col.transform(ragged([0, 2, 1, 3]))).toThrow("feature column 'w': feature 'w': rowSplits decrease at row 1 (2 then 1)");
    expect(() => col.transform(ragged([1, 2, 3]))).toThrow("feature column 'w': feature 'w': rowSplits must start at 0");
    expect(ids(col.transform(ragged([0, 1, 3])))).toEqual([6, 4, 1]);
    const idsRagged = new hb.Ragged(BigInt64Array.from([1n, 2n, 3n]), Int32Array.from([0, 1, 2]));
    expect(() => fc.categoricalColumnWithIdentity('w', 10).transform({ w: idsRagged })).toThrow(/rowSplits end at 2 but there are 3 values/);
    expect(() => new hb.StringColumn([1, 2] as never, Int32Array.from([0, 2]))).toThrow('StringColumn: bytes must be a Uint8Array (UTF-8), got Array');
    expect(() => new hb.StringColumn(new Int8Array(2) as never, Int32Array.from([0, 2]))).toThrow('StringColumn: bytes must be a Uint8Array (UTF-8), got Int8Array');
    expect(() => new hb.StringColumn(new Uint8Array(2), Int32Array.from([0, 2]), [1] as never)).toThrow('StringColumn: valid must be a Uint8Array of 0/1 flags, got Array');
  });

  it('in a child process: a worker thread rewriting shared offsets while columns transform them ends in Errors, not a crash', () => {
    const { spawnSync } = require('child_process') as typeof import('child_process');
    const dist = JSON.stringify(path.resolve(__dirname, '..', 'dist', 'index.js'));
    const script = `
      const { Worker } = require('worker_threads');
      const hb = require(${dist});
      const n = 10000;
      const offsets = new Int32Array(new SharedArrayBuffer(4 * (n + 1)));
      for (let i = 0; i <= n; i++) offsets[i] = i;
      const bytes = new Uint8Array(n).fill(97);
      // Another thread flips offsets between valid and far out of range, as fast as it can.
      const w = new Worker('const { workerData: o } = require("worker_threads"); for (;;) { o[5000] = 5000; o[5000] = 2 ** 30; }', { eval: true, workerData: offsets });
      const vocab = hb.featureColumn.categoricalColumnWithVocabularyList('w', ['a']);
      const hashed = hb.featureColumn.categoricalColumnWithHashBucket('w', 10);
      let errors = 0;
      for (let k = 0; k < 200; k++) {
        for (const col of [vocab, hashed]) {
          try { col.transform({ w: new hb.StringColumn(bytes, offsets) }); } catch (e) { if (/SharedArrayBuffer/.test(e.message)) errors++; }
        }
      }
      w.terminate().then(() => console.log('ERRORS ' + errors));`;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(child.signal).toBeNull();
    expect(child.status).toBe(0);
    expect(child.stdout).toContain('ERRORS 400');
  });

  it('refuses strings whose offsets or bytes live in a SharedArrayBuffer (another thread could change them mid-read)', () => {
    const plain = hb.StringColumn.fromStrings(['omar', 'marlo']);
    const sharedOffsets = new Int32Array(new SharedArrayBuffer(plain.offsets.byteLength));
    sharedOffsets.set(plain.offsets);
    const sharedBytes = new Uint8Array(new SharedArrayBuffer(plain.bytes.byteLength));
    sharedBytes.set(plain.bytes);
    const vocab = fc.categoricalColumnWithVocabularyList('wire', ['omar', 'marlo']);
    const hashed = fc.categoricalColumnWithHashBucket('wire', 10);
    for (const column of [new hb.StringColumn(plain.bytes, sharedOffsets), new hb.StringColumn(sharedBytes, plain.offsets)]) {
      for (const col of [vocab, hashed]) {
        expect(() => col.transform({ wire: column })).toThrow(expect.objectContaining({ name: 'TypeError' }));
        expect(() => col.transform({ wire: column })).toThrow(/feature column 'wire': .* is backed by a SharedArrayBuffer/);
      }
    }
  });

  it('refuses a missing key, a dtype mismatch and bad arguments, naming the column', () => {
    const col = fc.categoricalColumnWithHashBucket('wire', 10);
    expect(() => col.transform({ other: ['a'] })).toThrow(/'wire'.*feature 'wire' is missing.*'other'/);
    expect(() => col.transform({ wire: [1, 2] })).toThrow(/'wire'.*integers.*dtype is string/);
    expect(() => col.transform({ wire: new Float32Array(2) })).toThrow(/'wire'.*float32/);
    expect(() => col.transform({ wire: [1.5] as number[] })).toThrow(/'wire'.*1.5/);
    expect(() => fc.categoricalColumnWithHashBucket('wire', 0)).toThrow(/hashBucketSize/);
    expect(() => fc.categoricalColumnWithHashBucket('', 3)).toThrow(/key/);
    expect(() => col.transform({ wire: hb.tensor([1, 2], [2], 'int32', { device: 'cpu' }) })).toThrow(/'wire' holds integers but the column's dtype is string/);
  });
});

describe('categoricalColumnWithIdentity', () => {
  it('maps out-of-range ids to defaultValue', () => {
    const col = fc.categoricalColumnWithIdentity('aaa', 4, 3);
    expect(ids(col.transform({ aaa: [[1], [-1, 99]] }))).toEqual([1, 3, 3]);
  });

  it('passes in-range ids through without a default; dense -1 is dropped', () => {
    const col = fc.categoricalColumnWithIdentity('aaa', 3);
    const r = col.transform({ aaa: Int32Array.from([0, -1, 1, 0]) });
    expect(ids(r)).toEqual([0, 1, 0]);
    expect(splits(r)).toEqual([0, 1, 1, 2, 3]);
    expect(r.values.constructor.name).toBe('BigInt64Array');
  });

  it('takes a host hb.Tensor [batch, n] as a dense block, dropping -1 as TF does for dense input', async () => {
    const col = fc.categoricalColumnWithIdentity('aaa', 3);
    const block = hb.tensor(BigInt64Array.from([0n, -1n, 2n, 1n]), [2, 2], 'int64', { device: 'cpu' });
    const r = col.transform({ aaa: block });
    expect(ids(r)).toEqual([0, 2, 1]);
    expect(splits(r)).toEqual([0, 1, 3]);
    // Values still being written (queued behind other work) are read once written.
    const pending = await hb.tensor(Int32Array.from([1, -1]), [2], 'int32', { device: 'cpu' }).clone();
    expect(ids(col.transform({ aaa: pending }))).toEqual([1]);
    expect(() => col.transform({ aaa: hb.tensor(Float32Array.of(1), [1], 'float32', { device: 'cpu' }) })).toThrow(/'aaa' holds floats/);
    expect(() => col.transform({ aaa: hb.tensor(Int32Array.of(1), [1, 1, 1], 'int32', { device: 'cpu' }) })).toThrow(/'aaa' is a tensor of shape \[1, 1, 1\]/);
    const price = fc.numericColumn('price', { shape: [2] });
    expect(Array.from(price.transform({ price: hb.tensor([[1, 2], [3, 4]], undefined, undefined, { device: 'cpu' }) }))).toEqual([1, 2, 3, 4]);
    expect(() => price.transform({ price: hb.tensor([1, 2, 3], undefined, undefined, { device: 'cpu' }) })).toThrow(/'price' has 1 values per example, the column takes 2/);
  });

  it('refuses ids outside [0, numBuckets) without a default, as TF 1.15 asserts', async () => {
    const col = fc.categoricalColumnWithIdentity('aaa', 3);
    expect(() => col.transform({ aaa: [[1, 3]] })).toThrow(/'aaa'.*id 3 \(value 1\) is outside \[0, 3\).*defaultValue/);
    expect(() => col.transform({ aaa: [[-2]] })).toThrow(/id -2/);
    const emb = fc.embeddingColumn(col, 2, { initializer: hb.initializers.ones() });
    await expect(fc.DenseFeatures([emb])({ aaa: [[1, 3]] })).rejects.toThrow(/'aaa'.*outside/);
    const out = await fc.DenseFeatures([emb])({ aaa: BigInt64Array.from([2n, -1n]) });
    expect(Array.from((await out.data()) as Float32Array)).toEqual([1, 1, 0, 0]);
  });

  it('takes empty and all-missing batches', () => {
    expect(ids(fc.categoricalColumnWithIdentity('aaa', 3).transform({ aaa: [] }))).toEqual([]);
    expect(splits(fc.categoricalColumnWithIdentity('aaa', 3).transform({ aaa: [null, null] }))).toEqual([0, 0, 0]);
    expect(splits(fc.categoricalColumnWithHashBucket('s', 3).transform({ s: [null] }))).toEqual([0, 0]);
    expect(ids(fc.categoricalColumnWithVocabularyList('v', ['a']).transform({ v: [] }))).toEqual([]);
  });

  it('refuses bad arguments', () => {
    expect(() => fc.categoricalColumnWithIdentity('aaa', 3, 3)).toThrow(/defaultValue 3 not in range \[0, 3\)/);
    expect(() => fc.categoricalColumnWithIdentity('aaa', -1)).toThrow(/numBuckets/);
    expect(() => fc.categoricalColumnWithIdentity('aaa', 3).transform({ aaa: ['x'] })).toThrow(/'aaa'.*strings/);
  });
});

describe('categoricalColumnWithVocabularyList / File', () => {
  const wire = ['omar', 'stringer', 'marlo'];
  const query = { aaa: [['marlo', 'skywalker'], ['omar']] };

  it('gives positions, defaultValue for misses, OOV buckets by Fingerprint64', () => {
    expect(ids(fc.categoricalColumnWithVocabularyList('aaa', wire).transform(query))).toEqual([2, -1, 0]);
    expect(ids(fc.categoricalColumnWithVocabularyList('aaa', wire, { defaultValue: 2 }).transform(query))).toEqual([2, 2, 0]);
    const oov = fc.categoricalColumnWithVocabularyList('aaa', wire, { numOovBuckets: 100 });
    expect(ids(oov.transform({ aaa: [['marlo', 'skywalker', 'omar'], ['heisenberg']] }))).toEqual([2, 33, 0, 62]);
    expect(oov.numBuckets).toBe(103);
    expect(ids(fc.categoricalColumnWithVocabularyList('aaa', wire, { numOovBuckets: 1 }).transform({ aaa: ['skywalker'] }))).toEqual([3]);
  });

  it('integer vocabularies hash misses as decimal strings', () => {
    const warriors = [30, 35, 11, 23, 22];
    const input = { aaa: [[11n, 100n], [30n, 22n]] };
    expect(ids(fc.categoricalColumnWithVocabularyList('aaa', warriors).transform(input))).toEqual([2, -1, 0, 4]);
    expect(ids(fc.categoricalColumnWithVocabularyList('aaa', warriors, { numOovBuckets: 100 }).transform(input))).toEqual([2, 60, 0, 4]);
  });

  it('matches vocabulary file lines byte for byte, as TF does, also where they are not valid UTF-8', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-vocab-bytes-'));
    const file = path.join(dir, 'bytes.txt');
    // line 0: 0xff 'a' (invalid UTF-8); line 1: 'é' in Latin-1 (0xe9, invalid UTF-8); line 2: 'é' in UTF-8
    fs.writeFileSync(file, Buffer.from([0xff, 0x61, 0x0a, 0xe9, 0x0a, 0xc3, 0xa9, 0x0a]));
    const col = fc.categoricalColumnWithVocabularyFile('raw', file);
    const raw = (...rows: number[][]) => {
      const bytes = Uint8Array.from(rows.flat());
      const offsets = Int32Array.from(rows.reduce((o, r) => [...o, o[o.length - 1] + r.length], [0]));
      return new hb.StringColumn(bytes, offsets);
    };
    expect(ids(col.transform({ raw: raw([0xc3, 0xa9], [0xe9], [0xff, 0x61], [0xef, 0xbf, 0xbd, 0x61]) }))).toEqual([2, 1, 0, -1]);
    expect(ids(col.transform({ raw: ['é'] }))).toEqual([2]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads a vocabulary file, line by line', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-vocab-'));
    const file = path.join(dir, 'wire.txt');
    fs.writeFileSync(file, 'omar\nstringer\nmarlo\n');
    expect(ids(fc.categoricalColumnWithVocabularyFile('aaa', file).transform(query))).toEqual([2, -1, 0]);
    expect(ids(fc.categoricalColumnWithVocabularyFile('aaa', file, { vocabularySize: 2 }).transform(query))).toEqual([-1, -1, 0]);
    const oov = fc.categoricalColumnWithVocabularyFile('aaa', file, { numOovBuckets: 100 });
    expect(ids(oov.transform({ aaa: ['marlo', 'skywalker', 'omar', 'heisenberg'] }))).toEqual([2, 33, 0, 62]);
    const ints = path.join(dir, 'warriors.txt');
    fs.writeFileSync(ints, '30\n35\n11\n23\n22\n');
    const warriors = fc.categoricalColumnWithVocabularyFile('aaa', ints, { dtype: 'int64', defaultValue: -100 });
    expect(ids(warriors.transform({ aaa: BigInt64Array.from([11n, -1n, 100n, 30n, 22n]) }))).toEqual([2, -100, 0, 4]);
    expect(() => fc.categoricalColumnWithVocabularyFile('aaa', path.join(dir, 'missing.txt'))).toThrow(/missing.txt.*'aaa'/);
    expect(() => fc.categoricalColumnWithVocabularyFile('aaa', file, { vocabularySize: 4 })).toThrow(/vocabularySize 4.*3 lines/);
    fs.writeFileSync(path.join(dir, 'crlf.txt'), 'omar\r\nstringer\r\nmarlo\r\n');
    expect(ids(fc.categoricalColumnWithVocabularyFile('aaa', path.join(dir, 'crlf.txt')).transform(query))).toEqual([2, -1, 0]);
    fs.writeFileSync(file, 'omar\nx\nomar\n');
    expect(() => fc.categoricalColumnWithVocabularyFile('aaa', file)).toThrow(/duplicate key 'omar' at positions 0 and 2/);
  });

  it('refuses duplicates, default with OOV buckets, empty lists and mismatched values', () => {
    expect(() => fc.categoricalColumnWithVocabularyList('aaa', ['a', 'b', 'a'])).toThrow(/'aaa'.*duplicate key 'a'/);
    expect(() => fc.categoricalColumnWithVocabularyList('aaa', [1, 2, 1])).toThrow(/duplicate key 1/);
    expect(() => fc.categoricalColumnWithVocabularyList('aaa', [1n, 2n ** 63n])).toThrow(/vocabulary\[1\]/);
    expect(() => fc.categoricalColumnWithVocabularyList('aaa', wire, { defaultValue: 0, numOovBuckets: 2 })).toThrow(/both numOovBuckets and defaultValue.*'aaa'/);
    expect(() => fc.categoricalColumnWithVocabularyList('aaa', [])).toThrow(/non-empty/);
    expect(() => fc.categoricalColumnWithVocabularyList('aaa', wire).transform({ aaa: [1] })).toThrow(/'aaa'.*integers.*string/);
    expect(() => fc.categoricalColumnWithVocabularyList('aaa', wire, { numOovBuckets: -1 })).toThrow(/numOovBuckets/);
  });
});

describe('numericColumn and bucketizedColumn', () => {
  it('gives float32 values with defaults and normalizerFn', () => {
    const col = fc.numericColumn('price', { shape: [2], defaultValue: [7, 8], normalizerFn: (x) => x.map((v) => v * 2) });
    expect(Array.from(col.transform({ price: [[1, 2], [null, 3] as unknown as number[]] }))).toEqual([2, 4, 14, 6]);
    expect(col.dimension).toBe(2);
    expect(() => col.transform({ price: [[1, 2, 3]] })).toThrow(/'price'.*row 0 has 3 values/);
    expect(() => col.transform({ price: Float32Array.from([1, NaN]) })).toThrow(/'price'.*NaN/);
    expect(() => fc.numericColumn('p').transform({ p: [null] as unknown as number[] })).toThrow(/'p'.*missing.*no defaultValue/);
    expect(() => fc.numericColumn('p').transform({ p: ['a'] })).toThrow(/'p'.*string/);
  });

  it("bucketizes left-inclusive with TF's ids per source element", () => {
    const price = fc.numericColumn('price', { shape: [2] });
    const b = fc.bucketizedColumn(price, [0, 2, 4, 6]);
    expect(b.name).toBe('price_bucketized');
    expect(b.numBuckets).toBe(10);
    const r = b.transform({ price: [[-1, 1], [5, 6]] });
    expect(ids(r)).toEqual([0, 6, 3, 9]);
    expect(splits(r)).toEqual([0, 2, 4]);
    const one = fc.bucketizedColumn(fc.numericColumn('price'), [0, 2, 4, 6]);
    expect(ids(one.transform({ price: Float64Array.from([-1, 1, 5, 6]) }))).toEqual([0, 1, 3, 4]);
  });

  it('compares in float32, as the Bucketize kernel', () => {
    // 0.1 rounds up in float32 (0.100000001...), so a float64 comparison would put 0.1 left of it.
    const b = fc.bucketizedColumn(fc.numericColumn('x'), [0.1]);
    expect(ids(b.transform({ x: [0.1, 0.09999999] }))).toEqual([1, 0]);
  });

  it('refuses unsorted boundaries and bad sources', () => {
    const x = fc.numericColumn('x');
    expect(() => fc.bucketizedColumn(x, [0, 0])).toThrow(/sorted list.*'x'/);
    expect(() => fc.bucketizedColumn(x, [1, 0])).toThrow(/sorted list/);
    // Distinct as doubles, equal as float32: TF accepts them (an empty bucket).
    expect(ids(fc.bucketizedColumn(x, [0.1, 0.10000000001]).transform({ x: [0.2] }))).toEqual([2]);
    expect(() => fc.bucketizedColumn(x, [])).toThrow(/non-empty/);
    expect(() => fc.bucketizedColumn(fc.categoricalColumnWithIdentity('a', 2) as never, [0])).toThrow(/numericColumn/);
    expect(() => fc.bucketizedColumn(fc.numericColumn('m', { shape: [2, 2] }), [0])).toThrow(/one-dimensional/);
  });
});

describe('crossedColumn', () => {
  const a = fc.numericColumn('a', { shape: [2] });
  const b = fc.bucketizedColumn(a, [0, 1]);
  const rows = (values: string[][]) => ({ values: hb.StringColumn.fromStrings(values.flat()), rowSplits: Int32Array.from([0, ...values.map((_, i) => values.slice(0, i + 1).flat().length)]) });
  const features = {
    a: [[-1, 0.5], [0.5, 1]],
    c: rows([['cA'], ['cB', 'cC']]),
    d1: rows([['d1A'], ['d1B', 'd1C']]),
    d2: rows([['d2A'], ['d2B', 'd2C']]),
  };

  it('matches test_get_sparse_tensors_simple', () => {
    const crossed = fc.crossedColumn([b, 'c'], 5, 5);
    const r = crossed.transform(features);
    expect(ids(r)).toEqual([1, 0, 1, 3, 4, 2]);
    expect(splits(r)).toEqual([0, 2, 6]);
    expect(crossed.name).toBe('a_bucketized_X_c');
  });

  it('matches test_get_sparse_tensors (nested crosses flatten)', () => {
    const crossed1 = fc.crossedColumn(['d1', 'd2'], 10);
    const crossed2 = fc.crossedColumn([b, 'c', crossed1], 15, 5);
    const r = crossed2.transform(features);
    expect(ids(r)).toEqual([6, 14, 0, 13, 8, 8, 10, 12, 2, 0, 1, 9, 8, 12, 2, 0, 10, 11]);
    expect(splits(r)).toEqual([0, 2, 18]);
    expect(crossed2.name).toBe('a_bucketized_X_c_X_d1_X_d2');
  });

  it('crosses a string column of only empty strings (no bytes at all) as the same empty strings next to others', () => {
    // Found by the fuzzer: an empty Uint8Array has no data pointer, and its values were
    // read as integers through it (a crash).
    const crossed = fc.crossedColumn(['k', 'k'], 1000);
    const empty = new hb.StringColumn(new Uint8Array(0), Int32Array.from([0, 0]));
    const withBytes = new hb.StringColumn(Uint8Array.from([97]), Int32Array.from([0, 0, 1]));
    expect(ids(crossed.transform({ k: empty }))).toEqual(ids(crossed.transform({ k: withBytes })).slice(0, 1));
    expect(Array.from(hb.strings.toHashBucketFast(empty, 1000))).toEqual(Array.from(hb.strings.toHashBucketFast(withBytes, 1000)).slice(0, 1));
  });

  it("matches sparse_cross_hashed's values (default and explicit hash keys)", () => {
    const f = { f1: ['batch1-FC1-F1'], f2: ['batch1-FC2-F1'], f3: ['batch1-FC3-F1'] };
    expect(ids(fc.crossedColumn(['f1', 'f2', 'f3'], 100).transform(f))).toEqual([83]);
    expect(ids(fc.crossedColumn(['f1', 'f2', 'f3'], 100, 0xdecafcaffen + 1n).transform(f))).toEqual([31]);
  });

  it("keeps dense raw features' '' and -1 and crosses sparse inputs before dense ones, as TF", () => {
    const f = { s: ['', 'x'], t: ['p', 'q'] };
    expect(splits(fc.crossedColumn(['s', 't'], 1000).transform(f))).toEqual([0, 1, 2]);
    const vocab = fc.categoricalColumnWithVocabularyList('v', ['a', 'b']);
    const g = { v: [['a'], ['b', 'a']], d: ['x', 'y'] };
    expect(ids(fc.crossedColumn(['d', vocab], 1000).transform(g))).toEqual(ids(fc.crossedColumn([vocab, 'd'], 1000).transform(g)));
  });

  it('gives no ids for a row where an input is empty, and uses integer ids raw', () => {
    const r = fc.crossedColumn(['x', 'y'], 1000).transform({ x: [[1n, 2n], [3n]], y: [['p'], []] });
    expect(splits(r)).toEqual([0, 2, 2]);
    const again = fc.crossedColumn(['x', 'y'], 1000).transform({ x: [[1n, 2n], [3n]], y: [['p'], []] });
    expect(ids(again)).toEqual(ids(r));
  });

  it('refuses hash-bucket and weighted keys, short key lists and mismatched rows', () => {
    const hashed = fc.categoricalColumnWithHashBucket('h', 10);
    expect(() => fc.crossedColumn([hashed, 'c'], 10)).toThrow(/not supported for crossing/);
    const weighted = fc.weightedCategoricalColumn(fc.categoricalColumnWithIdentity('i', 3), 'w');
    expect(() => fc.crossedColumn([weighted, 'c'], 10)).toThrow(/weight/);
    expect(() => fc.crossedColumn(['c'], 10)).toThrow(/length > 1/);
    expect(() => fc.crossedColumn(['c', 'd1'], 0)).toThrow(/hashBucketSize/);
    expect(() => fc.crossedColumn(['c', 'd1'], 10, 1.5)).toThrow(/hashKey must be a safe integer/);
    expect(() => fc.crossedColumn(['c', 'd1'], 10, '7' as never)).toThrow(/hashKey/);
    expect(() => fc.crossedColumn(['x', 'y'], 10).transform({ x: ['a', 'b'], y: ['c'] })).toThrow(/c_X_d1|x_X_y.*rows/);
  });
});

describe('weightedCategoricalColumn and indicatorColumn', () => {
  const abc = () => fc.categoricalColumnWithVocabularyList('ids', ['a', 'b', 'c']);

  it('sums weights per id (TF indicator of a weighted column)', () => {
    const col = fc.indicatorColumn(fc.weightedCategoricalColumn(abc(), 'weights'));
    expect(col.name).toBe('ids_weighted_by_weights_indicator');
    expect(Array.from(col.transform({ ids: [['c', 'b', 'a', 'c']], weights: [[2, 4, 6, 1]] }))).toEqual([6, 4, 3]);
    expect(Array.from(col.transform({ ids: [['c', 'b', 'unknown']], weights: [[2, 4, 6]] }))).toEqual([0, 4, 2]);
  });

  it('counts ids, ignoring ids outside the buckets', () => {
    expect(Array.from(fc.indicatorColumn(abc()).transform({ ids: [['c', 'b', 'unknown']] }))).toEqual([0, 1, 1]);
    const identity = fc.indicatorColumn(fc.categoricalColumnWithIdentity('n', 4));
    expect(Array.from(identity.transform({ n: [[1, 1]] }))).toEqual([0, 2, 0, 0]);
    const withDefault = fc.indicatorColumn(fc.categoricalColumnWithVocabularyList('n', [5, 6]));
    expect(Array.from(withDefault.transform({ n: [[6, 9, 6]] }))).toEqual([0, 2]);
    expect(Array.from(fc.indicatorColumn(fc.categoricalColumnWithHashBucket('animal', 4)).transform({ animal: ['fox'] }))).toEqual([0, 0, 1, 0]);
  });

  it('drops the weight of a dropped id, and refuses misaligned weights', () => {
    const w = fc.weightedCategoricalColumn(fc.categoricalColumnWithIdentity('n', 5), 'w');
    expect(w.name).toBe('n_weighted_by_w');
    const r = w.transform({ n: BigInt64Array.from([1n, -1n, 3n]), w: Float32Array.from([0.5, 9, 2]) });
    expect(ids(r)).toEqual([1, 3]);
    expect(Array.from(r.weights as Float32Array)).toEqual([0.5, 2]);
    expect(() => w.transform({ n: [[1, 2]], w: [[1]] })).toThrow(/'n_weighted_by_w'.*weight feature 'w' has 1 values but feature 'n' has 2/);
    expect(() => w.transform({ n: [[1], [2]], w: [[1, 2], []] })).toThrow(/rows of weight feature 'w' do not match/);
    expect(() => w.transform({ n: [[1]] })).toThrow(/feature 'w' is missing/);
    expect(() => fc.weightedCategoricalColumn(fc.crossedColumn(['a', 'b'], 3), 'w')).toThrow(/one id per value/);
  });
});

describe('embeddingColumn, sharedEmbeddingColumns and DenseFeatures', () => {
  async function setTable(col: { variable: hb.Variable }, rows: number[][]) {
    await col.variable.assign(hb.tensor(rows));
  }

  it('names, default options and a lookup that equals a plain-JS computation', async () => {
    const col = fc.embeddingColumn(fc.categoricalColumnWithIdentity('aaa', 3), 2, { combiner: 'sqrtn' });
    expect(col.name).toBe('aaa_embedding');
    expect(col.variable.shape).toEqual([3, 2]);
    expect(col.variable.name).toMatch(/^aaa_embedding\/embedding_weights/);
    expect(col.options.embSegmentRank).toBe(0);
    await setTable(col, [[1, 2], [3, 5], [7, 11]]);
    const out = await fc.DenseFeatures([col])({ aaa: [[0, 2], [], [1]] });
    expect(out.shape).toEqual([3, 2]);
    // TF's sqrtn: the sum divided by sqrt(sum of squared weights), in float32.
    const s = Math.fround(Math.sqrt(2));
    expect(Array.from((await out.data()) as Float32Array)).toEqual([Math.fround(8 / s), Math.fround(13 / s), 0, 0, 3, 5]);
  });

  it('mixes numeric, bucketized, embedding and shared-embedding columns, sorted by name', async () => {
    const price = fc.numericColumn('price');
    const bucket = fc.bucketizedColumn(fc.numericColumn('age'), [18, 65]);
    const emb = fc.embeddingColumn(fc.categoricalColumnWithHashBucket('city', 5), 3, { combiner: 'sum' });
    const [sharedA, sharedB] = fc.sharedEmbeddingColumns([fc.categoricalColumnWithIdentity('u', 4), fc.categoricalColumnWithIdentity('v', 4)], 2);
    expect(sharedA.sharedEmbeddingCollectionName).toBe('u_v_shared_embedding');
    expect(sharedA.variable).toBe(sharedB.variable);
    const cityTable = [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12], [13, 14, 15]];
    const uvTable = [[0.5, 1], [1.5, 2], [2.5, 3], [3.5, 4]];
    await setTable(emb, cityTable);
    await setTable(sharedA, uvTable);
    const features = { price: [1.5, -2], age: [10, 70], city: [['x', 'y'], ['x']], u: [[0, 1], [3]], v: [[2], []] };
    const layer = fc.DenseFeatures([price, sharedB, emb, bucket, sharedA]);
    expect(layer.columns.map((c) => c.name)).toEqual(['age_bucketized', 'city_embedding', 'price', 'u_shared_embedding', 'v_shared_embedding']);
    expect(layer.dimension).toBe(3 + 3 + 1 + 2 + 2);
    const out = await layer(features);
    expect(out.shape).toEqual([2, 11]);

    const h = (s: string) => Number(hb.strings.toHashBucketFast([s], 5)[0]);
    const expected: number[] = [];
    const rowsOf = [
      { age: [1, 0, 0], city: ['x', 'y'], price: 1.5, u: [0, 1], v: [2] },
      { age: [0, 0, 1], city: ['x'], price: -2, u: [3], v: [] as number[] },
    ];
    const mean = (table: number[][], picks: number[]) =>
      picks.length === 0 ? [0, 0] : table[0].map((_, j) => Math.fround(picks.reduce((acc, p) => Math.fround(acc + table[p][j]), 0) / picks.length));
    for (const r of rowsOf) {
      expected.push(...r.age);
      expected.push(...cityTable[0].map((_, j) => r.city.reduce((acc, c) => Math.fround(acc + cityTable[h(c)][j]), 0)));
      expected.push(r.price);
      expected.push(...mean(uvTable, r.u), ...mean(uvTable, r.v));
    }
    expect(Array.from((await out.data()) as Float32Array)).toEqual(expected.map(Math.fround));

    const split = await fc.DenseFeatures([price, emb], { enableConcat: false })(features);
    expect(split.map((t) => t.shape)).toEqual([[2, 3], [2, 1]]);
  });

  it('clips rows to maxNorm, honours trainable, and draws the default table from a truncated normal of stddev 1/sqrt(dim)', async () => {
    const clipped = fc.embeddingColumn(fc.categoricalColumnWithIdentity('a', 2), 2, { maxNorm: 1, combiner: 'sum', trainable: false });
    expect(clipped.variable.trainable).toBe(false);
    await clipped.variable.assign(hb.tensor([[3, 4], [0.3, 0.4]]));
    const out = Array.from((await (await fc.DenseFeatures([clipped])({ a: [0, 1] })).data()) as Float32Array);
    expect(out[0]).toBeCloseTo(0.6, 6);
    expect(out[1]).toBeCloseTo(0.8, 6);
    expect(out.slice(2)).toEqual([Math.fround(0.3), Math.fround(0.4)]);

    const dim = 16;
    const table = (await fc.embeddingColumn(fc.categoricalColumnWithIdentity('b', 4000), dim).variable.read().then((t) => t.data())) as Float32Array;
    const stddev = 1 / Math.sqrt(dim);
    const mean = table.reduce((a, v) => a + v, 0) / table.length;
    const sd = Math.sqrt(table.reduce((a, v) => a + (v - mean) ** 2, 0) / table.length);
    expect(Math.max(...table.map(Math.abs))).toBeLessThanOrEqual(2 * stddev + 1e-6);
    expect(Math.abs(mean)).toBeLessThan(0.01);
    // A normal truncated at 2 sigma keeps 0.88 of its stddev.
    expect(sd / stddev).toBeGreaterThan(0.85);
    expect(sd / stddev).toBeLessThan(0.91);
  });

  it('reads [batch, n] tensor features', async () => {
    const col = fc.numericColumn('x', { shape: [2] });
    const out = await fc.DenseFeatures([col])({ x: hb.tensor([[1, 2], [3, 4]]) });
    expect(Array.from((await out.data()) as Float32Array)).toEqual([1, 2, 3, 4]);
  });

  it('refuses categorical columns, duplicates, unequal rows, and shared columns with different bucket counts', async () => {
    const cat = fc.categoricalColumnWithIdentity('a', 3);
    expect(() => fc.DenseFeatures([cat as never])).toThrow(/categorical column 'a'.*embeddingColumn or indicatorColumn/);
    expect(() => fc.DenseFeatures([fc.numericColumn('p'), fc.numericColumn('p')])).toThrow(/duplicate feature column name 'p'/);
    expect(() => fc.DenseFeatures([])).toThrow(/non-empty/);
    await expect(fc.DenseFeatures([fc.numericColumn('p'), fc.numericColumn('q')])({ p: [1, 2], q: [1] })).rejects.toThrow(/'q' gives 1 rows/);
    expect(() => fc.sharedEmbeddingColumns([cat, fc.categoricalColumnWithIdentity('b', 4)], 2)).toThrow(/same number of buckets.*'b' has 4.*'a' has 3/);
    expect(() => fc.embeddingColumn(cat, 0)).toThrow(/dimension/);
    expect(() => fc.embeddingColumn(cat, 2, { combiner: 'max' as never })).toThrow(/combiner/);
    expect(() => fc.embeddingColumn(fc.numericColumn('x') as never, 2)).toThrow(/categorical column/);
  });
});

describe('embedding options', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const k of Object.keys(process.env)) if (k.startsWith('HB_')) delete process.env[k];
    Object.assign(process.env, saved);
  });
  const cat = (k: string) => fc.categoricalColumnWithIdentity(k, 10);

  it('resolves column > scope > environment > default, with per-column dicts and *', () => {
    expect(fc.embeddingColumn(cat('a'), 2).options).toMatchObject({ embDevice: '', embNumGroups: 1, embUnique: false, embSharded: true, batchSize: undefined });
    process.env.HB_EMB_NUM_GROUPS = '3';
    process.env.HB_EMB_UNIQUE = 'true';
    process.env.HB_EMB_DEVICE = '{"b": "cpu"}';
    const fromEnv = fc.embeddingColumn(cat('a'), 2).options;
    expect(fromEnv).toMatchObject({ embNumGroups: 3, embUnique: true, embDevice: '' });
    expect(fc.embeddingColumn(cat('b'), 2).options.embDevice).toBe('cpu');
    const scoped = hb.scope({ embNumGroups: 5, embDevice: { a: 'cpu', '*': 'cuda:1' } }, () => [fc.embeddingColumn(cat('a'), 2), fc.embeddingColumn(cat('c'), 2), fc.embeddingColumn(cat('a'), 2, { embNumGroups: 7 })]);
    expect(scoped[0].options).toMatchObject({ embNumGroups: 5, embDevice: 'cpu' });
    expect(scoped[1].options.embDevice).toBe('cuda:1');
    expect(scoped[2].options.embNumGroups).toBe(7);
    const nested = hb.scope({ batchSize: 64000 }, () => hb.scope({ embSegmentRank: { other: 1 } }, () => fc.embeddingColumn(cat('a'), 2)));
    expect(nested.options).toMatchObject({ batchSize: 64000, embSegmentRank: 0 });
    expect(fc.embeddingColumn(cat('a'), 2).options.embNumGroups).toBe(3);
  });

  it('refuses unknown names and bad values, naming the option', () => {
    expect(() => fc.embeddingColumn(cat('a'), 2, { embDevcie: 'cpu' } as never)).toThrow(/unknown embedding option 'embDevcie'/);
    expect(() => hb.scope({ embNumGroups: 0 }, () => 1)).toThrow(/embNumGroups must be an integer >= 1/);
    expect(() => hb.scope({ embDtype: { a: 'int8' } } as never, () => 1)).toThrow(/embDtype\['a'\]/);
    process.env.HB_EMB_SEGMENT_RANK = 'x';
    expect(() => fc.embeddingColumn(cat('a'), 2)).toThrow(/HB_EMB_SEGMENT_RANK/);
    delete process.env.HB_EMB_SEGMENT_RANK;
    expect(() => hb.scope({}, async () => 1)).toThrow(/synchronous/);
  });

  it("embDevice 'cpu' keeps the table in host memory; unimplemented placements and dtypes say so", () => {
    expect(fc.embeddingColumn(cat('a'), 2, { embDevice: 'cpu' }).variable.device).toBe('cpu');
    expect(fc.embeddingColumn(cat('a'), 2, { embBackend: 'DYNAMIC', embDevice: 'cpu' }).variable.device).toBe('cpu');
    // A dynamic table's rows go to the device asked for (its index stays in host memory).
    const onGpu = () => fc.embeddingColumn(cat('a'), 2, { embBackend: 'DYNAMIC', embDevice: 'cuda' }).variable;
    if (hb.backend().cuda.deviceCount > 0) expect(onGpu().device).toBe('cuda:0');
    else expect(onGpu).toThrow(/dynamicTableCreate: device.*cuda/i);
    expect(() => fc.embeddingColumn(cat('a'), 2, { embDtype: 'float16' }).variable).toThrow(/float16.*not implemented/);
  });

  it("embSegmentRank combines per segment (HybridBackend's dense_features_test)", async () => {
    const col = fc.embeddingColumn(fc.categoricalColumnWithIdentity('aaa', 3), 2, { embSegmentRank: { aaa: 1 } });
    await col.variable.assign(hb.tensor([[1, 2], [3, 5], [7, 11]]));
    // ids of dense_shape (4, 2, 3): (0,1,1)=2 (0,1,2)=0 (1,1,1)=1 (1,1,2)=1
    const out = await fc.DenseFeatures([col])({ aaa: [[[], [2, 0]], [[], [1, 1]], [], []] } as unknown as hb.data.Features);
    expect(out.shape).toEqual([8, 2]);
    expect(Array.from((await out.data()) as Float32Array)).toEqual([0, 0, 4, 6.5, 0, 0, 3, 5, 0, 0, 0, 0, 0, 0, 0, 0]);
    await expect(fc.DenseFeatures([col])({ aaa: [[1, 2]] })).rejects.toThrow(/invalid embSegmentRank 1/);
  });
});

describe('feature columns on a dataset batch', () => {
  it('turns the real Criteo sample into a DenseFeatures batch', async () => {
    const file = path.resolve(__dirname, 'fixtures/criteo_kaggle_sample.tsv');
    const batches = [];
    for await (const b of hb.data.Dataset.fromCriteoTsv(file).batch(100)) batches.push(b);
    expect(batches).toHaveLength(1);
    const { features } = batches[0];
    const c1 = fc.categoricalColumnWithHashBucket('C1', 1000);
    const ids1 = c1.transform(features);
    const raw = (features.C1 as hb.StringColumn).toArray();
    const present = raw.filter((v): v is string => v !== null && v !== '');
    expect(ids(ids1)).toEqual(Array.from(hb.strings.toHashBucketFast(present, 1000), Number));
    const layer = fc.DenseFeatures([fc.numericColumn('I1'), fc.embeddingColumn(c1, 4), fc.bucketizedColumn(fc.numericColumn('I2'), [0, 10, 100])]);
    const out = await layer(features);
    expect(out.shape).toEqual([100, 4 + 4 + 1]);
  });
});
