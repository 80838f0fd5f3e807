// The kernels of a compiled model's dense part, called directly (kernelRun) with shapes
// that are mostly right but for one thing: empty rows or columns, a bias of the wrong
// length, mismatched ranks, op codes and attrs out of range. The element-wise, reduction,
// fused dense-layer and interaction kernels check every shape before they touch memory;
// a case may only end in an Error.
'use strict';
module.exports = {
  name: 'model_kernels',
  async run(r, { hb, attempt }) {
    const { native } = require(require('path').resolve(__dirname, '..', '..', 'dist', 'native.js'));
    const odd = (valid, ...others) => (r.chance(0.8) ? valid : r.pick(others));
    const rows = r.pick([0, 1, 2, 7, 16, 17, 256, 257, r.int(0, 300)]);
    const cols = r.pick([0, 1, 3, 16, 64, 300, r.int(0, 70)]);
    const dims = (shape) => odd(shape, [rows], [cols], [rows + 1, cols], [rows, cols + 1], [rows, 1, cols], [], [0]);
    const tensor = async (shape) => {
      const count = shape.reduce((a, b) => a * b, 1);
      const made = r.typedArray(odd('f32', 'i32', 'f64'), count, () => r.number(), 0.05);
      return (await attempt('tensor', () => hb.tensor(made.array, shape, undefined, { device: 'cpu' })))?.handle ?? r.pick([null, undefined, 3]);
    };
    const x = await tensor(dims([rows, cols]));
    const y = await tensor(dims([rows, cols]));
    const bias = await tensor(dims([cols]));
    const out = (shape) => odd(shape, dims(shape), { dtype: 'int32', shape }, [-1, 2], []);
    const op = () => odd(r.pick(['relu', 'sigmoid', 'tanh', 'square', 'log']), 'neg', 'scale', 'nope', 7, -1, NaN);
    const run = (kernel, inputs, outputs, attrs) => attempt(kernel, () => native.kernelRun(kernel, inputs, outputs, attrs, 'fuzz'));
    const features = odd(r.int(1, 4), 0, -1, 2 ** 20, 1.5);
    const prefix = odd(r.chance(0.5), 2, 'yes', NaN);
    const width = cols > 0 ? cols : 1;
    const pieces = await Promise.all(Array.from({ length: odd(r.int(1, 4), 0, 5) }, () => tensor(dims([rows, width]))));
    // The other form: one [rows, F * D] tensor, for a sane F.
    const saneF = Number.isInteger(features) && features > 0 && features <= 64 ? features : 2;
    const stacked = await tensor(dims([rows, saneF * width]));
    // Pairs of a sane F (a huge attr must not make the case allocate as much).
    const pairs = (f) => (Number.isInteger(f) && f > 0 && f <= 64 ? (f * (f - 1)) / 2 : 3);
    await Promise.all([
      run('binary', [x, odd(bias, y)], [out([rows, cols])], { op: odd('add', 'mul', 'div', 'nope') }),
      run('unary', [x], [out([rows, cols])], { op: op(), c: odd(0.5, NaN) }),
      run('unary_grad', [x, y], [out([rows, cols])], { op: op() }),
      run('reduce_to_shape', [x], [out([cols])], { scale: odd(1, 0.5, NaN) }),
      run('broadcast_to', [bias], [out([rows, cols])], { scale: odd(1, 2) }),
      run('bias_activation', odd([x, bias], [x], [bias, x], [x, x]), [out([rows, cols])], { op: op() }),
      run('activation_grad_bias', odd([x, y], [x], [y, bias]), odd([out([rows, cols]), out([cols])], [out([rows, cols])]), { op: op() }),
      run('dot_interaction', odd(pieces, [stacked], [x], []), [out([rows, (prefix === true ? width : 0) + pairs(features)])], { features, prefix }),
      run('dot_interaction_grad', [await tensor(dims([rows, (prefix === true ? width : 0) + pairs(features)])), ...pieces], pieces.map(() => out([rows, width])), { features, prefix }),
      run('dot_interaction_grad', [await tensor(dims([rows, (prefix === true ? width : 0) + pairs(features)])), stacked], [out([rows, saneF * width])], { features, prefix }),
      run('concat', odd([x, y], [x], [x, bias]), [out([rows, 2 * cols])], { axis: odd(1, 0, 2, -1) }),
      run('split_axis', [x], odd([out([rows, 1]), out([rows, Math.max(0, cols - 1)])], [out([rows, cols])]), { axis: odd(1, 0, 5) }),
    ]);
  },
};
