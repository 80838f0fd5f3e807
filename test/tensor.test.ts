import { spawnSync } from 'child_process';
import * as path from 'path';
import * as hb from '../lib';
import { native } from '../lib/native';
import { typeName } from './support/reference';

// The built package, for scripts run in a child process.
const dist = JSON.stringify(path.resolve(__dirname, '..', 'dist', 'index.js'));

/** Runs `script` in a child node on the host (HB_DEVICE=cpu) with `env` added, for at most 60 s. */
function runHostChild(script: string, env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env, HB_DEVICE: 'cpu' } });
}

describe('hb.tensor()', () => {
  test('typed arrays keep their dtype and are copied: later writes to the array are not seen', async () => {
    const values = Float32Array.from([1, 2, 3, 4, 5, 6]);
    const t = hb.tensor(values, [2, 3], undefined, { device: 'cpu' });
    expect(t.shape).toEqual([2, 3]);
    expect(t.dtype).toBe('float32');
    expect(t.rank).toBe(2);
    expect(t.size).toBe(6);
    values[0] = 42; // the tensor holds its own copy
    expect(Array.from((await t.data()) as Float32Array)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await t.array()).toEqual([[1, 2, 3], [4, 5, 6]]);
  });

  test('each supported typed array maps to its dtype, and data() returns the same kind', async () => {
    const cases: Array<[hb.TypedArray, string, string]> = [
      [Float32Array.from([1.5]), 'float32', 'Float32Array'],
      [Float64Array.from([1e300]), 'float64', 'Float64Array'],
      [Int32Array.from([-7]), 'int32', 'Int32Array'],
      [BigInt64Array.from([2n ** 62n]), 'int64', 'BigInt64Array'],
    ];
    for (const [values, dtype, kind] of cases) {
      const t = hb.tensor(values);
      expect(t.dtype).toBe(dtype);
      const data = await t.data();
      expect(typeName(data)).toBe(kind);
      expect(Array.from(data as ArrayLike<unknown>)).toEqual(Array.from(values as ArrayLike<unknown>));
      // data() is a copy: writing it leaves the tensor alone
      (data as unknown as unknown[])[0] = dtype === 'int64' ? 0n : 0;
      expect(Array.from((await t.data()) as ArrayLike<unknown>)).toEqual(Array.from(values as ArrayLike<unknown>));
    }
  });

  test('plain arrays: float32 by default, int64 for bigints, shape from nesting', async () => {
    const a = hb.tensor([[1, 2], [3, 4], [5, 6]]);
    expect(a.shape).toEqual([3, 2]);
    expect(a.dtype).toBe('float32');
    expect(await a.array()).toEqual([[1, 2], [3, 4], [5, 6]]);
    const b = hb.tensor([1n, -2n, 2n ** 60n]);
    expect(b.dtype).toBe('int64');
    expect(Array.from((await b.data()) as BigInt64Array)).toEqual([1n, -2n, 2n ** 60n]);
    const c = hb.tensor([1, 2, 3, 4], [2, 2], 'int32');
    expect(c.dtype).toBe('int32');
    expect(await c.array()).toEqual([[1, 2], [3, 4]]);
    const empty = hb.tensor([], [0, 5]);
    expect(empty.shape).toEqual([0, 5]);
    expect(Array.from((await empty.data()) as Float32Array)).toEqual([]);
    const scalar = hb.tensor([7], []);
    expect(scalar.shape).toEqual([]);
    expect(await scalar.array()).toBe(7);
  });

  test('clone() copies, dispose() frees, and a disposed tensor is refused', async () => {
    const t = hb.tensor(Float32Array.from([1, 2, 3]));
    const copy = await t.clone();
    expect(copy.device).toBe(t.device);
    t.dispose();
    expect(t.isDisposed).toBe(true);
    expect(copy.isDisposed).toBe(false);
    expect(Array.from((await copy.data()) as Float32Array)).toEqual([1, 2, 3]);
    expect(() => t.data()).toThrow(/tensor has been disposed/);
    await expect(Promise.resolve().then(() => t.clone())).rejects.toThrow(/has been disposed/);
    t.dispose(); // twice is harmless
  });

  test('bad input gives an Error naming the argument', () => {
    expect(() => hb.tensor(Float32Array.from([1, 2, 3]), [2, 2])).toThrow(/shape \[2, 2\] holds 4 values but values has 3/);
    expect(() => hb.tensor([[1, 2], [3]])).toThrow(/tensor: values: rows have different lengths \(row 0 has 2, row 1 has 1\)/);
    expect(() => hb.tensor(Float32Array.from([1]), [1], 'int32')).toThrow(/tensor: dtype 'int32' does not match the float32 values/);
    expect(() => hb.tensor([1], [1], 'float16' as hb.DType)).toThrow(/tensor: dtype: unknown dtype "float16"/);
    expect(() => hb.tensor(new Uint8Array(2) as unknown as Float32Array)).toThrow(/values must be a typed array/);
    expect(() => hb.tensor('abc' as unknown as number[])).toThrow(/values must be a typed array/);
    expect(() => hb.tensor([1, 2], [-1, -2])).toThrow(/shape\[0\] must be a non-negative integer/);
    expect(() => hb.tensor([1, 2], [2.5])).toThrow(/shape\[0\] must be a non-negative integer/);
    expect(() => hb.tensor([1.5], [1], 'int32')).toThrow(/tensor: values\[0\] = 1.5 is not an int32/);
    expect(() => hb.tensor([2 ** 60], [1], 'int64')).toThrow(/is not an integer id \(use bigint beyond 2\^53\)/);
  });

  test('the array may be transferred, resized or dropped while work on the tensor is queued', async () => {
    const values = Float32Array.from([1, 2, 3]);
    const t = hb.tensor(values, undefined, undefined, { device: 'cpu' });
    const pending = t.data();
    structuredClone(values.buffer, { transfer: [values.buffer] });
    expect(values.buffer.byteLength).toBe(0);
    expect(Array.from((await pending) as Float32Array)).toEqual([1, 2, 3]);
    expect(Array.from((await t.data()) as Float32Array)).toEqual([1, 2, 3]);
    expect(() => hb.tensor(values)).toThrow(/values's ArrayBuffer was transferred or detached/);
    const Resizable = ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer & { resize(n: number): void };
    const buffer = new Resizable(16, { maxByteLength: 64 });
    const r = hb.tensor(new Float32Array(buffer, 0, 4).fill(5), undefined, undefined, { device: 'cpu' });
    const queued = r.clone();
    buffer.resize(4);
    expect(Array.from((await (await queued).data()) as Float32Array)).toEqual([5, 5, 5, 5]);
  });

  test('an array over a SharedArrayBuffer is refused with a TypeError that says so', () => {
    const shared = new Float32Array(new SharedArrayBuffer(16));
    expect(() => hb.tensor(shared)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'HB_ERR_TYPE' }));
    expect(() => hb.tensor(shared)).toThrow(/values is backed by a SharedArrayBuffer, which another thread may change while hb-ts reads it/);
    expect(() => hb.strings.toHashBucketFast(new BigInt64Array(new SharedArrayBuffer(16)), 10)).toThrow(/SharedArrayBuffer/);
  });

  test('in a child process: host memory kept for reuse is returned once the work is done', () => {
    const script = `
      const hb = require(${dist});
      (async () => {
        const mb = () => process.memoryUsage().rss / 2 ** 20;
        const base = hb.tensor(new Float32Array(16 << 20)); // 64 MiB
        const copies = [];
        for (let i = 0; i < 6; i++) copies.push(await base.clone());
        copies.forEach((c) => c.dispose());
        const kept = mb();
        await new Promise((r) => setTimeout(r, 4000)); // the host executor idles
        console.log(JSON.stringify({ kept, idle: mb() }));
      })();`;
    const child = runHostChild(script, { HB_HOST_CACHE_MB: '1024' });
    expect(child.status).toBe(0);
    const { kept, idle } = JSON.parse(child.stdout.trim());
    expect(kept - idle).toBeGreaterThan(250); // six 64 MiB blocks were cached, then freed
  });

  test('in a child process: large host blocks ask for 2 MiB pages, and HB_HUGE_PAGES=0 keeps 4 KiB ones', () => {
    // Linux backs memory advised with MADV_HUGEPAGE by 2 MiB pages in its transparent huge
    // pages' 'madvise' and 'always' modes; in 'never' mode, or on another OS, there is
    // nothing to see. HB_HUGE_PAGES=0 advises MADV_NOHUGEPAGE (checked in 'madvise' mode,
    // where nothing else in the process asks for large pages).
    const fs = require('fs') as typeof import('fs');
    const thp = (name: string) => {
      const file = `/sys/kernel/mm/transparent_hugepage/${name}`;
      return fs.existsSync(file) ? /\[([\w+]+)\]/.exec(fs.readFileSync(file, 'utf8'))?.[1] : undefined;
    };
    const mode = thp('enabled');
    // Huge pages are only sure to be found where the kernel may compact memory for them.
    const countable = process.platform === 'linux' && fs.existsSync('/proc/self/smaps_rollup');
    const expectHuge = countable && (mode === 'madvise' || mode === 'always') && thp('defrag') !== 'never';
    const script = `
      const hb = require(${dist});
      const fs = require('fs');
      const rollup = '/proc/self/smaps_rollup';
      const hugeMiB = () => fs.existsSync(rollup) ? Number(/AnonHugePages:\\s+(\\d+) kB/.exec(fs.readFileSync(rollup, 'utf8'))[1]) / 1024 : 0;
      (async () => {
        const before = hugeMiB();
        const table = hb.variable(hb.initializers.constant(0.5), { shape: [1 << 18, 64] }); // 64 MiB
        const firstRow = await hb.nn.embeddingLookupSparse(table, hb.ragged([[0]]), { combiner: 'sum' }); // after the fill
        console.log(JSON.stringify({ grew: hugeMiB() - before, value: (await firstRow.data())[63] }));
      })();`;
    const run = (env: Record<string, string>) => {
      const child = runHostChild(script, env);
      expect(child.stderr).toBe('');
      expect(child.status).toBe(0);
      return JSON.parse(child.stdout.trim()) as { grew: number; value: number };
    };
    const advised = run({ HB_HUGE_PAGES: '1' }); // whatever the suite's environment says
    const plain = run({ HB_HUGE_PAGES: '0' });
    expect(advised.value).toBe(0.5);
    expect(plain.value).toBe(0.5);
    // The advice stays on the block's own mapping: never on malloc's heap, where glibc puts
    // blocks of a few MiB once it has unmapped one (HB_HOST_CACHE_MB=0: every free is real).
    const heapScript = `
      const hb = require(${dist});
      const fs = require('fs');
      (async () => {
        const big = hb.tensor(new Float32Array(4 << 20)); // 16 MiB
        (await big.clone()).dispose();
        const small = await hb.tensor(new Float32Array(1 << 19)).clone(); // 2 MiB
        const smaps = fs.existsSync('/proc/self/smaps') ? fs.readFileSync('/proc/self/smaps', 'utf8') : '';
        const heap = smaps.split(/\\n(?=[0-9a-f]+-[0-9a-f]+ )/).filter((m) => m.split('\\n')[0].endsWith('[heap]'));
        console.log(JSON.stringify({ advisedHeap: heap.some((m) => / hg( |$)/m.test(/VmFlags:.*/.exec(m)?.[0] ?? '')), size: small.size }));
      })();`;
    const heapChild = runHostChild(heapScript, { HB_HOST_CACHE_MB: '0' });
    expect(heapChild.status).toBe(0);
    expect(JSON.parse(heapChild.stdout.trim())).toEqual({ advisedHeap: false, size: 1 << 19 });
    if (expectHuge) expect(advised.grew).toBeGreaterThanOrEqual(32); // most of the table
    if (countable && mode === 'madvise') expect(plain.grew).toBeLessThan(8);
    if (countable && mode !== 'madvise' && mode !== 'always') expect(advised.grew).toBe(0);
  });

  test('in a child process: small lookups in a loop reuse the blocks their ids are copied into', () => {
    // A 4096-bag lookup copies 32 KiB of ids and 16 KiB of row splits: blocks glibc gave
    // back to the OS between calls, so every call faulted their pages in again.
    const script = `
      const hb = require(${dist});
      (async () => {
        const table = hb.variable(hb.initializers.constant(1), { shape: [100000, 16] });
        const ids = hb.ragged(BigInt64Array.from({ length: 4096 }, (_, i) => BigInt((i * 7919) % 100000)), Int32Array.from({ length: 4097 }, (_, i) => i));
        const lookup = async () => (await hb.nn.embeddingLookupSparse(table, ids, { combiner: 'sum' })).dispose();
        for (let i = 0; i < 50; i++) await lookup();
        const before = process.resourceUsage().minorPageFault;
        for (let i = 0; i < 500; i++) await lookup();
        console.log(JSON.stringify({ faultsPerCall: (process.resourceUsage().minorPageFault - before) / 500 }));
      })();`;
    const child = runHostChild(script);
    expect(child.status).toBe(0);
    expect(JSON.parse(child.stdout.trim()).faultsPerCall).toBeLessThan(2);
  });

  test('large results are copies as well, and outlive their tensor', async () => {
    const t = hb.tensor(new Float32Array(1 << 16).fill(3)); // 256 KiB: read into a reused host block
    const first = (await t.data()) as Float32Array;
    const second = (await t.data()) as Float32Array;
    t.dispose();
    expect(first.length).toBe(1 << 16);
    first.fill(7); // neither the tensor's other reads nor a new tensor see it
    expect(second.every((x) => x === 3)).toBe(true);
    const u = hb.tensor(new Float32Array(1 << 16).fill(5));
    expect(((await u.data()) as Float32Array).every((x) => x === 5)).toBe(true);
    expect(first.every((x) => x === 7)).toBe(true);
  });

  test('in a child process on 2 threads: copies split over the pool keep every value in place, to the last partial piece', () => {
    // 1.2 MB: host copies go over the pool in 128 KiB pieces (native/core/buffer.cc), ten
    // here, the last one partial. Two threads, so the pieces are really split (one thread
    // copies in one go), and host tensors whatever the suite's device.
    const script = `
      const hb = require(${dist});
      (async () => {
        const n = 300001;
        const t = hb.tensor(Float32Array.from({ length: n }, (_, i) => i), [n], 'float32', { device: 'cpu' });
        const intoArray = new Float32Array(n);
        await t.data(intoArray);
        const fresh = await t.data();
        const cloned = await t.clone();
        const ofClone = await cloned.data();
        const handedOver = await (await t.clone()).data({ dispose: true });
        t.dispose();
        cloned.dispose();
        const firstWrong = (read) => {
          if (read.length !== n) return 'length ' + read.length;
          for (let i = 0; i < n; i++) if (read[i] !== i) return i;
          return -1;
        };
        console.log(JSON.stringify([intoArray, fresh, ofClone, handedOver].map(firstWrong)));
      })();`;
    const child = runHostChild(script, { HB_NUM_THREADS: '2' });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    expect(JSON.parse(child.stdout.trim())).toEqual([-1, -1, -1, -1]);
  });

  test('a read waits for work still queued on the tensor; with nothing queued it is a copy made at once', async () => {
    // Host tensors whatever the suite's device. A 256 MiB fill keeps the host queue busy
    // while the small variable's fill and an assign wait behind it: those reads must go
    // through the queue and see both.
    const cpu = { device: 'cpu' } as const;
    const big = hb.variable(hb.initializers.constant(1), { shape: [1 << 26], ...cpu });
    const small = hb.variable(hb.initializers.constant(2.5), { shape: [1 << 16], ...cpu });
    const filled = small.data();
    const assigned = small.assign(hb.tensor(new Float32Array(1 << 16).fill(7), undefined, undefined, cpu));
    const afterAssign = native.tensorDataSync(small.handle); // a feature transform's read
    expect(Array.from(new Set((await filled) as Float32Array))).toEqual([2.5]);
    expect(Array.from(new Set(afterAssign as Float32Array))).toEqual([7]);
    await assigned;
    await new Promise((r) => setTimeout(r, 20)); // the host worker has settled its last task
    // Nothing queued now: a read is copied at once, its promise settled before any turn of
    // the event loop (a queued read settles only on one), and each read is its own array.
    let settled = false;
    void small.data().then(() => (settled = true));
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(settled).toBe(true);
    const [a, b] = [(await small.data()) as Float32Array, native.tensorDataSync(small.handle) as Float32Array];
    expect(typeName(a)).toBe('Float32Array');
    a.fill(-1);
    expect(Array.from(new Set(b))).toEqual([7]);
    expect(Array.from(new Set((await small.data()) as Float32Array))).toEqual([7]);
    const empty = hb.tensor(new Float32Array(0), undefined, undefined, cpu);
    expect(((await empty.data()) as Float32Array).length).toBe(0);
    big.dispose();
    small.dispose();
  });

  test('in a child process: reads in a loop that never yields to the event loop do not pile up memory', () => {
    // Reads of an idle tensor resolve at once, so this loop runs on microtasks alone and
    // Node never reaches the finalizers that give host blocks back: the reads must not
    // take a new host block each (2000 x 512 KiB would be 1 GiB).
    const script = `
      const hb = require(${dist});
      (async () => {
        const t = hb.tensor(new Float32Array(1 << 17).fill(2)); // 512 KiB
        await t.data();
        const before = process.memoryUsage().rss;
        let sum = 0;
        for (let i = 0; i < 2000; i++) sum += (await t.data())[i];
        console.log(JSON.stringify({ grew: (process.memoryUsage().rss - before) / 2 ** 20, sum }));
      })();`;
    const child = runHostChild(script);
    expect(child.status).toBe(0);
    const { grew, sum } = JSON.parse(child.stdout.trim());
    expect(sum).toBe(4000);
    expect(grew).toBeLessThan(256);
  });

  test('in a child process: the blocks of large results come back once JS drops them, and are freed when idle', () => {
    const script = `
      const hb = require(${dist});
      (async () => {
        const mb = () => process.memoryUsage().rss / 2 ** 20;
        const t = hb.tensor(new Float32Array(16 << 20)); // 64 MiB: above glibc's largest mmap threshold, so a free reaches the OS
        let reads = [];
        for (let i = 0; i < 6; i++) reads.push(await t.data());
        const held = mb();
        reads = null;
        global.gc();
        await new Promise((r) => setTimeout(r, 200));
        const kept = mb();
        await new Promise((r) => setTimeout(r, 4000)); // the host executor idles
        console.log(JSON.stringify({ held, kept, idle: mb() }));
      })();`;
    const child = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HB_HOST_CACHE_MB: '1024', HB_DEVICE: 'cpu' } });
    expect(child.status).toBe(0);
    const { held, idle } = JSON.parse(child.stdout.trim());
    expect(held - idle).toBeGreaterThan(250); // 6 x 64 MiB read, dropped, then given back
  });

  test('in a child process: a tensor dropped after the host has gone idle is freed too, not kept in the cache', () => {
    // The host executor empties the block cache once it has idled for 2 s; a block that
    // comes back later (a tensor disposed on the JS thread, an array collected) starts
    // that count again instead of staying cached while nothing runs.
    const script = `
      const hb = require(${dist});
      (async () => {
        const mb = () => process.memoryUsage().rss / 2 ** 20;
        const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
        const copies = [];
        const base = hb.tensor(new Float32Array(16 << 20)); // 64 MiB
        for (let i = 0; i < 4; i++) copies.push(await base.clone());
        base.dispose();
        await sleep(4000); // idle: the cache is emptied
        const held = mb();
        copies.forEach((c) => c.dispose());
        const dropped = mb();
        await sleep(4000);
        console.log(JSON.stringify({ held, dropped, idle: mb() }));
      })();`;
    const child = runHostChild(script, { HB_HOST_CACHE_MB: '1024' });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    const { held, dropped, idle } = JSON.parse(child.stdout.trim());
    expect(held - dropped).toBeLessThan(64); // disposing caches the blocks
    expect(dropped - idle).toBeGreaterThan(200); // 4 x 64 MiB freed once idle again
  });

  test('in a child process: worker threads terminated while they read results do not take the process down', () => {
    // A worker being terminated cannot throw into JS any more: an Error the addon raised
    // then aborted the whole process ("terminate called after throwing an instance of
    // 'Napi::Error'", 2 to 4 runs in 6 of this script). Three rounds of 8 workers reading
    // results of 64 KiB to 12 MiB, half of them terminated mid-loop.
    const script = `
      const { Worker, isMainThread, workerData, parentPort } = require('worker_threads');
      if (isMainThread) {
        const round = (r) => new Promise((resolve) => {
          let done = 0, bad = 0;
          for (let w = 0; w < 8; w++) {
            const worker = new Worker(__filename, { workerData: { w } });
            worker.on('message', (m) => (bad += m.bad));
            worker.on('error', () => bad++);
            worker.on('exit', () => { if (++done === 8) resolve(bad); });
            if (w % 2) setTimeout(() => worker.terminate(), 200 + 60 * w);
          }
        });
        (async () => {
          let bad = 0;
          for (let r = 0; r < 3; r++) bad += await round(r);
          console.log(JSON.stringify({ bad }));
        })();
      } else {
        const hb = require(${dist});
        (async () => {
          let bad = 0;
          for (let i = 0; i < 200; i++) {
            const n = [1 << 14, 1 << 16, 3 << 16, 1 << 18, 1 << 20, 3 << 20][i % 6];
            const t = hb.tensor(new Float32Array(n).fill(i));
            const a = await t.data();
            t.dispose();
            if (a[0] !== i || a[n - 1] !== i) bad++;
            if (i % 50 === 0) await new Promise((r) => setImmediate(r));
          }
          parentPort.postMessage({ bad });
        })();
      }`;
    const fs = require('fs') as typeof import('fs');
    const os = require('os') as typeof import('os');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-terminate-'));
    const file = path.join(dir, 'workers.js');
    fs.writeFileSync(file, script);
    try {
      const child = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 90_000, env: { ...process.env, HB_DEVICE: 'cpu' } });
      expect(child.stderr).not.toMatch(/terminate called/);
      expect(child.signal).toBeNull();
      expect(child.status).toBe(0);
      expect(JSON.parse(child.stdout.trim())).toEqual({ bad: 0 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('in a child process: arrays transferred and collected while ops read their tensors end normally', () => {
    const script = `
      const hb = require(${dist});
      (async () => {
        let sum = 0;
        for (let round = 0; round < 50; round++) {
          let values = new Float32Array(1 << 16).fill(round);
          const t = hb.tensor(values);
          const pending = [t.clone(), t.data()];
          structuredClone(values.buffer, { transfer: [values.buffer] }); // moved and dropped at once
          values = null;
          global.gc();
          const copy = await pending[0];
          sum += (await copy.data())[123] + (await pending[1])[456];
        }
        console.log('SUM ' + sum);
      })().catch((e) => { console.log('ERROR ' + e.message); process.exit(2); });`;
    const child = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(child.signal).toBeNull();
    expect(child.status).toBe(0);
    expect(child.stdout).toContain('SUM ' + 2 * (49 * 50) / 2);
  });

  test('data(into) writes the values into the array given and resolves to it, on every dtype and device path', async () => {
    const cases: hb.TypedArray[] = [
      Float32Array.from({ length: 1 << 16 }, (_, i) => i / 8), // 256 KiB
      Float64Array.from([1e300, -2.5, 3]),
      Int32Array.from([-7, 0, 7]),
      BigInt64Array.from([2n ** 62n, -1n]),
    ];
    for (const values of cases) {
      const t = hb.tensor(values); // the suite's device: copied back through a host block from a GPU
      const into = new (values.constructor as new (n: number) => hb.TypedArray)(values.length);
      const result = await t.data(into);
      expect(result).toBe(into);
      expect(Array.from(into as ArrayLike<unknown>)).toEqual(Array.from(values as ArrayLike<unknown>));
      // A view into a larger array: only its own span is written.
      const wide = new (values.constructor as new (n: number) => hb.TypedArray)(values.length + 2);
      const Kind = values.constructor as unknown as { BYTES_PER_ELEMENT: number; new (b: ArrayBuffer, o: number, n: number): hb.TypedArray };
      const view = new Kind(wide.buffer as ArrayBuffer, Kind.BYTES_PER_ELEMENT, values.length);
      await t.data(view);
      const zero = typeof values[0] === 'bigint' ? 0n : 0;
      expect(wide[0]).toBe(zero);
      expect(wide[values.length + 1]).toBe(zero);
      expect(Array.from(view as ArrayLike<unknown>)).toEqual(Array.from(values as ArrayLike<unknown>));
      t.dispose();
    }
    // An empty tensor into an empty array (which may have no memory at all), at once and
    // queued on the suite's device.
    const empty = hb.tensor(new Float32Array(0));
    const none = new Float32Array(0);
    expect(await empty.data(none)).toBe(none);
    // Queued behind a 256 MiB fill on the host: written once the values are final.
    const cpu = { device: 'cpu' } as const;
    const big = hb.variable(hb.initializers.constant(1), { shape: [1 << 26], ...cpu });
    // A promise still to settle keeps a read off the JS thread, however fast the fill ran.
    const emptyOnHost = hb.tensor(new Float32Array(0), undefined, undefined, cpu);
    const [, emptyRead] = await Promise.all([emptyOnHost.clone(), emptyOnHost.data(none)]);
    expect(emptyRead).toBe(none);
    const small = hb.variable(hb.initializers.constant(2.5), { shape: [1 << 18], ...cpu });
    const into = new Float32Array(1 << 18);
    // A variable is read in queue order: the assign queued after the read is not seen.
    const read = small.data(into);
    const assigned = small.assign(hb.tensor(new Float32Array(1 << 18).fill(7), undefined, undefined, cpu));
    expect(Array.from(new Set(await read))).toEqual([2.5]);
    await assigned;
    expect(Array.from(new Set(await (await small.read()).data(into)))).toEqual([7]);
    big.dispose();
    small.dispose();
  });

  test('data(into) refuses an array of the wrong kind or length, shared or detached, and a transfer while it waits', async () => {
    const t = hb.tensor(Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3]);
    // Refused at the call, before anything is queued (as a disposed tensor's read is).
    const refusal = (into: unknown): (Error & { code?: string }) | null => {
      try {
        void t.data(into as Float32Array);
        return null;
      } catch (e) {
        return e as Error & { code?: string };
      }
    };
    const wrongKind = refusal(new Float64Array(6));
    expect(wrongKind?.name).toBe('TypeError');
    expect(wrongKind?.message).toBe('tensor.data: into must be a Float32Array of 6 values (the tensor is float32 [2, 3])');
    expect(refusal([1, 2, 3, 4, 5, 6])?.name).toBe('TypeError');
    expect(refusal(new Int32Array(6))?.code).toBe('HB_ERR_TYPE');
    const wrongLength = refusal(new Float32Array(7));
    expect(wrongLength?.code).toBe('HB_ERR_SHAPE');
    expect(wrongLength?.message).toMatch(/^tensor\.data: into has 7 values; it must be a Float32Array of 6 values/);
    expect(refusal(new Float32Array(new SharedArrayBuffer(24)))?.message).toMatch(/into is backed by a SharedArrayBuffer/);
    const detached = new Float32Array(6);
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    expect(refusal(detached)?.message).toMatch(/into's ArrayBuffer was transferred or detached/);
    // Transferred while the read waits behind other work: the read rejects, nothing is written.
    const cpu = { device: 'cpu' } as const;
    const queued = hb.tensor(new Float32Array(1 << 18).fill(3), undefined, undefined, cpu);
    const big = hb.variable(hb.initializers.constant(1), { shape: [1 << 26], ...cpu });
    const into = new Float32Array(1 << 18);
    // The clone's promise, still to settle, keeps the read queued (the fill alone could be
    // done by now: a pause of this thread, a warm block).
    const cloned = queued.clone();
    const pending = queued.data(into);
    const moved = new Float32Array(structuredClone(into.buffer, { transfer: [into.buffer] }));
    await expect(pending).rejects.toThrow('tensor.data: into was transferred, detached or resized to 0 values before the read finished');
    expect(moved.every((x) => x === 0)).toBe(true);
    t.dispose();
    expect(() => t.data(new Float32Array(6))).toThrow(/disposed/);
    (await cloned).dispose();
    big.dispose();
    queued.dispose();
  });

  test('a read settles after the promises of calls made before it, into a new array or not', async () => {
    const t = hb.tensor(new Float32Array(1024).fill(1), undefined, undefined, { device: 'cpu' });
    await t.data();
    const order: string[] = [];
    const cloned = t.clone().then((c) => (order.push('clone'), c.dispose()));
    // The clone's work ends on the host worker while this thread is busy, so its promise
    // still waits to settle when the reads are asked for: they must not overtake it.
    const until = Date.now() + 30;
    while (Date.now() < until);
    const reads = [t.data().then(() => order.push('data')), t.data(new Float32Array(1024)).then(() => order.push('data into'))];
    await Promise.all([cloned, ...reads]);
    expect(order).toEqual(['clone', 'data', 'data into']);
    t.dispose();
  });

  test('in a child process: reads in a loop map no new pages into one array, nor into new arrays once V8 has collected the last; each new array is its own', () => {
    // One array reused is written where it is. A new array of 64 KiB or more lives in a
    // host block that goes back to the cache when V8 collects the array: once it has, a
    // loop's next reads take those blocks. Every array kept is its own: the pieces a 2 MiB
    // mapping is cut into must not overlap, in 2 MiB pages or 4 KiB ones. (How many faults
    // reads between collections cost depends on how fast the machine hands out 2 MiB pages;
    // bench/lookup_grid.bench.js measures that.)
    const script = `
      const hb = require(${dist});
      (async () => {
        const faultsPerCall = async (call, calls) => {
          const before = process.resourceUsage().minorPageFault;
          for (let i = 0; i < calls; i++) await call();
          return (process.resourceUsage().minorPageFault - before) / calls;
        };
        const t = hb.tensor(new Float32Array(1 << 16).fill(2));
        const into = new Float32Array(1 << 16);
        await faultsPerCall(() => t.data(into), 5);
        const reused = await faultsPerCall(() => t.data(into), 100);
        // A lookup loop, as a user reads results: a new [4096, 16] result (256 KiB) a call.
        const table = hb.variable(hb.initializers.constant(1), { shape: [100000, 16] });
        const ids = hb.ragged(BigInt64Array.from({ length: 4096 }, (_, i) => BigInt((i * 7919) % 100000)), Int32Array.from({ length: 4097 }, (_, i) => i));
        let lookupSum = 0;
        const lookupAndRead = async () => {
          const out = await hb.nn.embeddingLookupSparse(table, ids, { combiner: 'sum' });
          lookupSum += (await out.data())[4095 * 16];
          out.dispose();
        };
        await faultsPerCall(lookupAndRead, 100);
        global.gc();
        await new Promise((r) => setTimeout(r, 50)); // the collected arrays' finalizers run
        const afterCollection = await faultsPerCall(lookupAndRead, 50);
        const kept = [];
        for (let i = 0; i < 40; i++) {
          const source = hb.tensor(new Float32Array(1 << 16).fill(i));
          kept.push(await source.data());
          source.dispose();
        }
        const own = kept.every((array, i) => array.every((x) => x === i));
        console.log(JSON.stringify({ reused, afterCollection, lookupSum, own, value: into[12345] }));
      })();`;
    const run = (env: Record<string, string>) => {
      const child = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HB_DEVICE: 'cpu', ...env } });
      expect(child.stderr).toBe('');
      expect(child.status).toBe(0);
      return JSON.parse(child.stdout.trim());
    };
    for (const hugePages of ['1', '0']) {
      const { reused, afterCollection, lookupSum, own, value } = run({ HB_HUGE_PAGES: hugePages });
      expect(value).toBe(2);
      expect(own).toBe(true);
      expect(lookupSum).toBe(150);
      // Per call, against the 64 pages a fresh 256 KiB array maps in 4 KiB pages: what is
      // left is V8's own heap growing under the loop's promises (0-2.2 measured on a
      // loaded 2-vCPU VM, where a bound of 2 failed once).
      expect(reused).toBeLessThan(8);
      expect(afterCollection).toBeLessThan(16);
    }
  });

  test('a shape getter that detaches the values cannot make the copy read freed memory', () => {
    const values = Float32Array.from([1, 2, 3, 4]);
    const shape = [4];
    Object.defineProperty(shape, 0, {
      get() {
        structuredClone(values.buffer, { transfer: [values.buffer] });
        return 4;
      },
    });
    expect(() => hb.variable(values, { shape })).toThrow(/detached|holds 4 values but values has 0/);
  });
});

