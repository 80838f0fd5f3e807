// Seeded hostile values for the fuzz targets: numbers at and past every edge, typed
// arrays of every kind and state (detached, shared, resizable, empty, misaligned), and
// shapes that do not add up.
'use strict';

// mulberry32: small, seedable, good enough to pick cases.
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const r = {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (list) => list[Math.floor(next() * list.length)],
    chance: (p) => next() < p,
  };
  r.number = () => r.pick([0, -0, 1, -1, 0.5, NaN, Infinity, -Infinity, 2 ** 31, -(2 ** 31), 2 ** 53, 1e300, -1e-300, r.int(-5, 5), r.next() * 100]);
  r.size = () => r.pick([0, 1, 2, 3, 7, 8, 31, 32, 33, 100, r.int(0, 300)]);
  r.shape = (n) => {
    if (r.chance(0.7)) return [n];
    if (r.chance(0.5) && n > 0) {
      const d = r.pick([1, 2, 4, n]);
      return n % d === 0 ? [n / d, d] : [d, Math.ceil(n / d)];
    }
    return r.pick([[], [-1], [n, 0], [NaN], [2 ** 40, 2 ** 40], [n + 1], ['3'], [1.5], null]);
  };
  // `hostile`: how often the array is in an odd state (shared, detached, resizable,
  // offset) rather than plain; plain ones reach the kernels behind the checks.
  r.typedArray = (kind, n, fill = () => r.number(), hostile = 0.25) => {
    const kinds = { f32: Float32Array, f64: Float64Array, i32: Int32Array, i64: BigInt64Array, u8: Uint8Array, u16: Uint16Array, i8: Int8Array };
    const Ctor = kinds[kind] || kinds[r.pick(Object.keys(kinds))];
    const state = r.chance(hostile) ? r.pick(['shared', 'detached', 'resizable', 'offset']) : 'plain';
    let buffer;
    if (state === 'shared') buffer = new SharedArrayBuffer(n * Ctor.BYTES_PER_ELEMENT);
    else if (state === 'resizable') buffer = new ArrayBuffer(n * Ctor.BYTES_PER_ELEMENT, { maxByteLength: (n + 8) * Ctor.BYTES_PER_ELEMENT });
    else if (state === 'offset') buffer = new ArrayBuffer((n + 1) * Ctor.BYTES_PER_ELEMENT);
    else buffer = new ArrayBuffer(n * Ctor.BYTES_PER_ELEMENT);
    const array = new Ctor(buffer, state === 'offset' ? Ctor.BYTES_PER_ELEMENT : 0, n);
    for (let i = 0; i < n; i++) {
      const x = fill(i);
      array[i] = Ctor === BigInt64Array ? BigInt.asIntN(64, BigInt(Number.isFinite(x) ? Math.trunc(x) : 0)) : x;
    }
    if (state === 'detached') structuredClone(buffer, { transfer: [buffer] });
    return { array, state, buffer };
  };
  // After a call was queued: shrink, transfer or drop what it was given.
  r.disturb = (made) => {
    if (!made || r.chance(0.5)) return;
    try {
      if (made.state === 'resizable') made.buffer.resize(0);
      else if (made.state === 'plain' || made.state === 'offset') structuredClone(made.buffer, { transfer: [made.buffer] });
    } catch {
      // already detached
    }
  };
  // A value somewhere inside a JSON document (a parsed config or manifest) replaced,
  // dropped, wrapped in an array, scaled, cut or doubled; the document is changed in place
  // and returned.
  r.mutateJson = (doc) => {
    const paths = [];
    const walk = (node, at, depth) => {
      paths.push(at);
      if (depth > 12 || node === null || typeof node !== 'object') return;
      for (const k of Object.keys(node)) walk(node[k], [...at, k], depth + 1);
    };
    walk(doc, [], 0);
    const at = r.pick(paths.slice(1));
    if (!at) return doc;
    let parent = doc;
    for (const k of at.slice(0, -1)) parent = parent[k];
    const key = at[at.length - 1];
    const how = r.int(0, 5);
    if (how === 0) delete parent[key];
    else if (how === 1) parent[key] = r.pick([null, -1, 0, 1.5, 2 ** 53, 1e308, -1e308, '', 'x', true, [], {}, [[[]]], 'float64', 'int32']);
    else if (how === 2) parent[key] = [parent[key]];
    else if (how === 3 && typeof parent[key] === 'number') parent[key] = parent[key] * r.pick([-1, 2, 1000, 0]) + r.pick([0, 1, -1]);
    else if (how === 4 && Array.isArray(parent[key])) parent[key] = r.chance(0.5) ? parent[key].slice(1) : [...parent[key], ...parent[key]];
    else if (typeof parent[key] === 'string') parent[key] = r.pick(['', parent[key] + 'x', '../../etc/passwd', 'a'.repeat(1000)]);
    else parent[key] = r.number();
    return doc;
  };
  return r;
}

module.exports = { rng };
