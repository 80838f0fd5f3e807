// The sharded lookup's graph in a world of one process: the same code a job runs, its
// exchanges passing their inputs through (the local case), gives the local lookup's bits,
// forward and after training steps, per column and coalesced. Then the kernels the
// sharded path adds, eagerly: the coalesced packing, shard_ids, the step's exchange of
// flags, re-sharding a checkpoint's rows, with their errors. Across processes:
// test/sharded_training.test.ts.
import * as hb from '../lib';
import { coalescedShardedLookup } from '../lib/embedding/coalesced_lookup';
import { lookupChain } from '../lib/embedding/lookup_chain';
import { shardedLookupChain } from '../lib/embedding/sharded_lookup_chain';
import { CompiledStep } from '../lib/graph/compiled_step';
import { Graph, SymbolicTensor, VariableStore } from '../lib/graph/graph';
import { raggedFeed } from '../lib/graph/ragged_feed';
import { native, NativeTensorHandle } from '../lib/native';
import { randomSource } from './support/reference';
import { pinDevice } from './support/devices';

pinDevice('cpu');

const m = hb.math;
const bits = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex');

function randomRagged(random: () => number, rows: number, tableRows: number, weighted: boolean) {
  const splits = [0];
  const ids: bigint[] = [];
  const weights: number[] = [];
  for (let r = 0; r < rows; r++) {
    const n = Math.floor(random() * 4);
    for (let k = 0; k < n; k++) {
      ids.push(random() < 0.1 ? -1n : BigInt(Math.floor(random() * random() * tableRows)));
      weights.push(0.1 + random());
    }
    splits.push(ids.length);
  }
  return hb.ragged(BigInt64Array.from(ids), Int32Array.from(splits), weighted ? Float32Array.from(weights) : undefined);
}

describe('the sharded lookup in a world of one gives the local lookup bits', () => {
  const columns = [
    { rows: 31, dim: 4, combiner: 'mean' as const, weighted: false, maxNorm: 0.6 },
    { rows: 17, dim: 3, combiner: 'sqrtn' as const, weighted: true, maxNorm: undefined },
  ];
  test.each(['per column', 'coalesced'])('%s: outputs, and tables and slots after 3 Adagrad steps', async (how) => {
    const random = randomSource(5);
    const initial = columns.map((c) => Float32Array.from({ length: c.rows * c.dim }, () => random() - 0.5));
    const batches = [0, 1, 2].map(() => Object.fromEntries(columns.map((c, i) => [`f${i}`, randomRagged(random, 16, c.rows, c.weighted)])));
    const run = async (sharded: boolean) => {
      const tables = columns.map((c, i) => hb.variable(initial[i], { shape: [c.rows, c.dim] }));
      const graph = new Graph(new VariableStore(), 'train', 'cpu');
      const feeds = columns.map((_, i) => raggedFeed(graph, `f${i}`, (b) => b.features[`f${i}`] as hb.Ragged, batches[0][`f${i}`]));
      const lookups = columns.map((c, i) => ({ shard: graph.variableTensor(tables[i]), ids: feeds[i], combiner: c.combiner, maxNorm: c.maxNorm, name: `f${i}`, rows: c.rows, dim: c.dim }));
      let outputs: SymbolicTensor[];
      if (!sharded) outputs = lookups.map((l) => lookupChain(l.shard, l.ids, l));
      else if (how === 'coalesced') outputs = coalescedShardedLookup(lookups, { worldSize: 1, rank: 0, wire: 'float32', name: 'group' });
      else outputs = lookups.map((l) => shardedLookupChain(l.shard, l.ids, { ...l, worldSize: 1, rank: 0, wire: 'float32' }));
      const loss = m.reduceMean(m.square(m.addConstant(m.concat(outputs, 1), -0.3)));
      const optimizer = new hb.train.AdagradOptimizer({ learningRate: 0.3 });
      const trainOp = optimizer.minimize(loss);
      const step = new CompiledStep(graph, [loss, ...outputs], trainOp.nodes);
      const seen: string[] = [];
      for (const features of batches) {
        const out = await step.run(await step.prepare({ features }));
        seen.push(...(out.outputs as Float32Array[]).map(bits));
      }
      const state: string[] = [];
      for (const t of tables) {
        state.push(bits((await t.data()) as Float32Array));
        for (const slot of optimizer.slotVariables(t)) state.push(bits((await slot.data()) as Float32Array));
      }
      return { seen, state, kernels: step.compiled.spec.steps.map((s) => s.kernel) };
    };
    const local = await run(false);
    const sharded = await run(true);
    expect(sharded.kernels).toContain('alltoallv');
    expect(sharded.kernels).toContain('shard_ids');
    if (how === 'coalesced') {
      // One exchange of ids and one of rows for the two columns, and one back.
      expect(sharded.kernels.filter((k) => k === 'alltoallv')).toHaveLength(3);
      expect(sharded.kernels).toEqual(expect.arrayContaining(['pack_by_owner', 'unpack_by_source', 'pack_rows', 'unpack_rows']));
    } else {
      expect(sharded.kernels.filter((k) => k === 'alltoallv')).toHaveLength(6);
    }
    expect(sharded.seen).toEqual(local.seen);
    expect(sharded.state).toEqual(local.state);
    expect(local.state[0]).not.toEqual(bits(initial[0]));
  });
});

