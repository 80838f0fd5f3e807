// The kernels of sharded training, called directly (kernelRun) in a world of one with
// hostile tensors, counts, layouts and attrs: the step's flags, the exchanges, shard_ids,
// the coalesced packing (whose counts come from peers in a job) and reshard_rows. Most
// cases are well formed but for one thing, so they reach the kernels' own checks.
'use strict';
module.exports = {
  name: 'sharding_kernels',
  async run(r, { hb, attempt }) {
    const { native } = require(require('path').resolve(__dirname, '..', '..', 'dist', 'native.js'));
    const odd = (valid, ...others) => (r.chance(0.8) ? valid : r.pick(others));
    const n = r.size();
    const k = r.int(1, 3);
    const W = 1;
    const tensorOf = async (kind, count, fill) => {
      const made = r.typedArray(kind, count, fill, 0.05);
      const shape = r.chance(0.1) ? r.shape(count) : undefined;
      return (await attempt('tensor', () => hb.tensor(made.array, shape, undefined, { device: 'cpu' })))?.handle ?? r.pick([null, undefined, 3, made.array]);
    };
    const small = () => odd(r.int(0, 12), -1, 2 ** 31 - 1, r.int(-3, 40));
    const ids = await tensorOf(odd('i64', 'i32', 'f32'), n, small);
    const counts = await tensorOf('i32', odd(W, 2, 0), () => odd(n, small(), n + 1, -1));
    const width = r.int(1, 3);
    const rows = await tensorOf('f32', n * width);
    const rows2d = (await attempt('reshape', () => hb.tensor(new Float32Array(n * width), [n, width], undefined, { device: 'cpu' })))?.handle;
    // A layout for k columns, as the peers' counts would make it (or not).
    const layout = await tensorOf('i32', k * W, () => odd(Math.floor(n / k), small(), -2, 2 ** 30));
    const worldSize = odd(1, 2, 0, -1, 2 ** 53, NaN, 1.5);
    const run = (kernel, inputs, outputs, attrs) => attempt(kernel, () => native.kernelRun(kernel, inputs, outputs, attrs, 'fuzz'));
    const sizedOut = (dtype) => odd({ dtype }, { dtype, shape: [n] }, [n], rows);
    const fixed = (dtype, count) => odd({ dtype, shape: [count] }, { dtype, shape: [count + 1] }, [count], { dtype });
    await Promise.all([
      run('step_sync', [await tensorOf('i32', 5, () => odd(0, 1, -1, 2 ** 31 - 1))], [fixed('int32', 5)], { worldSize }),
      run('alltoallv', [odd(rows2d, ids, rows), counts], [sizedOut(odd('float32', 'int64')), fixed('int32', W)], { worldSize, wire: odd('float32', 'float16', 'bfloat16', 'int8'), scale: odd(1, 0.5, NaN) }),
      run('allreduce', [rows, rows], [fixed('float32', n * width), fixed('float32', n * width)], { worldSize, op: odd('mean', 'sum', 'max', 'prod') }),
      run('allgather', [odd(rows2d, ids)], [sizedOut('float32')], { worldSize, scale: odd(1, 2, NaN) }),
      run('shard_ids', [ids], [sizedOut('int64')], { worldSize: odd(3, worldSize), rank: odd(1, -1, 5, 2 ** 40), rows: odd(40, 1, 0, -5, 2 ** 53) }),
      run('pack_by_owner', odd([ids, counts], [ids, counts, ids, counts], [ids], [ids, ids]), [sizedOut('int64'), fixed('int32', W), { dtype: 'int32', shape: odd([1, W], [2, W], [1, 3]) }], {}),
      run('unpack_by_source', [await tensorOf('i64', n + k, () => odd(r.int(0, 3), small(), -1, 2 ** 40)), counts], [{ dtype: 'int32', shape: odd([k, W], [k + 1, W]) }, ...Array.from({ length: odd(k, 0, k + 1) }, () => sizedOut('int64'))], {}),
      run('pack_rows', [await attempt('layout', () => hb.tensor(new Int32Array(k * W).fill(Math.floor(n / k)), [k, W], undefined, { device: 'cpu' }).handle), ...Array.from({ length: odd(k, 1, k + 1) }, () => odd(rows2d, rows))], [sizedOut('float32'), fixed('int32', W)], {}),
      run('unpack_rows', [rows, odd(await attempt('layout', () => hb.tensor(new Int32Array(k * W).fill(Math.floor(n / k)), [k, W], undefined, { device: 'cpu' }).handle), layout)], Array.from({ length: odd(k, 0, k + 1) }, () => sizedOut('float32')), { dims: odd(Array(k).fill(width), [0], [2 ** 40], [NaN], [-1, 3]) }),
      run('reshard_rows', [odd(rows2d, rows)], [odd(await attempt('target', () => hb.tensor(new Float32Array(r.int(0, 9) * width), undefined, undefined, { device: 'cpu' }).handle), rows2d, { dtype: 'float32', shape: [3, width] })], {
        fromWorld: odd(r.int(1, 3), 0, 2 ** 53),
        fromRank: odd(0, 1, 2, -1),
        toWorld: odd(r.int(1, 3), 2 ** 30),
        toRank: odd(0, 1, 5),
        firstRow: odd(r.int(0, 5), 2 ** 50, -1),
      }),
    ]);
  },
};
