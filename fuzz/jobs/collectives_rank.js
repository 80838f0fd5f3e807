// One rank of the collectives_job fuzz target (fuzz/targets/collectives_job.js), started
// by `hb-ts launch`. Every rank draws the same calls from the shared seed (kind, dtype,
// sizes across the shared-memory transport's chunk boundaries, roots, an alltoallv's
// whole count matrix), so results can be checked exactly; now and then one rank alone
// changes its own arguments (dtype, length, root, counts, op, wire dtype) or stops
// calling. A call must then give the right values or an Error with a code; anything else
// (wrong values, a non-Error, an engine error) is printed as unexpected.
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..', '..', 'dist', 'index.js'));
const { rng } = require('../generate');

const seed = Number(process.argv[2]);
const d = hb.distribute;
const { ENGINE_ERROR } = require('../engine_error');
const kinds = { f32: 'float32', f64: 'float64', i32: 'int32', i64: 'int64' };
const arrays = { f32: Float32Array, f64: Float64Array, i32: Int32Array, i64: BigInt64Array };
// Element counts around the transport's 4 MiB halves (in float32 / float64 elements) too.
const lengths = [0, 1, 3, 17, 1000, 65536, (1 << 20) - 8, 1 << 20, (1 << 20) + 5, 3 * (1 << 20) + 1];

function fill(kind, n, value) {
  const a = new arrays[kind](n);
  for (let i = 0; i < n; i++) a[i] = kind === 'i64' ? BigInt(value(i)) : value(i);
  return a;
}

async function main() {
  const { rank: me, worldSize: W } = await d.init({ timeoutMs: Number(process.env.HB_COMM_TIMEOUT_MS || 3000) });
  const shared = rng(seed);
  const own = rng(seed * 7919 + me + 1);
  const out = { rank: me, transport: d.stats().transport, calls: 0, errors: {}, unexpected: [] };
  const wrong = (what) => out.unexpected.push(what);
  const calls = shared.int(1, 10);
  for (let c = 0; c < calls; c++) {
    const kind = shared.pick(['allreduce', 'allgather', 'alltoallv', 'broadcast', 'barrier']);
    let dtype = shared.pick(Object.keys(kinds));
    let n = shared.pick(lengths);
    if (n > 65536 && shared.chance(0.6)) n = shared.pick([17, 1000]); // big ones, not too often
    const shared0 = n;
    let root = shared.int(0, W - 1);
    let op = shared.pick(['sum', 'max', 'min']);
    // An alltoallv's rows from each rank to each rank (width 2), known to every rank.
    const matrix = Array.from({ length: W }, () => Array.from({ length: W }, () => shared.pick([0, 1, 5, shared.int(0, Math.max(1, n >> 1))])));
    const counts = matrix[me].slice();
    let sendCounts = counts;
    let wire;
    const deviate = own.chance(0.08) ? own.pick(['dtype', 'length', 'root', 'counts', 'op', 'wire', 'stop']) : null;
    if (deviate === 'dtype') dtype = own.pick(Object.keys(kinds));
    if (deviate === 'length') n = own.pick(lengths);
    if (deviate === 'root') root = own.pick([root, -1, W, 0]);
    // Counts that do not fit the rows sent: this rank's own arguments are wrong.
    if (deviate === 'counts') sendCounts = counts.map((x, p) => (p === 0 ? x + own.pick([-1, 1]) : x));
    if (deviate === 'op') op = own.pick(['mean', 'product', 'max']);
    if (deviate === 'wire') wire = own.pick(['float16', 'bfloat16']);
    // This rank leaves early: the others time out (or see it go) and the group breaks.
    if (deviate === 'stop') break;
    out.calls++;
    if (process.env.FUZZ_TRACE) console.error(`rank ${me}: ${kind} ${dtype}[${n}] root ${root} op ${op} counts ${sendCounts} wire ${wire} (${deviate})`);
    try {
      if (kind === 'allreduce') {
        const t = hb.tensor(fill(dtype, n, (i) => me + (i % 7)), [n]);
        const got = await (await d.allreduce(t, { op })).data();
        const expect = (i) => (op === 'sum' ? W * (i % 7) + (W * (W - 1)) / 2 : op === 'max' ? W - 1 + (i % 7) : i % 7);
        for (let i = 0; i < n; i++) if (Number(got[i]) !== expect(i)) { wrong(`allreduce ${op} ${dtype}[${n}] at ${i}: ${got[i]} != ${expect(i)}`); break; }
      } else if (kind === 'allgather') {
        // Ranks may give different numbers of rows; a changed length changes the width.
        const rows = (shared0 % 5) + me;
        const width = n === shared0 ? 2 : 3;
        const t = hb.tensor(fill(dtype, rows * width, (i) => me * 100 + i), [rows, width]);
        const got = await d.allgatherv(t);
        const values = await got.tensor.data();
        let at = 0;
        for (let q = 0; q < W && !out.unexpected.length; q++) {
          for (let i = 0; i < ((n % 5) + q) * 2; i++, at++) if (Number(values[at]) !== q * 100 + i) { wrong(`allgather from ${q} at ${i}`); break; }
        }
      } else if (kind === 'alltoallv') {
        const rows = counts.reduce((s, x) => s + x, 0);
        const values = [];
        for (let p = 0; p < W; p++) for (let k = 0; k < counts[p]; k++) values.push(me * 1000 + p, k % 1000);
        const t = hb.tensor(fill(dtype, values.length, (i) => values[i]), [Math.max(rows, 0), 2]);
        const got = await d.alltoallv(t, sendCounts, wire ? { wireDtype: wire } : {});
        const received = await got.tensor.data();
        let at = 0;
        for (let q = 0; q < W; q++) {
          if (got.recvCounts[q] !== matrix[q][me]) wrong(`alltoallv recvCounts[${q}] ${got.recvCounts[q]} != ${matrix[q][me]}`);
          for (let k = 0; k < matrix[q][me]; k++, at += 2) {
            if (Number(received[at]) !== q * 1000 + me || Number(received[at + 1]) !== k % 1000) { wrong(`alltoallv from ${q} row ${k}`); k = Infinity; }
          }
        }
      } else if (kind === 'broadcast') {
        const t = hb.tensor(fill(dtype, n, (i) => me * 10 + (i % 3)), [n]);
        const got = await (await d.broadcast(t, { root })).data();
        for (let i = 0; i < n; i++) if (Number(got[i]) !== root * 10 + (i % 3)) { wrong(`broadcast from ${root} at ${i}`); break; }
      } else {
        await d.barrier();
      }
    } catch (error) {
      if (!(error instanceof Error) || typeof error.code !== 'string' || ENGINE_ERROR.test(error.message)) {
        wrong(`${kind}: ${error && error.stack ? error.stack.split('\n').slice(0, 3).join(' | ') : String(error)}`);
      }
      out.errors[error.code] = (out.errors[error.code] || 0) + 1;
      // After a transport failure or a timeout the group refuses work: stop here.
      if (error.code === 'HB_ERR_COMM' || error.code === 'HB_ERR_TIMEOUT') break;
    }
  }
  console.log('RESULT ' + JSON.stringify(out));
  await d.shutdown().catch(() => {});
}

main().catch((error) => {
  console.log('RESULT ' + JSON.stringify({ unexpected: [`the rank failed: ${error && error.stack}`] }));
  process.exitCode = 1;
});