test('a coalesced group whose column the loss does not read is refused (a zero gradient is not a no-op for every optimizer)', () => {
  const graph = new Graph(new VariableStore(), 'train', 'cpu');
  const example = hb.ragged(BigInt64Array.from([1n, 2n]), Int32Array.from([0, 1, 2]));
  const lookups = [0, 1].map((i) => ({
    shard: graph.variableTensor(hb.variable(new Float32Array(20), { shape: [10, 2] })),
    ids: raggedFeed(graph, `g${i}`, (b) => b.features[`g${i}`] as hb.Ragged, example),
    combiner: 'sum' as const,
    name: `g${i}`,
    rows: 10,
    dim: 2,
  }));
  const [used] = coalescedShardedLookup(lookups, { worldSize: 1, rank: 0, wire: 'float32', name: 'group' });
  const loss = m.reduceMean(m.square(used));
  expect(() => new hb.train.AdagradOptimizer({ learningRate: 0.1 }).minimize(loss)).toThrow(/the loss does not depend on 'group\/unpack_rows:1'; every column of a coalesced group must feed the loss/);
});

const OP = 'sharded/op';
const host = (values: Float32Array | Int32Array | BigInt64Array, shape?: number[]) => hb.tensor(values, shape ?? [values.length], undefined, { device: 'cpu' }).handle;
async function values(h: NativeTensorHandle | null) {
  return Array.from((await new hb.Tensor(h!).data()) as ArrayLike<number | bigint>);
}

