// hb.distribute's collectives in a world of one ('local' backend, and Gloo when built)
// with wrong tensors, counts, ops, roots and wire dtypes.
'use strict';
let joined;
module.exports = {
  name: 'collectives',
  async run(r, { hb, attempt }) {
    const d = hb.distribute;
    if (!joined) {
      const backend = hb.backend().gloo.available && r.chance(0.5) ? 'gloo' : 'local';
      const port = await require(require('path').resolve(__dirname, '..', '..', 'dist', 'distribute', 'launch.js')).freePort();
      joined = d.init({ backend, timeoutMs: 10_000, rendezvous: { rank: 0, worldSize: 1, localRank: 0, localWorldSize: 1, masterAddr: '127.0.0.1', masterPort: port, source: 'none' } });
    }
    await joined;
    const n = r.size();
    const made = r.typedArray(r.pick(['f32', 'f64', 'i32', 'i64']), n);
    const t = await attempt('tensor', () => hb.tensor(made.array, r.chance(0.2) ? r.shape(n) : undefined));
    const input = t ?? r.pick([undefined, null, [1, 2], made.array]);
    const counts = r.pick([[n], [n, 0], [-1], [n + 1], [NaN], [], 'x', [2 ** 60], new Int32Array([n])]);
    await Promise.all([
      attempt('allreduce', () => d.allreduce(input, { op: r.pick(['sum', 'mean', 'max', 'min', 'prod', undefined]) })),
      attempt('allgather', () => d.allgatherv(input)),
      attempt('alltoallv', () => d.alltoallv(input, counts, { wireDtype: r.pick([undefined, 'float16', 'bfloat16', 'float32', 'int8']) })),
      attempt('broadcast', () => d.broadcast(input, { root: r.pick([0, 1, -1, NaN, 0.5]) })),
      attempt('barrier', () => d.barrier()),
    ]);
    if (t && r.chance(0.3)) {
      t.dispose();
      await attempt('after dispose', () => d.allreduce(t));
    }
  },
};
