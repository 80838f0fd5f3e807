import * as hb from '../lib';
import { EmbeddingTable } from '../lib/embedding/embedding_table';
import { typeName } from './support/reference';

async function values(v: hb.Tensor): Promise<number[]> {
  return Array.from((await v.data()) as Float32Array);
}

describe('hb.variable()', () => {
  test('from nested arrays, typed arrays and tensors, always as a copy', async () => {
    const a = hb.variable([[1, 2], [3, 4]], { name: 'from_rows' });
    expect(a.shape).toEqual([2, 2]);
    expect(a.name).toBe('from_rows');
    expect(a.trainable).toBe(true);
    expect(await a.array()).toEqual([[1, 2], [3, 4]]);

    const source = Float32Array.from([1, 2, 3, 4, 5, 6]);
    const b = hb.variable(source, { shape: [3, 2], trainable: false });
    source[0] = 100; // a variable owns its values
    expect(await values(b)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(b.trainable).toBe(false);

    const t = hb.tensor(Float32Array.from([7, 8]), [1, 2]);
    const c = hb.variable(t);
    t.dispose();
    expect(await c.array()).toEqual([[7, 8]]);

    const read = await c.read();
    expect(read).toBeInstanceOf(hb.Tensor);
    expect(read).not.toBeInstanceOf(hb.Variable);
    expect(typeName(await read.data())).toBe('Float32Array');
  });

  test('assign() replaces the values in place, in queue order', async () => {
    const v = hb.variable(hb.initializers.zeros(), { shape: [2, 2], name: 'assigned' });
    const pending = v.assign(hb.tensor([[1, 2], [3, 4]]));
    const seen = v.read(); // queued after the assign
    await pending;
    expect(await (await seen).array()).toEqual([[1, 2], [3, 4]]);
    await expect(v.assign(hb.tensor([1, 2, 3]))).rejects.toThrow(/assign: value is float32 \[3\] but the variable is float32 \[2, 2\]/);
    await expect(v.assign(hb.tensor(Int32Array.from([1, 2, 3, 4])))).rejects.toThrow(/value is int32/);
    await expect(v.assign([1, 2, 3, 4] as unknown as hb.Tensor)).rejects.toThrow(/assign\(assigned\): value must be a tensor/);
  });

  test('a variable made from a variable still being initialized gets the initialized values', async () => {
    const source = hb.variable(hb.initializers.constant(3), { shape: [500, 64] });
    const copy = hb.variable(source); // the fill of `source` is still queued
    expect(await values(copy)).toEqual(new Array(500 * 64).fill(3));
  });

  test('names are made unique as TensorFlow does', () => {
    const first = hb.variable([[1]], { name: 'dup' });
    const second = hb.variable([[1]], { name: 'dup' });
    expect(first.name).toBe('dup');
    expect(second.name).toBe('dup_1');
    expect(hb.variable([[1]]).name).toMatch(/^Variable(_\d+)?$/);
  });

  test('bad input gives an Error naming the variable and argument', () => {
    expect(() => hb.variable(hb.initializers.zeros(), { name: 'no_shape' })).toThrow(/variable\(no_shape\): an initializer needs options\.shape/);
    expect(() => hb.variable([[1, 2], [3]], { name: 'ragged' })).toThrow(/variable\(ragged\): rows have different lengths \(row 0 has 2, row 1 has 1\)/);
    expect(() => hb.variable(Float32Array.from([1, 2, 3]), { shape: [2, 2] })).toThrow(/shape \[2, 2\] holds 4 values but values has 3/);
    expect(() => hb.variable('x' as unknown as number[])).toThrow(/initialValue must be an initializer, a tensor, a typed array or an array/);
    expect(() => hb.variable([[1]], { name: '' })).toThrow(/options\.name must be a non-empty string/);
    expect(() => hb.variable(Float32Array.from([1]), { dtype: 'int64' })).toThrow(/options\.dtype 'int64' does not match the float32 values/);
    const gone = hb.tensor([1, 2]);
    gone.dispose();
    expect(() => hb.variable(gone)).toThrow(/initialValue has been disposed/);
  });
});

describe('hb.initializers', () => {
  test('constant, zeros and ones', async () => {
    expect(await values(hb.variable(hb.initializers.constant(2.5), { shape: [2, 3] }))).toEqual(new Array(6).fill(2.5));
    expect(await values(hb.variable(hb.initializers.zeros(), { shape: [4] }))).toEqual(new Array(4).fill(0));
    expect(await values(hb.variable(hb.initializers.ones(), { shape: [1, 2] }))).toEqual([1, 1]);
  });

  test("constant of an array holds the variable's values (TF's constant_initializer): pretrained tables, whole or sharded", async () => {
    expect(await values(hb.variable(hb.initializers.constant([[1, 2, 3], [4, 5, 6]]), { shape: [2, 3] }))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await values(hb.variable(hb.initializers.constant(Float64Array.from([0.5, -1])), { shape: [2] }))).toEqual([0.5, -1]);
    // A pretrained table through an embedding column: row x is what was given for x.
    const pretrained = Float32Array.from({ length: 5 * 2 }, (_, i) => i / 10);
    const column = hb.featureColumn.embeddingColumn(hb.featureColumn.categoricalColumnWithIdentity('pretrained', 5), 2, { initializer: hb.initializers.constant(pretrained) });
    expect(await values(column.variable)).toEqual(Array.from(pretrained));
    // A shard of it (rank r of W holds rows r, r + W, ...) holds those rows of the values.
    const shard = new EmbeddingTable({ name: 'pretrained_shard', rows: 5, dim: 2, dtype: 'float32', initializer: hb.initializers.constant(pretrained), trainable: true }, { kind: 'sharded', device: 'cpu', worldSize: 2, rank: 1 });
    expect(await values(shard.variable)).toEqual(Array.from(pretrained.subarray(2, 4)).concat(Array.from(pretrained.subarray(6, 8))));
    expect(() => hb.variable(hb.initializers.constant([1, 2, 3]), { shape: [2, 2] })).toThrow(/constant: 3 values do not fill a variable of shape \[2, 2\] \(4 elements\)/);
    expect(() => hb.initializers.constant([[1, 2], [3]])).toThrow(/value\[1\] has 1 items where its siblings have 2/);
    expect(() => hb.initializers.constant([1, 'x' as never])).toThrow(/value\[1\] must be a finite number, got "x" \(a string\)/);
    expect(() => hb.initializers.constant(Float32Array.of(1, NaN))).toThrow(/value\[1\] must be a finite number, got NaN/);
    expect(() => hb.initializers.constant(Int32Array.of(1))).toThrow(/a Float32Array\/Float64Array, got a Int32Array of length 1/);
  });

  test('randomUniform stays in [minval, maxval), is deterministic for a seed and looks uniform', async () => {
    const make = (seed: number) => hb.variable(hb.initializers.randomUniform({ minval: -2, maxval: 3, seed }), { shape: [1000, 100] });
    const a = await values(make(7));
    const b = await values(make(7));
    const c = await values(make(8));
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    expect(Math.min(...a)).toBeGreaterThanOrEqual(-2);
    expect(Math.max(...a)).toBeLessThan(3);
    const mean = a.reduce((s, x) => s + x, 0) / a.length;
    expect(mean).toBeCloseTo(0.5, 1.5); // (-2 + 3) / 2, 100k draws
    const belowZero = a.filter((x) => x < 0).length / a.length;
    expect(belowZero).toBeCloseTo(0.4, 1.5);
  });

  test('truncatedNormal: within two stddev of the mean, with the truncated distribution\'s spread', async () => {
    const v = await values(hb.variable(hb.initializers.truncatedNormal({ mean: 1, stddev: 0.5, seed: 3 }), { shape: [100000] }));
    expect(Math.min(...v)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...v)).toBeLessThanOrEqual(2);
    const mean = v.reduce((s, x) => s + x, 0) / v.length;
    const std = Math.sqrt(v.reduce((s, x) => s + (x - mean) ** 2, 0) / v.length);
    expect(mean).toBeCloseTo(1, 2);
    // A standard normal truncated to [-2, 2] has stddev 0.8796.
    expect(std).toBeCloseTo(0.5 * 0.8796, 2);
    // Its mass within 0.5, 1 and 1.5 standard deviations: (Phi(k) - Phi(-k)) / (Phi(2) - Phi(-2)).
    const within = (k: number) => v.filter((x) => Math.abs(x - 1) < 0.5 * k).length / v.length;
    expect(within(0.5)).toBeCloseTo(0.401179, 2);
    expect(within(1)).toBeCloseTo(0.715233, 2);
    expect(within(1.5)).toBeCloseTo(0.907686, 2);
    expect(v.filter((x) => x < 1).length / v.length).toBeCloseTo(0.5, 2);
  });

  test('initial values do not depend on how the fill is cut into chunks: a table\'s first rows equal a table of those rows', async () => {
    // 1M elements: many chunks of the thread pool; the first 1000 rows again as a tensor of their own.
    const init = hb.initializers.truncatedNormal({ stddev: 0.1, seed: 11 });
    const whole = await values(hb.variable(init, { shape: [10000, 100] }));
    const head = await values(hb.variable(init, { shape: [1000, 100] }));
    expect(head).toEqual(whole.slice(0, head.length));
  });

  test('glorotUniform uses TensorFlow\'s limit sqrt(6 / (fanIn + fanOut))', async () => {
    const v = await values(hb.variable(hb.initializers.glorotUniform({ seed: 1 }), { shape: [200, 100] }));
    const limit = Math.sqrt(6 / 300);
    expect(Math.max(...v.map(Math.abs))).toBeLessThanOrEqual(Math.fround(limit));
    expect(Math.max(...v.map(Math.abs))).toBeGreaterThan(limit * 0.99);
  });

  test('bad options give an Error naming them', () => {
    expect(() => hb.initializers.truncatedNormal({ stddev: -1 })).toThrow(/truncatedNormal: stddev must be >= 0/);
    expect(() => hb.initializers.truncatedNormal({ mean: NaN })).toThrow(/truncatedNormal: mean must be a finite number/);
    expect(() => hb.initializers.randomUniform({ minval: 2, maxval: 1 })).toThrow(/randomUniform: maxval \(1\) must be >= minval \(2\)/);
    expect(() => hb.initializers.randomUniform({ seed: -1 })).toThrow(/randomUniform: seed must be a non-negative integer/);
    expect(() => hb.initializers.constant(Infinity)).toThrow(/constant: value must be a finite number/);
    expect(() => hb.variable(hb.initializers.ones(), { shape: [2], dtype: 'int32' })).toThrow(/initializers make float32 values/);
  });
});
