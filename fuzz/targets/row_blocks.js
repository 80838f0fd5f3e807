// The shuffle's native blocks (rowBlock) and gathers (gatherRows) given arrays of every
// kind and state, splits and offsets that are wrong in every way, picks out of range,
// blocks of other layouts or released, and arrays disturbed once the block is made.
'use strict';
const path = require('path');

const { native } = require(path.resolve(__dirname, '..', '..', 'dist', 'native.js'));

module.exports = {
  name: 'row_blocks',
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
      const block = await attempt('rowBlock', () => native.rowBlock(names.map((n) => column(n, rows))));
      if (block) blocks.push(block);
    }
    for (const a of made) r.disturb(a);
    if (blocks.length && r.chance(0.2)) await attempt('release', () => native.rowBlockRelease(r.pick(blocks)));
    const n = r.int(0, 50);
    const which = r.chance(0.9) ? Int32Array.from({ length: n }, () => (r.chance(0.95) ? r.int(0, Math.max(blocks.length - 1, 0)) : r.pick([-1, blocks.length, 2 ** 31 - 1]))) : r.typedArray('any', n).array;
    const rows = r.chance(0.9) ? Int32Array.from({ length: r.chance(0.95) ? n : n + 1 }, () => (r.chance(0.95) ? r.int(0, 8) : r.pick([-1, 2 ** 31 - 1]))) : r.typedArray('any', n).array;
    const list = r.chance(0.9) ? blocks : [...blocks, r.pick([{}, null, { rows: 1 }])];
    const gathered = attempt('gatherRows', () => native.gatherRows(list, which, rows));
    if (blocks.length && r.chance(0.3)) await attempt('release while gathering', () => native.rowBlockRelease(r.pick(blocks)));
    if (global.gc && r.chance(0.3)) global.gc();
    await gathered;
  },
};
