// EmbeddingTable: one object owning a table's spec, placement, storage and optimizer
// slots; lookups eager and in a graph, gradients, native row-range save / load, stats.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { EmbeddingTable } from '../lib/embedding/embedding_table';
import { localPlacement, ownerOf, shardRows } from '../lib/embedding/placement';
import { readCheckpointHeader, saveCheckpoint, verifyCheckpoint } from '../lib/io/checkpoint_file';
import { pinDevice } from './support/devices';

pinDevice('cpu');

const spec = (name: string, rows = 6, dim = 3) => ({
  name,
  rows,
  dim,
  dtype: 'float32' as const,
  initializer: hb.initializers.truncatedNormal({ stddev: 0.5, seed: 7 }),
  trainable: true,
});
const ids = hb.ragged(BigInt64Array.from([0n, 5n, 5n, 2n]), Int32Array.from([0, 3, 4]));

describe('EmbeddingTable', () => {
  test('is made on first use on its placement, with its checkpoint name, and reports what it holds', async () => {
    const table = new EmbeddingTable(spec('user_embedding/embedding_weights'), localPlacement('cpu'));
    expect(table.isMade).toBe(false);
    expect(table.stats()).toEqual({ name: 'user_embedding/embedding_weights', rows: 6, localRows: 6, dim: 3, dtype: 'float32', device: undefined, placement: 'local', bytes: 72, slots: [] });
    const rows = table.variable;
    expect(rows.name).toBe('user_embedding/embedding_weights');
    expect(rows.shape).toEqual([6, 3]);
    expect(rows.device).toBe('cpu');
    expect(table.stats().device).toBe('cpu');
    // Seeded: the same initial rows every time.
    const again = new EmbeddingTable(spec('again'), localPlacement(''));
    expect(Array.from((await again.variable.data()) as Float32Array)).toEqual(Array.from((await rows.data()) as Float32Array));
  });

  test('looks up as tf.nn.safe_embedding_lookup_sparse does', async () => {
    const table = new EmbeddingTable(spec('lookup'), localPlacement('cpu'));
    const got = await table.lookup(ids, { combiner: 'sqrtn' });
    const want = await hb.nn.embeddingLookupSparse(table.variable, ids, { combiner: 'sqrtn' });
    expect(Array.from((await got.data()) as Float32Array)).toEqual(Array.from((await want.data()) as Float32Array));
    await expect(table.lookup(hb.ragged(BigInt64Array.from([6n]), Int32Array.from([0, 1])), { combiner: 'sum', name: 'user' })).rejects.toThrow(/embeddingLookupSparse\(user\): ids\.values\[0\] = 6 is out of range/);
  });

  test("applies sparse gradients as one update, slots beside the rows, named as TF's", async () => {
    const a = new EmbeddingTable(spec('a_weights'), localPlacement('cpu'));
    const b = new EmbeddingTable(spec('b_weights'), localPlacement('cpu'));
    const g1 = await hb.nn.embeddingLookupSparseGrad(a.variable, ids, hb.tensor([[1, 2, 3], [4, 5, 6]]), { combiner: 'mean' });
    const g2 = new hb.IndexedSlices(hb.tensor([[0.5, 0.5, 0.5]]), BigInt64Array.from([5n]));
    const optA = new hb.train.AdamOptimizer({ learningRate: 0.1 });
    await a.applyGradients(optA, [g1, g2]);
    // The same two slices stacked by hand, in one applyGradients.
    const values = Float32Array.from([...((await g1.values.data()) as Float32Array), 0.5, 0.5, 0.5]);
    const stacked = new hb.IndexedSlices(hb.tensor(values, [g1.indices.length + 1, 3]), BigInt64Array.from([...g1.indices, 5n]));
    await new hb.train.AdamOptimizer({ learningRate: 0.1 }).applyGradients([[stacked, b.variable]]);
    expect(Array.from((await a.variable.data()) as Float32Array)).toEqual(Array.from((await b.variable.data()) as Float32Array));
    expect([...a.slots.keys()]).toEqual(['a_weights/Adam', 'a_weights/Adam_1']);
    expect(optA.getSlot(a.variable, 'm')).toBe(a.slots.get('a_weights/Adam'));
    expect(a.stats().slots).toEqual([{ name: 'a_weights/Adam', bytes: 72 }, { name: 'a_weights/Adam_1', bytes: 72 }]);
    await expect(a.applyGradients(optA, [])).rejects.toThrow(/applyGradients takes a non-empty array of hb\.IndexedSlices/);
  });

  test('stacks int32, int64 and mixed indices alike', async () => {
    const slices = (kind: 'int32' | 'int64') => {
      const make = (xs: number[]) => (kind === 'int32' ? Int32Array.from(xs) : BigInt64Array.from(xs, (x) => BigInt(x)));
      return [new hb.IndexedSlices(hb.tensor([[1, 2, 3], [4, 5, 6]]), make([1, 4])), new hb.IndexedSlices(hb.tensor([[0.5, 0.5, 0.5]]), make([4]))];
    };
    const updated = async (name: string, grads: InstanceType<typeof hb.IndexedSlices>[]) => {
      const table = new EmbeddingTable(spec(name), localPlacement('cpu'));
      await table.applyGradients(new hb.train.AdagradOptimizer({ learningRate: 0.1 }), grads);
      return Array.from((await table.variable.data()) as Float32Array);
    };
    const [i32a, i32b] = slices('int32');
    const [i64a, i64b] = slices('int64');
    const want = await updated('wide', [i64a, i64b]);
    expect(await updated('narrow', [i32a, i32b])).toEqual(want);
    expect(await updated('mixed', [i32a, i64b])).toEqual(want);
  });

  test('saves and loads row ranges natively, slots included', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-table-'));
    try {
      const table = new EmbeddingTable(spec('saved', 8, 2), localPlacement('cpu'));
      await table.applyGradients(new hb.train.AdagradOptimizer({ learningRate: 0.5 }), [new hb.IndexedSlices(hb.tensor([[1, 1], [2, 2]]), BigInt64Array.from([3n, 4n]))]);
      const saved = table.save([2, 6]);
      expect(saved.map((t) => [t.name, t.shape])).toEqual([['saved', [4, 2]], ['saved/Adagrad', [4, 2]]]);
      const info = await saveCheckpoint(dir, 1, saved);
      const header = await verifyCheckpoint(info.path);
      const fresh = new EmbeddingTable({ ...spec('saved', 8, 2), initializer: hb.initializers.zeros() }, localPlacement('cpu'));
      fresh.createSlot('saved/Adagrad', 0, false);
      expect(await fresh.load(info.path, header, [2, 6])).toEqual(['saved', 'saved/Adagrad']);
      const want = (await table.variable.data()) as Float32Array;
      const got = (await fresh.variable.data()) as Float32Array;
      expect(Array.from(got.slice(4, 12))).toEqual(Array.from(want.slice(4, 12)));
      expect(Array.from(got.slice(0, 4))).toEqual([0, 0, 0, 0]); // rows outside the range stay as they were
      const slot = (await fresh.slots.get('saved/Adagrad')!.data()) as Float32Array;
      // Adagrad's accumulator: 0.1 + g^2 on the rows updated (3 and 4), 0.1 on the others.
      expect(Array.from(slot.slice(4, 12))).toEqual([0.1, 0.1, 1.1, 1.1, 4.1, 4.1, 0.1, 0.1].map(Math.fround));
      expect(Array.from(slot.slice(0, 4))).toEqual([0, 0, 0, 0]);
      expect(() => table.save([5, 9])).toThrow(/save: the row range must be \[begin, end\] within \[0, 8\], got \[5,9\]/);
      await expect(fresh.load(info.path, await readCheckpointHeader(info.path), [0, 8])).rejects.toThrow(/'saved' has shape \[4,2\], neither the model's \[8,2\] nor its rows 0\.\.8/);
      // Rows out of a whole-table checkpoint (what a shard reads after a world-size change).
      const whole = await saveCheckpoint(dir, 2, table.save());
      const part = new EmbeddingTable({ ...spec('saved', 8, 2), initializer: hb.initializers.zeros() }, localPlacement('cpu'));
      expect(await part.load(whole.path, await verifyCheckpoint(whole.path), [5, 7])).toEqual(['saved']);
      const partRows = (await part.variable.data()) as Float32Array;
      expect(Array.from(partRows.slice(10, 14))).toEqual(Array.from(want.slice(10, 14)));
      expect(Array.from(partRows.slice(0, 10)).every((x) => x === 0)).toBe(true);
      // A slot of the wrong shape fails before anything is read: the rows stay as they were.
      const mismatched = new EmbeddingTable({ ...spec('saved', 8, 2), initializer: hb.initializers.zeros() }, localPlacement('cpu'));
      mismatched.createSlot('saved/Adagrad', 0, true);
      await expect(mismatched.load(whole.path, await verifyCheckpoint(whole.path))).rejects.toThrow(/'saved\/Adagrad' has shape \[8,2\], neither the model's \[8\]/);
      expect(Array.from((await mismatched.variable.data()) as Float32Array).every((x) => x === 0)).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('in a modelFn the lookup is a chain of graph ops on the same rows', async () => {
    const column = hb.featureColumn.embeddingColumn(hb.featureColumn.categoricalColumnWithIdentity('item', 6), 3, { combiner: 'mean' });
    expect(column.embeddingTable).toBeInstanceOf(EmbeddingTable);
    expect(column.embeddingTable.variable).toBe(column.variable);
    const eager = await hb.featureColumn.DenseFeatures([column])({ item: ids });
    const estimator = new hb.estimator.Estimator({
      modelFn: (features, _labels, mode) => hb.estimator.EstimatorSpec({ mode, predictions: { emb: hb.featureColumn.DenseFeatures([column])(features) as hb.SymbolicTensor } }),
      config: new hb.estimator.RunConfig({ device: 'cpu', log: () => undefined }),
    });
    const out: Float32Array[] = [];
    for await (const p of estimator.predict(() => [{ features: { item: ids } }], { yieldSingleExamples: false })) out.push(p.emb as Float32Array);
    expect(Array.from(out[0])).toEqual(Array.from((await eager.data()) as Float32Array));
  });

  test("a shard holds rank r's rows of the whole table (rows x with x floormod W = r), with the values they have there", async () => {
    const whole = (await new EmbeddingTable(spec('whole', 10, 3), localPlacement('cpu')).variable.data()) as Float32Array;
    for (const rank of [0, 1, 2]) {
      const shard = new EmbeddingTable(spec('whole', 10, 3), { kind: 'sharded', device: 'cpu', worldSize: 3, rank });
      expect(shard.localRows).toBe(shardRows(10, 3, rank));
      expect(shard.variable.shape).toEqual([shardRows(10, 3, rank), 3]);
      const values = (await shard.variable.data()) as Float32Array;
      for (let j = 0; j < shard.localRows; j++) {
        expect(Array.from(values.subarray(j * 3, j * 3 + 3))).toEqual(Array.from(whole.subarray((j * 3 + rank) * 3, (j * 3 + rank) * 3 + 3)));
      }
      expect(shard.stats()).toMatchObject({ rows: 10, localRows: shardRows(10, 3, rank), placement: 'sharded', bytes: shardRows(10, 3, rank) * 12 });
      const slot = shard.createSlot('whole/Adagrad', 0.1, false);
      expect(slot.shape).toEqual([shard.localRows, 3]);
      // An eager lookup would need every rank: refused, saying where it works.
      expect(() => shard.lookup(ids, { combiner: 'sum' })).toThrow(/is sharded over 3 ranks: an eager lookup would need every rank to take part; use it inside a modelFn/);
    }
    // glorot's limit comes from the whole table's shape, not the shard's.
    const glorot = { ...spec('g', 10, 3), initializer: hb.initializers.glorotUniform({ seed: 3 }) };
    const glorotWhole = (await new EmbeddingTable(glorot, localPlacement('cpu')).variable.data()) as Float32Array;
    const glorotShard = (await new EmbeddingTable(glorot, { kind: 'sharded', device: 'cpu', worldSize: 2, rank: 1 }).variable.data()) as Float32Array;
    expect(Array.from(glorotShard.subarray(0, 3))).toEqual(Array.from(glorotWhole.subarray(3, 6)));
  });

  test('bad specs and placements are refused', () => {
    expect(() => new EmbeddingTable(spec('t', 2), { kind: 'sharded', device: 'cpu', worldSize: 4, rank: 3 })).toThrow(/2 rows cannot be sharded over 4 ranks/);
    expect(() => new EmbeddingTable({ ...spec('t'), dtype: 'float16' as never }, localPlacement('cpu'))).toThrow(/dtype 'float16' is not implemented yet/);
    expect(() => new EmbeddingTable({ ...spec('t'), rows: 0 }, localPlacement('cpu'))).toThrow(/rows must be an integer >= 1/);
  });
});

describe("HybridBackend's sharding rule", () => {
  test('owner = id floormod W; rank r holds rows floordiv W, plus one on the first rows mod W ranks', () => {
    expect([0n, 1n, 2n, 3n, -1n, -4n, 2n ** 62n].map((id) => ownerOf(id, 3))).toEqual([0, 1, 2, 0, 2, 2, Number((2n ** 62n) % 3n)]);
    expect([0, 1, 2].map((r) => shardRows(10, 3, r))).toEqual([4, 3, 3]);
    expect([0, 1, 2, 3].map((r) => shardRows(2, 4, r))).toEqual([1, 1, 0, 0]);
    expect(() => shardRows(10, 3, 3)).toThrow(/rank must be in \[0, 3\)/);
    expect(() => shardRows(10, 0, 0)).toThrow(/worldSize must be an integer >= 1/);
  });
});
