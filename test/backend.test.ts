import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as hb from '../lib';
import { native } from '../lib/native';
import { cudaAvailable, cudaEmulated, loadedAddonPath } from './support/devices';

const distIndex = path.resolve(__dirname, '../dist/index.js');

describe('hb.backend()', () => {
  test('reports the device, CUDA, NCCL, cuBLAS and Gloo in the documented shape', () => {
    const report = hb.backend();
    expect(['cpu', 'cuda']).toContain(report.device);
    expect(typeof report.cuda.compiled).toBe('boolean');
    expect(typeof report.cuda.emulated).toBe('boolean');
    expect(Number.isInteger(report.cuda.deviceCount)).toBe(true);
    for (const lib of [report.nccl, report.cublas]) {
      expect(typeof lib.loaded).toBe('boolean');
      // Either a version or the reason it did not load.
      if (lib.loaded) expect(lib.version).toMatch(report.cuda.emulated ? /^emulated/ : /^\d+\.\d+\.\d+$/);
      else expect(lib.error).toEqual(expect.any(String));
    }
    if (report.gloo.available) expect(report.gloo).toEqual({ available: true });
    else expect(report.gloo.error).toMatch(/gloo/i);
    // CI sets this for the CMake builds, which must have Gloo (.ci/run installs libgloo-dev).
    if (process.env.HB_EXPECT_GLOO === '1') expect(report.gloo.available).toBe(true);
    expect(report.threads).toBeGreaterThanOrEqual(1);
  });

  test('without a usable GPU the device is the CPU and the report says why', () => {
    if (cudaAvailable) return; // covered by the CUDA suite on GPU machines
    const report = hb.backend();
    expect(report.device).toBe('cpu');
    expect(report.cuda.deviceCount).toBe(0);
    expect(report.cuda.error).toMatch(report.cuda.compiled ? /cuda|driver|device/i : /not compiled/);
    if (!report.cuda.compiled) {
      expect(report.cublas.error).toMatch(/not compiled/);
      expect(report.nccl.error).toMatch(/not compiled/);
    } else if (!report.nccl.loaded) {
      expect(report.nccl.error).toMatch(/libnccl\.so.*HB_CUDA_LIB_DIRS/);
    }
  });

  test('the addon links no CUDA library, so it loads on machines without one', () => {
    const addon = loadedAddonPath();
    expect(fs.existsSync(addon)).toBe(true);
    const needed = execFileSync('ldd', [addon], { encoding: 'utf8' });
    expect(needed).not.toMatch(/libcuda|libcudart|libcublas|libnccl/);
  });

  test('sparse updates and the lookup backward prefetch the rows they are about to touch', () => {
    // GCC once deleted these prefetches (they sat in a lambda it proved free of side
    // effects): the updates stayed correct and ran at half speed on large tables, so only
    // the machine code shows it. objdump comes with the compiler that built the addon.
    const listing = execFileSync('objdump', ['-d', '--no-show-raw-insn', '-C', loadedAddonPath()], {
      encoding: 'utf8',
      maxBuffer: 1 << 30,
    });
    const prefetches = new Map<string, number>(); // loop -> prefetch instructions in it
    let current: string | undefined;
    for (const line of listing.split('\n')) {
      const header = /^[0-9a-f]+ <(.*)>:$/.exec(line);
      if (header) {
        // The update loop's body: the lambda parallelFor runs (its own symbol, or inlined
        // into std::function's _M_invoke).
        const rule = /(\w+)::sparseRows<\(hb::OptimizerKind\)(\d)>.*(_M_invoke|lambda)/.exec(header[1]);
        const sum = /sumPerRow<.*(backwardTyped<\w+>|sumDuplicatesTyped<\w+>).*_M_invoke/.exec(header[1]);
        current = rule ? `${rule[1]} rule ${rule[2]}` : sum ? sum[1] : undefined;
        if (current !== undefined && !prefetches.has(current)) prefetches.set(current, 0);
      } else if (current !== undefined && /\t(prefetch\w*|prfm)\s/.test(line)) {
        prefetches.set(current, (prefetches.get(current) as number) + 1);
      }
    }
    // Each rule's update loop (OptimizerKind 0-5), in each vector variant built (portable,
    // and avx2 on x86-64), prefetches every array it writes: the variable, and its
    // per-element slots (RowwiseAdagrad's slot is one value per row).
    const arraysWritten = [1, 2, 2, 3, 3, 1];
    const variants = process.arch === 'x64' ? ['portable', 'avx2'] : ['portable'];
    for (const variant of variants) {
      arraysWritten.forEach((arrays, kind) => {
        const loop = `${variant} rule ${kind}`;
        expect([loop, (prefetches.get(loop) ?? 0) >= arrays]).toEqual([loop, true]);
      });
    }
    // The lookup's backward and the summing of duplicate rows, for both id widths.
    for (const loop of ['backwardTyped<int>', 'backwardTyped<long>', 'sumDuplicatesTyped<int>', 'sumDuplicatesTyped<long>']) {
      expect([loop, prefetches.get(loop)! >= 1]).toEqual([loop, true]);
    }
  });

  test("the lookup forward prefetches the rows ahead into L2, in every variant of its loop", () => {
    // Rows prefetched into L1 (prefetcht0) were as slow as none on random rows: more lines
    // in flight than L1 tracks. Each instantiation (instruction set, id width, weighted,
    // clipped, fixed width) keeps its prefetches in lookupBag or, inlined, in the
    // lookupAllBags loop that calls it.
    const listing = execFileSync('objdump', ['-d', '--no-show-raw-insn', '-C', loadedAddonPath()], {
      encoding: 'utf8',
      maxBuffer: 1 << 30,
    });
    const counts = new Map<string, { any: number; l1: number }>();
    let current: { any: number; l1: number } | undefined;
    for (const line of listing.split('\n')) {
      const header = /^[0-9a-f]+ <(.*)>:$/.exec(line);
      if (header) {
        const loop = /(portable|avx2)::(?:lookupBag|lookupAllBags)<(int|long), (true|false), (true|false), (\d+)>/.exec(header[1]);
        const key = loop ? loop.slice(1).join(' ') : undefined;
        if (key !== undefined && !counts.has(key)) counts.set(key, { any: 0, l1: 0 });
        current = key === undefined ? undefined : counts.get(key);
      } else if (current !== undefined && /\t(prefetch\w*|prfm)\s/.test(line)) {
        current.any += 1;
        if (/\tprefetch(t0|nta)\s/.test(line)) current.l1 += 1;
      }
    }
    const variants = process.arch === 'x64' ? ['portable', 'avx2'] : ['portable'];
    for (const variant of variants) {
      for (const id of ['int', 'long']) {
        for (const weighted of ['true', 'false']) {
          for (const clipped of ['true', 'false']) {
            for (const dim of ['0', '8', '16', '32', '64', '128']) {
              const key = [variant, id, weighted, clipped, dim].join(' ');
              const c = counts.get(key) ?? { any: 0, l1: 0 };
              expect([key, c.any >= 1, c.l1]).toEqual([key, true, 0]);
            }
          }
        }
      }
    }
  });

  test('HB_CUDA_LIB_DIRS is searched, and a miss is reported with the directories tried', () => {
    const result = spawnSync(process.execPath, ['-e', `console.log(JSON.stringify(require(${JSON.stringify(distIndex)}).backend()))`], {
      encoding: 'utf8',
      env: { ...process.env, HB_CUDA_LIB_DIRS: '/nonexistent/a:/nonexistent/b', HB_DEVICE: 'cpu' },
    });
    expect(result.status).toBe(0);
    const report = JSON.parse(result.stdout);
    if (report.cuda.compiled && !report.cuda.emulated && !report.nccl.loaded) {
      expect(report.nccl.error).toContain('/nonexistent/a:/nonexistent/b');
    }
  });
});

