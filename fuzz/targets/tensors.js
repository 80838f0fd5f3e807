// hb.tensor from arrays of every kind and state, then reads and copies while the array
// is transferred, shrunk or dropped, reads into arrays of every kind and state, reads
// that dispose, and use after dispose.
'use strict';
module.exports = {
  name: 'tensors',
  async run(r, { hb, attempt }) {
    const n = r.size();
    const made = r.typedArray(r.pick(['f32', 'f64', 'i32', 'i64', 'u8', 'any']), n);
    const shape = r.chance(0.3) ? r.shape(n) : undefined;
    const dtype = r.chance(0.1) ? r.pick(['float32', 'int64', 'float16', 'bogus', 7]) : undefined;
    const device = r.chance(0.1) ? r.pick(['cpu', 'cuda', 'cuda:7', 'tpu', '']) : undefined;
    const t = await attempt('tensor', () => hb.tensor(made.array, shape, dtype, device === undefined ? {} : { device }));
    if (!t) return;
    const queued = [attempt('data', () => t.data()), attempt('clone', () => t.clone()), attempt('array', () => t.array())];
    r.disturb(made);
    if (global.gc && r.chance(0.3)) global.gc();
    const [, copy] = await Promise.all(queued);
    if (copy) await attempt('copy.data', () => copy.data());
    // A read into an array of any kind, length and state, disturbed while it waits.
    const into = r.typedArray(r.pick(['f32', 'f64', 'i32', 'i64', 'any']), r.chance(0.7) ? n : r.size(), () => 0);
    const reading = attempt('data(into)', () => (copy || t).data(into.array));
    r.disturb(into);
    await reading;
    // A read that disposes (its block may become the array), with other work on the
    // tensor maybe still queued, and options of any shape.
    if (copy && r.chance(0.5)) {
      const pending = r.chance(0.5) ? attempt('clone', () => copy.clone()) : null;
      const options = r.pick([{ dispose: true }, { dispose: true }, { dispose: false }, { dispose: 'yes' }, { dispoze: true }, null, [], 'x', 0]);
      const handed = await attempt('data({ dispose })', () => copy.data(options));
      if (handed && handed.length > 0) handed.fill(typeof handed[0] === 'bigint' ? 1n : 1);
      if (global.gc && r.chance(0.3)) global.gc();
      const cloned = await pending;
      if (cloned) await attempt('clone.data({ dispose })', () => cloned.data({ dispose: true }));
      await attempt('after data({ dispose })', () => copy.data());
    }
    if (r.chance(0.4)) {
      t.dispose();
      await attempt('after dispose', () => t.data());
      await attempt('after dispose', () => t.clone());
    }
    await attempt('nested', () => hb.tensor(r.pick([[[1, 2], [3]], [[]], [1, 'a'], [1n, 2], [[1], [2, 3]], [NaN]])).data());
  },
};
