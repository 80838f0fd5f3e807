// The input pipeline's native row gathers: concatRows / concatRowsAsync (the batch op's cut
// across blocks) and the shuffle buffer (shuffleBufferNew / Push / Drain / Release), given
// arrays of every kind and state, splits and offsets wrong in every way, ranges out of
// range, blocks of other layouts, buffers released mid-stream, and arrays disturbed once
// a call has settled (the async calls' contract: arrays unchanged until they settle).
'use strict';
const path = require('path');

const { native } = require(path.resolve(__dirname, '..', '..', 'dist', 'native.js'));

module.exports = {
  name: 'row_gathers',
  async run(r, { attempt }) {
    const made = [];
    const column = (name, rows) => {
      const kind = r.pick(['numeric', 'ragged', 'strings', 'junk']);
      const items = kind === 'numeric' || kind === 'strings' ? rows : r.int(0, 3 * rows + 1);
      const splitsOf = (n, total) => {
        const s = Int32Array.from({ length: n + 1 }, (_, i) => Math.round((i * total) / Math.max(n, 1)));
        if (r.chance(0.2)) s[r.int(0, n)] = r.pick([-1, total + 1, 2 ** 31 - 1, -(2 ** 31)]);
        return r.chance(0.9) ? s : r.typedArray('any', n + 1).array;
      };
      const array = (kind, n) => {
        const a = r.typedArray(kind, r.chance(0.9) ? n : r.size());
        made.push(a);
        return a.array;
      };
      if (kind === 'junk') return r.pick([null, 7, { name }, { name, itemArrays: 'x' }, { name, itemArrays: [null] }]);
      const spec = { name, rowSplits: null, itemArrays: [array(r.pick(['f32', 'f64', 'i32', 'i64', 'u8', 'any']), items)], itemOffsets: null, bytes: null };
      if (kind === 'ragged') {
        spec.rowSplits = splitsOf(rows, items);
        if (r.chance(0.5)) spec.itemArrays.push(r.chance(0.8) ? array('f32', items) : null);
      }
      if (kind === 'strings') {
        const bytes = r.int(0, 4 * items + 1);
        spec.itemArrays = [r.chance(0.5) ? array('u8', items) : null];
        spec.itemOffsets = splitsOf(items, bytes);
        spec.bytes = array(r.chance(0.9) ? 'u8' : 'any', bytes);
      }
      return spec;
    };
    const names = Array.from({ length: r.int(0, 4) }, (_, i) => `c${i}`);
    const blocks = [];
    for (let b = r.int(0, 3); b >= 0; b--) {
      const rows = r.pick([0, 1, 2, 5, r.int(0, 40)]);
      blocks.push({ rows, columns: r.chance(0.95) ? names.map((n) => column(n, rows)) : r.pick([null, 'x', [{}]]) });
    }
    const range = (block) => {
      const start = r.chance(0.9) ? r.int(0, block.rows) : r.pick([-1, block.rows + 1, 2 ** 31, NaN, 1.5, '0']);
      const count = r.chance(0.9) ? r.int(0, Math.max(block.rows - (Number(start) || 0), 0)) : r.pick([-1, block.rows + 1, 2 ** 31 - 1, NaN]);
      return { columns: block.columns, start, count };
    };
    const pieces = () => (r.chance(0.95) ? blocks.map(range) : r.pick([[], null, [null], [{ columns: [] }]]));

    // The synchronous cut reads the arrays before it returns: disturbing them afterwards is allowed.
    await attempt('concatRows', () => native.concatRows(pieces()));
    await attempt('concatRowsAsync', () => native.concatRowsAsync(pieces()));

    const size = r.chance(0.9) ? r.int(1, 60) : r.pick([0, -1, NaN, 2 ** 53, 1.5, '8']);
    const seed = r.chance(0.9) ? r.int(0, 2 ** 32 - 1) : r.pick([-1, 2 ** 32, NaN, 0.5]);
    const compact = r.chance(0.8) ? undefined : r.pick([true, false, 1, 'x', null]);
    const buffer = await attempt('shuffleBufferNew', () => native.shuffleBufferNew(size, seed, compact));
    if (buffer && r.chance(0.3)) await attempt('shuffleBufferStats', () => native.shuffleBufferStats(r.chance(0.9) ? buffer : {}));
    if (buffer) {
      for (const block of blocks) {
        await attempt('shuffleBufferPush', () => native.shuffleBufferPush(r.chance(0.97) ? buffer : r.pick([{}, null, 3]), block.columns));
        // The push has settled: the buffer holds its own copy.
        if (r.chance(0.3)) for (const a of made) r.disturb(a);
        if (r.chance(0.05)) await attempt('shuffleBufferRelease', () => native.shuffleBufferRelease(buffer));
      }
      const maxRows = r.chance(0.9) ? r.int(1, 20) : r.pick([0, -1, NaN, 2 ** 31]);
      for (let i = 0; i < 100; i++) {
        const drained = await attempt('shuffleBufferDrain', () => native.shuffleBufferDrain(buffer, maxRows));
        if (!drained) break;
      }
      if (blocks.length && r.chance(0.2)) await attempt('push after the drain', () => native.shuffleBufferPush(buffer, blocks[0].columns));
      const pending = attempt('drain while released', () => native.shuffleBufferDrain(buffer, 5));
      if (r.chance(0.5)) await attempt('shuffleBufferRelease', () => native.shuffleBufferRelease(buffer));
      await pending;
    }
    if (global.gc && r.chance(0.3)) global.gc();
  },
};