describe('the coalesced packing', () => {
  test('ids and rows of two columns for 3 ranks round-trip, laid out column by column per rank', async () => {
    // Column 0 sends [1, 2] to rank 0, nothing to 1, [7] to 2; column 1 (int32 ids) [4] to 1.
    const [packed, send, layout] = await native.kernelRun(
      'pack_by_owner',
      [host(BigInt64Array.from([1n, 2n, 7n])), host(Int32Array.from([2, 0, 1])), host(Int32Array.from([4])), host(Int32Array.from([0, 1, 0]))],
      [{ dtype: 'int64' }, { dtype: 'int32', shape: [3] }, { dtype: 'int32', shape: [2, 3] }],
      {},
      OP,
    );
    expect(await values(packed)).toEqual([2n, 0n, 1n, 2n, 0n, 1n, 4n, 1n, 0n, 7n]);
    expect(await values(send)).toEqual([4, 3, 3]);
    expect(await values(layout)).toEqual([2, 0, 1, 0, 1, 0]);
    // As if it all came back from 3 sources: each column's ids in source order.
    const [byColumn, ids0, ids1] = await native.kernelRun('unpack_by_source', [packed!, send!], [{ dtype: 'int32', shape: [2, 3] }, { dtype: 'int64' }, { dtype: 'int64' }], {}, OP);
    expect(await values(byColumn)).toEqual([2, 0, 1, 0, 1, 0]);
    expect(await values(ids0)).toEqual([1n, 2n, 7n]);
    expect(await values(ids1)).toEqual([4n]);
    // Rows of width 2 and 1 for that layout, packed per rank and back.
    const rows0 = host(Float32Array.from([1, 2, 3, 4, 5, 6]), [3, 2]);
    const rows1 = host(Float32Array.from([9]), [1, 1]);
    const [flat, floats] = await native.kernelRun('pack_rows', [byColumn!, rows0, rows1], [{ dtype: 'float32' }, { dtype: 'int32', shape: [3] }], {}, OP);
    expect(await values(flat)).toEqual([1, 2, 3, 4, 9, 5, 6]);
    expect(await values(floats)).toEqual([4, 1, 2]);
    const [back0, back1] = await native.kernelRun('unpack_rows', [flat!, byColumn!], [{ dtype: 'float32' }, { dtype: 'float32' }], { dims: [2, 1] }, OP);
    expect(await values(back0)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await values(back1)).toEqual([9]);
  });

  test('a corrupt message from a peer is an Error (HB_ERR_CORRUPT), never a wild read', async () => {
    const unpack = (received: bigint[], counts: number[]) =>
      native.kernelRun('unpack_by_source', [host(BigInt64Array.from(received)), host(Int32Array.from(counts))], [{ dtype: 'int32', shape: [1, counts.length] }, { dtype: 'int64' }], {}, OP);
    await expect(unpack([5n, 1n], [2])).rejects.toMatchObject({ code: 'HB_ERR_CORRUPT', message: expect.stringMatching(/rank 0 sent a bad count 5/) });
    await expect(unpack([3n, 1n, 2n], [3])).rejects.toMatchObject({ code: 'HB_ERR_CORRUPT', message: expect.stringMatching(/counts add up to 3 ids but it sent 2/) });
    await expect(unpack([0n], [2])).rejects.toMatchObject({ code: 'HB_ERR_CORRUPT', message: expect.stringMatching(/exceed what was received/) });
    await expect(unpack([], [0])).rejects.toMatchObject({ code: 'HB_ERR_CORRUPT', message: expect.stringMatching(/fewer than the 1 counts/) });
    const layout = host(Int32Array.from([2]), [1, 1]);
    await expect(native.kernelRun('unpack_rows', [host(Float32Array.from([1, 2, 3])), layout], [{ dtype: 'float32' }], { dims: [2] }, OP)).rejects.toMatchObject({
      code: 'HB_ERR_CORRUPT',
      message: expect.stringMatching(/the layout describes more values than the 3 that arrived/),
    });
    await expect(native.kernelRun('pack_by_owner', [host(BigInt64Array.from([1n])), host(Int32Array.from([2]))], [{ dtype: 'int64' }, { dtype: 'int32', shape: [1] }, { dtype: 'int32', shape: [1, 1] }], {}, OP)).rejects.toThrow(/column 0's sizes add up to 2 but it has 1 ids/);
  });
});

describe('shard_ids', () => {
  test("turns ids this rank owns into rows of its shard; an id outside the table or another rank's is an Error", async () => {
    const [local] = await native.kernelRun('shard_ids', [host(BigInt64Array.from([1n, 4n, 10n]))], [{ dtype: 'int64' }], { worldSize: 3, rank: 1, rows: 11 }, OP);
    expect(await values(local)).toEqual([0n, 1n, 3n]);
    await expect(native.kernelRun('shard_ids', [host(BigInt64Array.from([13n]))], [{ dtype: 'int64' }], { worldSize: 3, rank: 1, rows: 11 }, OP)).rejects.toMatchObject({
      code: 'HB_ERR_OUT_OF_RANGE',
      message: expect.stringMatching(/id 13 is outside the table's 11 rows/),
    });
    await expect(native.kernelRun('shard_ids', [host(BigInt64Array.from([2n]))], [{ dtype: 'int64' }], { worldSize: 3, rank: 1, rows: 11 }, OP)).rejects.toThrow(/id 2 reached rank 1 but belongs to rank 2/);
  });
});

describe("a step's exchanges in a world of one", () => {
  test('step_sync passes its flags through, and a stop flag ends the step (HB_ERR_PEER_STOPPED)', async () => {
    const [agreed] = await native.kernelRun('step_sync', [host(Int32Array.from([0, 1, 0, 0, 1]))], [{ dtype: 'int32', shape: [5] }], { worldSize: 1 }, OP);
    expect(await values(agreed)).toEqual([0, 1, 0, 0, 1]);
    await expect(native.kernelRun('step_sync', [host(Int32Array.from([3, 0, 0, 0, 0]))], [{ dtype: 'int32', shape: [5] }], { worldSize: 1 }, OP)).rejects.toMatchObject({
      code: 'HB_ERR_PEER_STOPPED',
      message: expect.stringMatching(/the step did not run: the input of rank 2 ended/),
    });
  });
  test('a step compiled for a job refuses to run without one; counts that do not add up are refused', async () => {
    await expect(native.kernelRun('allgather', [host(Float32Array.from([1]))], [{ dtype: 'float32' }], { worldSize: 2 }, OP)).rejects.toMatchObject({
      code: 'HB_ERR_COMM',
      message: expect.stringMatching(/compiled for a world of 2 processes, but hb.distribute is not initialized/),
    });
    await expect(native.kernelRun('alltoallv', [host(Float32Array.from([1, 2])), host(Int32Array.from([3]))], [{ dtype: 'float32' }, { dtype: 'int32', shape: [1] }], { worldSize: 1, wire: 'float32' }, OP)).rejects.toThrow(/sendCounts add up to 3 rows/);
    const [scaled] = await native.kernelRun('alltoallv', [host(Float32Array.from([1, 2])), host(Int32Array.from([2]))], [{ dtype: 'float32' }, { dtype: 'int32', shape: [1] }], { worldSize: 1, wire: 'float32', scale: 0.5 }, OP);
    expect(await values(scaled)).toEqual([0.5, 1]);
    const [a, b] = await native.kernelRun('allreduce', [host(Float32Array.from([1, 2])), host(Float32Array.from([3]))], [[2], [1]], { worldSize: 1, op: 'mean' }, OP);
    expect([await values(a), await values(b)]).toEqual([[1, 2], [3]]);
  });
});

describe('reshard_rows', () => {
  // Rows of a table of 10 rows saved by W ranks, read into rank r of W': every target
  // row gets the value the whole table has there.
  test.each([[1, 3], [3, 1], [2, 3], [3, 2], [4, 4]])('a checkpoint of %i ranks restores into %i ranks', async (W, V) => {
    const rows = 10;
    const whole = Array.from({ length: rows }, (_, g) => [g, -g]);
    for (let r = 0; r < V; r++) {
      const mine = Math.floor(rows / V) + (r < rows % V ? 1 : 0);
      const target = host(new Float32Array(mine * 2).fill(NaN), [mine, 2]);
      for (let s = 0; s < W; s++) {
        const saved = whole.filter((_, g) => g % W === s).flat();
        // In two pieces, as big shards are read.
        const half = Math.ceil(saved.length / 4) * 2;
        for (const [from, part] of [[0, saved.slice(0, half)], [half / 2, saved.slice(half)]] as Array<[number, number[]]>) {
          if (part.length === 0) continue;
          await native.kernelRun('reshard_rows', [host(Float32Array.from(part), [part.length / 2, 2])], [target], { fromWorld: W, fromRank: s, toWorld: V, toRank: r, firstRow: from }, OP);
        }
      }
      expect(await values(target)).toEqual(whole.filter((_, g) => g % V === r).flat());
    }
  });
  test('a saved row beyond the target is refused before anything is written', async () => {
    const target = host(new Float32Array(2), [2, 1]);
    await expect(native.kernelRun('reshard_rows', [host(Float32Array.from([1, 2, 3]), [3, 1])], [target], { fromWorld: 1, fromRank: 0, toWorld: 1, toRank: 0, firstRow: 0 }, OP)).rejects.toMatchObject({
      code: 'HB_ERR_OUT_OF_RANGE',
      message: expect.stringMatching(/saved row 2 does not fit this rank's 2 rows/),
    });
    expect(await values(target)).toEqual([0, 0]);
  });
});

describe('the sharding planner (HybridBackend 1.0 rules)', () => {
  // Imported here: a unit of the planner with no process group.
  const { planTablePlacement } = require('../lib/distribute/sharding_planner') as typeof import('../lib/distribute/sharding_planner');
  test('one process keeps every table local; a job shards big tables and replicates small ones and embSharded: false', () => {
    const world = { size: 4, rank: 2 };
    const table = (rows: number, more: Partial<Parameters<typeof planTablePlacement>[0]> = {}) => planTablePlacement({ rows, device: '', embSharded: true, ...more }, world).kind;
    expect(planTablePlacement({ rows: 1e6, device: 'cpu', embSharded: true }, { size: 1, rank: 0 })).toEqual({ kind: 'local', device: 'cpu', worldSize: 1, rank: 0 });
    expect(table(1000)).toBe('sharded');
    expect(planTablePlacement({ rows: 1000, device: 'cpu', embSharded: true }, world)).toEqual({ kind: 'sharded', device: 'cpu', worldSize: 4, rank: 2 });
    expect(table(4)).toBe('replicated'); // numBuckets <= worldSize
    expect(table(5)).toBe('sharded');
    expect(table(512, { batchSize: 512 })).toBe('replicated'); // numBuckets <= the batchSize hint
    expect(table(513, { batchSize: 512 })).toBe('sharded');
    expect(table(1e6, { embSharded: false })).toBe('replicated');
  });
});
