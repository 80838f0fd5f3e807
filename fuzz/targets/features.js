// Feature columns and string hashing over hostile strings, bytes, offsets and ids.
'use strict';
module.exports = {
  name: 'features',
  async run(r, { hb, attempt }) {
    const fc = hb.featureColumn;
    const n = r.size();
    const bytes = r.typedArray(r.pick(['u8', 'u8', 'u8', 'i8', 'any']), r.int(0, 200), () => r.int(0, 255));
    let offsets = Array.from({ length: n + 1 }, (_, i) => Math.round((i * bytes.array.length) / Math.max(n, 1)));
    if (r.chance(0.3)) offsets = offsets.map((o) => (r.chance(0.2) ? r.pick([-1, o + 1000, 2 ** 31 - 1, o - 1]) : o));
    const offsetArray = r.chance(0.8) ? r.typedArray('i32', n + 1, (i) => offsets[i]).array : r.typedArray('any', n + 1).array;
    const column = await attempt('StringColumn', () => new hb.StringColumn(bytes.array, offsetArray, r.chance(0.2) ? r.typedArray('u8', r.int(0, n + 1), () => r.int(0, 1)).array : undefined));
    const ints = r.typedArray(r.pick(['i64', 'i32', 'f32', 'f64']), n, () => r.pick([r.int(-5, 50), 2 ** 53, -1, NaN])).array;
    const strings = Array.from({ length: n }, () => r.pick(['', 'omar', '\u0000', '\ud800', 'x'.repeat(r.int(0, 3000)), null, undefined, 5, 5n]));
    const inputs = [column, ints, strings, { values: column ?? ints, rowSplits: r.typedArray('i32', r.int(0, n + 2), () => r.int(-1, n + 1)).array }, [[...strings.slice(0, 2)], []], undefined, 'text'];
    const columns = [
      () => fc.categoricalColumnWithHashBucket('k', r.pick([1, 10, 0, -1, 2 ** 53, NaN]), r.pick(['string', 'int64', 'int32', 'float32'])),
      () => fc.categoricalColumnWithVocabularyList('k', r.pick([['omar', 'marlo'], [1, 2, 3], [], ['a', 1], [2n ** 70n]]), { numOovBuckets: r.pick([0, 3, -1, 2 ** 40]), defaultValue: r.pick([undefined, -1, 0, 5, NaN]) }),
      () => fc.categoricalColumnWithIdentity('k', r.pick([1, 10, 100, 0, -5]), { defaultValue: r.pick([undefined, 0, 99, -1]) }),
      () => fc.bucketizedColumn(fc.numericColumn('k'), r.pick([[0, 1, 2], [2, 1], [], [NaN], [1, 1]])),
      () => fc.crossedColumn(['k', 'k'], r.pick([1, 10, 0, -1])),
      () => fc.numericColumn('k', { shape: r.pick([1, 2, [2, 2], 0, -1]) }),
    ];
    const col = await attempt('column', () => r.pick(columns)());
    if (!col) return;
    await attempt('transform', () => col.transform({ k: r.pick(inputs) }));
    await attempt('transform, no key', () => col.transform({}));
    await attempt('hash', () => hb.strings.toHashBucketFast(r.pick(inputs), r.pick([10, 1, 0, -1, 2 ** 53])));
    await attempt('fingerprint', () => hb.strings.fingerprint64(bytes.array, offsetArray));
    await attempt('unique', () => hb.unique(ints));
    await attempt('partition', () => hb.distribute.partitionByOwner(ints, r.pick([1, 2, 3, 0, -1, 2 ** 31])));
  },
};
