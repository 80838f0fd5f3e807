// The input pipeline's native row gathers: concatRows / concatRowsAsync (the batch op's cut
// across blocks) and the shuffle buffer (shuffleBufferNew / Push / Drain / Release), and
// Dataset.synthetic's generator (syntheticRows), given arrays of every kind and state, splits and offsets wrong in every way, ranges out of
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

    // Dataset.synthetic's generator: specs at and past their edges, outputs of every kind,
    // length and state. A call that returns must have written rows that hold together.
    const tables = Array.from({ length: r.int(0, 3) }, () => {
      const low = r.chance(0.9) ? r.int(0, 3) : r.number();
      const high = r.chance(0.9) ? (typeof low === 'number' && Number.isFinite(low) ? low : 0) + r.int(0, 3) : r.number();
      const vocabularySize = r.chance(0.8) ? r.pick([1, 2, 3, 1000, 2 ** 32, 2 ** 33 + 1, 2 ** 52]) : r.number();
      return r.chance(0.97) ? { vocabularySize, hotness: r.chance(0.95) ? [low, high] : r.pick([[1], null, 'x', [1, 2, 3]]), alpha: r.chance(0.9) ? r.pick([0, 1, 1.1, 3]) : r.number() } : r.pick([null, 5, {}]);
    });
    const numDense = r.chance(0.9) ? r.int(0, 3) : r.number();
    const rowsWanted = r.chance(0.9) ? r.int(0, 40) : r.pick([-1, NaN, 1.5, 2 ** 31, 2 ** 53]);
    const firstRow = r.chance(0.9) ? r.pick([0, 7, 2 ** 40, 2 ** 53 - 41]) : r.number();
    const lengthOf = (n) => (r.chance(0.9) ? n : r.size());
    const n = Number.isInteger(rowsWanted) && rowsWanted >= 0 && rowsWanted < 100 ? rowsWanted : 8;
    const outputs = {
      label: r.typedArray(r.chance(0.95) ? 'f32' : 'any', lengthOf(n)).array,
      dense: Array.from({ length: Number.isInteger(numDense) && numDense >= 0 && numDense < 10 ? numDense : 1 }, () => r.typedArray(r.chance(0.95) ? 'f32' : 'any', lengthOf(n)).array),
      splits: tables.map(() => r.typedArray(r.chance(0.95) ? 'i32' : 'any', lengthOf(n + 1)).array),
      ids: tables.map((t) => r.typedArray(r.chance(0.95) ? 'i64' : 'any', lengthOf(n * Math.max(0, Math.min(8, Number(t && t.hotness && t.hotness[1]) || 0)))).array),
    };
    // Outputs that share memory, and getters that detach or shrink an array checked before them.
    if (tables.length && r.chance(0.05)) outputs.ids[0] = new BigInt64Array(outputs.splits[0].buffer, 0, Math.floor(outputs.splits[0].buffer.byteLength / 8));
    if (tables.length && r.chance(0.05)) {
      const ids = outputs.ids;
      let read = false; // disturbs on the call's read only, not the checks' below
      Object.defineProperty(outputs, 'ids', { enumerable: true, get: () => (read || r.disturb({ state: r.pick(['plain', 'resizable']), buffer: outputs.label.buffer }), (read = true), ids) });
    }
    const spec = { seed: r.chance(0.9) ? r.int(0, 2 ** 32 - 1) : r.number(), numDense, tables };
    const generated = await attempt('syntheticRows', () => (native.syntheticRows(spec, firstRow, rowsWanted, r.chance(0.97) ? outputs : r.pick([null, {}, { ...outputs, dense: 'x' }])), true));
    // A finding (fuzz/worker.js reports errors with this code).
    const broken = (message) => Object.assign(new Error(message), { code: 'HB_ERR_INTERNAL' });
    if (generated) {
      // Rows written: each table's splits rise from 0 by its hotness range, its ids lie in
      // [0, vocabularySize), labels are 0 or 1 and dense values integers in [0, 53].
      tables.forEach((t, k) => {
        const splits = outputs.splits[k];
        for (let i = 0; i < rowsWanted; i++) {
          const count = splits[i + 1] - splits[i];
          if (splits[0] !== 0 || count < t.hotness[0] || count > t.hotness[1]) throw broken(`syntheticRows: table ${k} row ${i} has ${count} ids`);
        }
        for (let j = 0; j < splits[rowsWanted]; j++) {
          const id = outputs.ids[k][j];
          if (id < 0n || id >= BigInt(t.vocabularySize)) throw broken(`syntheticRows: table ${k} id ${id} outside [0, ${t.vocabularySize})`);
        }
      });
      for (let i = 0; i < rowsWanted; i++) {
        if (outputs.label[i] !== 0 && outputs.label[i] !== 1) throw broken(`syntheticRows: label ${outputs.label[i]}`);
        for (const dense of outputs.dense) if (!Number.isInteger(dense[i]) || dense[i] < 0 || dense[i] > 53) throw broken(`syntheticRows: dense value ${dense[i]}`);
      }
    }
    if (global.gc && r.chance(0.3)) global.gc();
  },
};