describe('tensor.data({ dispose: true })', () => {
  test('reads the values into a new array and disposes the tensor, on every dtype, small and large', async () => {
    const cases: Array<[hb.TypedArray, string]> = [
      [Float32Array.from({ length: 1 << 16 }, (_, i) => i / 8), 'Float32Array'], // 256 KiB: its own memory handed over on the host
      [Float32Array.from([1.5, -2]), 'Float32Array'],
      [Float64Array.from({ length: 1 << 14 }, (_, i) => i * 1e10), 'Float64Array'],
      [Int32Array.from({ length: 1 << 15 }, (_, i) => -i), 'Int32Array'],
      [BigInt64Array.from([2n ** 62n, -1n]), 'BigInt64Array'],
    ];
    for (const [values, kind] of cases) {
      const t = hb.tensor(values); // the suite's device: from a GPU, a copy
      const read = t.data({ dispose: true });
      expect(t.isDisposed).toBe(true); // at once, not when the read settles
      const data = await read;
      expect(typeName(data)).toBe(kind);
      expect(data.length).toBe(values.length);
      expect(Array.from(data as ArrayLike<unknown>)).toEqual(Array.from(values as ArrayLike<unknown>));
      expect(() => t.data()).toThrow(/tensor has been disposed/);
      expect(() => t.data({ dispose: true })).toThrow(/tensor has been disposed/);
    }
    // { dispose: false } is a plain read.
    const kept = hb.tensor(Float32Array.from([3, 4]));
    expect(Array.from((await kept.data({ dispose: false })) as Float32Array)).toEqual([3, 4]);
    expect(kept.isDisposed).toBe(false);
    kept.dispose();
  });

  test('memory another holder still reads is copied, not handed over: work queued on the tensor sees its values', async () => {
    const values = Float32Array.from({ length: 1 << 18 }, (_, i) => i % 1000);
    const t = hb.tensor(values, undefined, undefined, { device: 'cpu' });
    // A clone queued before the read holds the tensor's memory until it has run.
    const cloned = t.clone();
    const read = (await t.data({ dispose: true })) as Float32Array;
    read.fill(-1);
    const clone = await cloned;
    expect(Array.from(new Set((await clone.data({ dispose: true })) as Float32Array)).length).toBe(1000);
    // A lookup's result handed over stays the array's: later lookups write other memory.
    const table = hb.variable(hb.initializers.constant(1), { shape: [1000, 64], device: 'cpu' });
    const ids = hb.ragged(BigInt64Array.from({ length: 1024 }, (_, i) => BigInt(i % 1000)), Int32Array.from({ length: 1025 }, (_, i) => i));
    const results: Float32Array[] = [];
    for (let i = 0; i < 8; i++) {
      const out = await hb.nn.embeddingLookupSparse(table, ids, { combiner: 'sum' });
      const array = (await out.data({ dispose: true })) as Float32Array;
      array.fill(i);
      results.push(array);
    }
    results.forEach((array, i) => expect(array.every((x) => x === i)).toBe(true));
    table.dispose();
    // Two handles over one block, with nothing queued: the one read and disposed is copied,
    // and the other keeps its values.
    const source = hb.tensor(new Float32Array(1 << 16).fill(7), undefined, undefined, { device: 'cpu' });
    const target = hb.tensor(new Float32Array(1 << 16), undefined, undefined, { device: 'cpu' });
    const [written] = await native.kernelRun('copy', [source.handle], [target.handle], {});
    const alias = new hb.Tensor(written!);
    const handed = (await target.data({ dispose: true })) as Float32Array;
    handed.fill(-1);
    expect(Array.from(new Set((await alias.data()) as Float32Array))).toEqual([7]);
    // Unrelated work still queued on the host: the hand-over waits its turn, and its values are right.
    const busy = hb.variable(hb.initializers.constant(3), { shape: [1 << 22], device: 'cpu' });
    const ownResult = await hb.nn.embeddingLookupSparse(hb.variable(hb.initializers.constant(2), { shape: [10, 64], device: 'cpu' }), hb.ragged(BigInt64Array.from({ length: 512 }, (_, i) => BigInt(i % 10)), Int32Array.from({ length: 513 }, (_, i) => i)), { combiner: 'sum' });
    const cloning = busy.clone();
    const late = (await ownResult.data({ dispose: true })) as Float32Array;
    expect(late.length).toBe(512 * 64);
    expect(late.every((x) => x === 2)).toBe(true);
    (await cloning).dispose();
    for (const t of [source, alias, busy]) t.dispose();
  });

  test('refuses arguments that are neither an array to read into nor { dispose }, naming them, and keeps the tensor', () => {
    const t = hb.tensor(Float32Array.from([1, 2]));
    const refusal = (argument: unknown): Error => {
      try {
        void t.data(argument as { dispose: boolean });
      } catch (error) {
        return error as Error;
      }
      throw new Error('not refused');
    };
    expect(refusal('x')).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/tensor.data: the argument must be a typed array to read into or \{ dispose \}, got "x" \(a string\)/) });
    expect(refusal(null)).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/got null/) });
    expect(refusal([1, 2])).toMatchObject({ name: 'TypeError' });
    expect(refusal({ dispose: 'yes' })).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/options.dispose must be a boolean, got "yes" \(a string\)/) });
    expect(refusal({ dispoze: true }).message).toMatch(/tensor.data: options.*dispoze.*dispose/);
    expect(refusal(new Map())).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/the argument must be a typed array to read into or \{ dispose \}/) });
    expect(refusal(new Date(0))).toMatchObject({ name: 'TypeError' });
    // Views and buffers of kinds hb-ts does not read into: the check of `into` names the kind it needs.
    for (const wrong of [new Uint8Array(8), new ArrayBuffer(8), new DataView(new ArrayBuffer(8)), new Uint8Array(1 << 20)]) {
      const error = refusal(wrong);
      expect(error).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/tensor.data: into must be a Float32Array of 2 values/) });
      expect(error.message.length).toBeLessThan(300);
    }
    expect(t.isDisposed).toBe(false);
    t.dispose();
  });

  test('in a child process: a host tensor read with { dispose: true } hands its memory to the array, mapping no new pages', () => {
    // 4 KiB pages (HB_HUGE_PAGES=0), so that a copy shows in the page faults: a copy of
    // 32 MiB into a new array maps 8192 pages, and handing the tensor's block over maps none.
    // A lookup loop reading its results so maps none either once V8 has collected the last
    // arrays, and every array kept holds its own values.
    const script = `
      const hb = require(${dist});
      (async () => {
        const faults = () => process.resourceUsage().minorPageFault;
        const n = 8 << 20;
        const values = new Float32Array(n);
        for (let i = 0; i < n; i += 4096) values[i] = i;
        const a = hb.tensor(values);
        const b = hb.tensor(values);
        let before = faults();
        const copied = await a.data();
        const copyFaults = faults() - before;
        before = faults();
        const handed = await b.data({ dispose: true });
        const handOverFaults = faults() - before;
        const right = handed.every((x, i) => x === values[i]) && copied.every((x, i) => x === values[i]);
        a.dispose();
        const table = hb.variable(hb.initializers.constant(1), { shape: [100000, 16] });
        const ids = hb.ragged(BigInt64Array.from({ length: 4096 }, (_, i) => BigInt((i * 7919) % 100000)), Int32Array.from({ length: 4097 }, (_, i) => i));
        let lookupSum = 0;
        const lookupAndRead = async () => {
          const out = await hb.nn.embeddingLookupSparse(table, ids, { combiner: 'sum' });
          lookupSum += (await out.data({ dispose: true }))[4095 * 16];
        };
        for (let i = 0; i < 100; i++) await lookupAndRead();
        global.gc();
        await new Promise((r) => setTimeout(r, 50)); // the collected arrays' finalizers run
        before = faults();
        for (let i = 0; i < 50; i++) await lookupAndRead();
        const loopFaults = (faults() - before) / 50;
        const kept = [];
        for (let i = 0; i < 40; i++) kept.push(await hb.tensor(new Float32Array(1 << 16).fill(i)).data({ dispose: true }));
        const own = kept.every((array, i) => array.every((x) => x === i));
        console.log(JSON.stringify({ copyFaults, handOverFaults, right, lookupSum, loopFaults, own }));
      })();`;
    const child = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HB_DEVICE: 'cpu', HB_HUGE_PAGES: '0' } });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    const { copyFaults, handOverFaults, right, lookupSum, loopFaults, own } = JSON.parse(child.stdout.trim());
    expect(right).toBe(true);
    expect(copyFaults).toBeGreaterThan(4096); // the control: a copy into new pages shows
    expect(handOverFaults).toBeLessThan(64);
    expect(lookupSum).toBe(150);
    expect(loopFaults).toBeLessThan(4);
    expect(own).toBe(true);
  });
});