describe('hb.setDevice()', () => {
  let before: hb.DeviceSpec = 'cpu';
  beforeEach(() => {
    before = hb.currentDevice() as hb.DeviceSpec;
  });
  afterEach(() => hb.setDevice(before));

  test("'cpu' is always usable and becomes the current device", () => {
    hb.setDevice('cpu');
    expect(hb.currentDevice()).toBe('cpu');
    expect(hb.backend().device).toBe('cpu');
    expect(hb.tensor([1, 2]).device).toBe('cpu');
  });

  test('a CUDA request without a usable device is an Error saying why', () => {
    if (cudaAvailable) return;
    expect(() => hb.setDevice('cuda')).toThrow(/setDevice: 'cuda' requested, but (this build of hb-ts has no CUDA support|no CUDA device is usable)/);
    expect(() => hb.setDevice('cuda:1')).toThrow(/setDevice: 'cuda:1' requested/);
    expect(hb.currentDevice()).toBe('cpu');
    expect(() => hb.tensor([1], undefined, undefined, { device: 'cuda' })).toThrow(/tensor: options\.device: 'cuda' requested/);
    expect(() => hb.variable([[1]], { device: 'cuda:0' })).toThrow(/variable: options\.device: 'cuda:0' requested/);
  });

  test("'cuda-emulated' is the emulated device of an HB_CUDA_EMULATE build, never the default, and an Error elsewhere", () => {
    const report = hb.backend();
    if (!cudaEmulated) {
      expect(report.cuda.emulated).toBe(false);
      expect(() => hb.setDevice('cuda-emulated')).toThrow(/setDevice: 'cuda-emulated' requested, but this build of hb-ts does not emulate CUDA \(build it with HB_CUDA_EMULATE=ON/);
      return;
    }
    expect(report.cuda).toMatchObject({ compiled: true, emulated: true, deviceCount: 1 });
    expect(report.cublas.version).toMatch(/emulated/);
    expect(report.nccl.error).toMatch(/NCCL is not emulated/);
    // Without HB_DEVICE the emulated device is not chosen: it is for tests, and slow.
    const started = spawnSync(process.execPath, ['-e', `console.log(require(${JSON.stringify(distIndex)}).currentDevice())`], {
      encoding: 'utf8',
      env: { ...process.env, HB_DEVICE: '' },
    });
    expect(started.stdout.trim()).toBe('cpu');
    hb.setDevice('cuda-emulated');
    expect(hb.currentDevice()).toBe('cuda:0');
    expect(hb.backend().device).toBe('cuda');
    expect(hb.tensor([1, 2]).device).toBe('cuda:0');
    expect(native.cudaDeviceName('cuda:0')).toMatch(/emulated CUDA device/);
  });

  test('a malformed device is an Error naming it', () => {
    expect(() => hb.setDevice('gpu' as 'cpu')).toThrow(/setDevice: 'gpu' is not a device \(expected 'cpu', 'cuda', 'cuda:N' or 'cuda-emulated'\)/);
    expect(() => hb.setDevice('cuda:x' as 'cpu')).toThrow(/'cuda:x' is not a device/);
    expect(() => hb.setDevice(3 as unknown as 'cpu')).toThrow(/device must be a string/);
  });

  test('HB_DEVICE picks the starting device; importing chooses nothing, and a bad one fails when first used, naming it', () => {
    const run = (device: string, script = `console.log(require(${JSON.stringify(distIndex)}).currentDevice())`) =>
      spawnSync(process.execPath, ['-e', script], {
        encoding: 'utf8',
        env: { ...process.env, HB_DEVICE: device },
      });
    // The import itself succeeds whatever HB_DEVICE says: nothing is switched then.
    expect(run('tpu', `require(${JSON.stringify(distIndex)}); console.log('imported')`).stdout.trim()).toBe('imported');
    const cpu = run('cpu');
    expect(cpu.status).toBe(0);
    expect(cpu.stdout.trim()).toBe('cpu');
    const bad = run('tpu');
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/HB_DEVICE=tpu: setDevice: 'tpu' is not a device/);
    if (!cudaAvailable) {
      const cuda = run('cuda');
      expect(cuda.status).not.toBe(0);
      expect(cuda.stderr).toMatch(/HB_DEVICE=cuda: setDevice: 'cuda' requested/);
    }
  });
});
