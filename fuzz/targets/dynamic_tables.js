// Dynamic embedding tables called directly: made with hostile specs, looked up
// (dynamic_rows) with hostile ids, counts and handles, restored from hostile saved rows.
// Most cases are well formed but for one thing, so they reach the native checks.
'use strict';
module.exports = {
  name: 'dynamic_tables',
  async run(r, { hb, attempt }) {
    const { native } = require(require('path').resolve(__dirname, '..', '..', 'dist', 'native.js'));
    const odd = (valid, ...others) => (r.chance(0.8) ? valid : r.pick(others));
    const dim = odd(r.int(1, 8), 0, -1, 2 ** 21, NaN);
    const made = await attempt('create', () =>
      native.dynamicTableCreate({
        name: 'fuzz',
        dim,
        init: odd({ kind: 'truncatedNormal', stddev: 1, seed: 3 }, { kind: 'bogus' }, null),
        admitMinCount: odd(r.int(1, 3), 0, -1, 1.5),
        evictAfterSteps: odd(r.int(0, 3), -1, NaN),
        maxRows: odd(r.int(0, 20), -1, 2 ** 50, 1e15),
        capacityRows: odd(undefined, r.int(1, 64), 0, 2 ** 52),
      }),
    );
    if (!made) return;
    const n = r.size();
    const tensorOf = async (kind, count, fill) => {
      const t = r.typedArray(kind, count, fill, 0.05);
      return (await attempt('tensor', () => hb.tensor(t.array, undefined, undefined, { device: 'cpu' })))?.handle ?? r.pick([null, undefined, 3]);
    };
    const ids = await tensorOf(odd('i64', 'i32', 'f32'), n, () => odd(r.int(-5, 30), 2 ** 53, -(2 ** 53)));
    const inverse = await tensorOf('i32', odd(n * 2, n, 0), () => odd(r.int(0, Math.max(0, n - 1)), -1, n, 2 ** 31 - 1));
    const handle = odd(made.handle, ids, null);
    for (let step = 0; step < 3; step++) {
      await attempt('dynamic_rows', () =>
        native.kernelRun('dynamic_rows', [handle, ids, odd(inverse, null)], [odd({ dtype: 'int64' }, { dtype: 'float32' }, [n])], { train: odd(true, false), step: odd(step, -1, 2 ** 53) }, 'fuzz'),
      );
    }
    await attempt('addSlot', () => native.dynamicTableAddSlot(made.id, odd(0.1, NaN, Infinity), odd(false, true)));
    const snap = await attempt('snapshot', () => native.dynamicTableSnapshot(made.id, odd(false, true)));
    const rows = Math.max(0, r.int(0, 6));
    const saved = {
      ids: odd(snap?.ids, await tensorOf('i64', rows, () => r.int(-9, 9)), await tensorOf('f32', rows)),
      values: odd(snap?.values, await tensorOf('f32', rows * Math.max(1, dim | 0))),
      meta: odd(snap?.meta, await tensorOf('i64', rows * 3, () => odd(r.int(0, 5), -1))),
      slots: odd(snap?.slots, [null], [ids], [await tensorOf('f32', 1)]),
      pendingIds: odd(snap?.pendingIds, await tensorOf('f32', rows), undefined),
      pendingMeta: odd(snap?.pendingMeta, await tensorOf('i64', 1), undefined),
      removedIds: odd(snap?.removedIds, await tensorOf('f32', 3), undefined),
    };
    await attempt('restore', () => native.dynamicTableRestore(made.id, saved, odd(true, false), odd(1, 2, 0, -1), odd(0, 1, 5, -1)));
    await attempt('stats', () => native.dynamicTableStats(odd(made.id, 0, -3, 1e300, NaN)));
  },
};
