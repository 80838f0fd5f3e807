// Malformed plans and runs get Errors before any memory is touched (the native plan is
// reachable from JS, so it validates everything it is given).
import { spawnSync } from 'child_process';
import * as path from 'path';
import * as hb from '../lib';
import { KERNEL_REGISTRY_VERSION, native } from '../lib/native';
import { pinDevice } from './support/devices';

// The plans here run on the CPU; their parameters are made on the current device.
pinDevice('cpu');

const plan = (spec: Record<string, unknown>, params: unknown[] = []) =>
  native.planCreate({ version: KERNEL_REGISTRY_VERSION, params: [], feeds: [], steps: [], storageCount: 0, values: [], ...spec } as never, params as never);

describe('planCreate / planRun validation', () => {
  test('a plan of another format is refused', () => {
    expect(() => plan({ version: KERNEL_REGISTRY_VERSION + 1 })).toThrow(/plan is in format \d+ but this addon runs format \d+/);
  });
  test('a feed value must match its feed', () => {
    expect(() => plan({ values: [{ kind: 'feed', dtype: 'float64', shape: [-1], index: 0 }], feeds: [{ name: 'x', dtype: 'float32', shape: [-1] }] })).toThrow(/value 0 does not match feed 'x' \(float32 \[batch\]\)/);
    expect(() => plan({ values: [{ kind: 'feed', dtype: 'float32', shape: [-1], index: 1 }], feeds: [{ name: 'x', dtype: 'float32', shape: [-1] }] })).toThrow(/value 0 names no feed/);
    expect(() => plan({ feeds: [{ name: 'ids', dtype: 'int64', shape: [-2, -2] }] })).toThrow(/feed 'ids' may have one dynamic dimension, not 2/);
  });
  test('feeds of the wrong typed-array kind or size are refused by name', () => {
    const p = plan({ values: [{ kind: 'feed', dtype: 'float32', shape: [-1], index: 0 }], feeds: [{ name: 'x', dtype: 'float32', shape: [-1] }] });
    expect(() => native.planRun(p, 4, [new Int32Array(4) as unknown as Float32Array], [], [0])).toThrow(/feature 'x' must be float32, got int32/);
    expect(() => native.planRun(p, 4, [new Float32Array(3)], [], [0])).toThrow(/feature 'x' has 3 values but 4 were expected/);
    expect(() => native.planRun(p, 4, [], [], [0])).toThrow(/takes 1 feeds, got 0/);
    const ids = plan({ values: [{ kind: 'feed', dtype: 'int64', shape: [-2, 2], index: 0 }], feeds: [{ name: 'pairs', dtype: 'int64', shape: [-2, 2] }] });
    expect(() => native.planRun(ids, 4, [new BigInt64Array(3)], [], [0])).toThrow(/feature 'pairs' has 3 values, which do not fill rows of 2/);
  });
  test('a reshape whose element count overflows is an Error, not a huge view', async () => {
    const B = 4294967296;
    const p = plan({
      values: [
        { kind: 'temp', dtype: 'float32', shape: [0], index: 0 },
        { kind: 'alias', dtype: 'float32', shape: [B, B], index: 0 },
        { kind: 'temp', dtype: 'float32', shape: [0], index: 1 },
      ],
      steps: [{ name: 'mm', kernel: 'matmul', inputs: [1, 1], outputs: [2], attrs: {} }],
      storageCount: 2,
    });
    await expect(native.planRun(p, 0, [], [], [])).rejects.toThrow(/more than 2\^53 elements/);
  });
  test('a long chain of reshapes runs without deep recursion', async () => {
    const values: Array<Record<string, unknown>> = [{ kind: 'temp', dtype: 'float32', shape: [1], index: 0 }];
    for (let i = 0; i < 100_000; i++) values.push({ kind: 'alias', dtype: 'float32', shape: [1], index: i });
    const p = plan({ values, storageCount: 1, steps: [{ name: 'fill', kernel: 'unary', inputs: [0], outputs: [0], attrs: { op: 'neg' } }] });
    const out = await native.planRun(p, 0, [], [], [values.length - 1]);
    expect(out.outputs[0].length).toBe(1);
  });
  test('fetch, value and step indices are checked', () => {
    const p = plan({ values: [{ kind: 'temp', dtype: 'float32', shape: [1], index: 0 }], storageCount: 1 });
    expect(() => native.planRun(p, 0, [], [], [5])).toThrow(/fetch\[0\] must name a value/);
    expect(() => native.planRun(p, 0, [], [], [Number.NaN])).toThrow(/fetch\[0\] must name a value/);
    expect(() => plan({ values: [{ kind: 'temp', dtype: 'float32', shape: [1], index: 3 }], storageCount: 1 })).toThrow(/no storage slot/);
    expect(() => plan({ values: [{ kind: 'temp', dtype: 'float32', shape: [-2], index: 0 }], storageCount: 1 })).toThrow(/sized at run time, so it must be dynamic/);
    expect(() => plan({ values: [{ kind: 'alias', dtype: 'float32', shape: [1], index: 0 }] })).toThrow(/must view an earlier value/);
    expect(() => plan({ steps: [{ name: 'k', kernel: 'no_such_kernel', inputs: [], outputs: [] }] })).toThrow(/no kernel named 'no_such_kernel'/);
    expect(() => plan({ steps: [{ name: 'k', kernel: 'unary', inputs: [7], outputs: [], attrs: { op: 'neg' } }] })).toThrow(/names no value 7/);
    expect(() => native.planRun({} as never, 0, [], [], [])).toThrow(/must be a plan/);
  });
  test('steps are checked against their kernel: counts, dtypes, attrs, writes', () => {
    const values = [
      { kind: 'temp', dtype: 'float32', shape: [2], index: 0 },
      { kind: 'temp', dtype: 'int32', shape: [2], index: 1 },
      { kind: 'param', dtype: 'float32', shape: [2], index: 0 },
    ];
    const base = { values, storageCount: 2, params: [{ name: 'w', dtype: 'float32', shape: [2] }] };
    const w = () => [hb.tensor(new Float32Array(2), [2], undefined, { device: 'cpu' }).handle];
    expect(() => plan({ ...base, steps: [{ name: 'u', kernel: 'unary', inputs: [1], outputs: [0], attrs: { op: 'neg' } }] }, w())).toThrow(/u: kernel unary input 0 \(x\) must be float32, got int32/);
    expect(() => plan({ ...base, steps: [{ name: 'u', kernel: 'unary', inputs: [0, 0], outputs: [0], attrs: { op: 'neg' } }] }, w())).toThrow(/u: kernel unary takes 1 inputs, got 2/);
    expect(() => plan({ ...base, steps: [{ name: 'u', kernel: 'unary', inputs: [0], outputs: [0], attrs: { op: 'frobnicate' } }] }, w())).toThrow(/u: attr 'op' of kernel unary must be one of/);
    // Only a kernel that updates in place may write a parameter.
    expect(() => plan({ ...base, steps: [{ name: 'u', kernel: 'unary', inputs: [0], outputs: [2], attrs: { op: 'neg' } }] }, w())).toThrow(/step u would overwrite parameter 'w'/);
    expect(() => plan({ ...base, steps: [] }, [])).toThrow(/describes 1 parameters but 0 tensors were given/);
  });
  test('outputs sized at run time: only by a kernel that sizes them, or like a value of their rank', () => {
    // unary writes into memory it is given: a dynamic value with none would be a null write.
    const values = [{ kind: 'temp', dtype: 'float32', shape: [1], index: 0 }, { kind: 'dynamic', dtype: 'float32', shape: [-2], index: -1 }];
    expect(() => plan({ values, storageCount: 1, steps: [{ name: 'u', kernel: 'unary', inputs: [0], outputs: [1], attrs: { op: 'neg' } }] })).toThrow(/u: kernel unary output 0 \(y\) is written into memory the plan gives, so its value cannot be sized by the kernel/);
    // unique sizes its outputs: a temporary given to it would be overwritten by another size.
    const ids = [{ kind: 'temp', dtype: 'int64', shape: [4], index: 0 }, { kind: 'temp', dtype: 'int64', shape: [4], index: 1 }, { kind: 'temp', dtype: 'int32', shape: [4], index: 2 }];
    expect(() => plan({ values: ids, storageCount: 3, steps: [{ name: 'q', kernel: 'unique', inputs: [0], outputs: [1, 2], attrs: {} }] })).toThrow(/q: kernel unique output 0 \(uniqueIds\) is sized by the kernel, so its value must be dynamic/);
    expect(() => plan({ values: [{ kind: 'temp', dtype: 'float32', shape: [2, 2], index: 0 }, { kind: 'dynamic', dtype: 'float32', shape: [-2], index: 0 }], storageCount: 1 })).toThrow(/must have the rank of the value it is sized like/);
    // The same through kernelRun.
    const x = hb.tensor(new Float32Array(3), [3], undefined, { device: 'cpu' }).handle;
    expect(() => native.kernelRun('unary', [x], [{ dtype: 'float32' }], { op: 'neg' })).toThrow(/outputs\[0\] needs a shape or a tensor/);
    const n = hb.tensor(BigInt64Array.from([1n, 2n]), [2], undefined, { device: 'cpu' }).handle;
    expect(() => native.kernelRun('partition_by_owner', [n], [{ dtype: 'int64' }, { dtype: 'int32' }, { dtype: 'int32' }], { worldSize: 1 })).toThrow(/outputs\[1\] needs a shape or a tensor/);
    expect(() => native.kernelRun('unique', [n], [[2], { dtype: 'int32' }], {})).toThrow(/outputs\[0\] is sized by the kernel/);
  });
  test('malformed slices and rows are refused before memory is touched', async () => {
    const values = [
      { kind: 'feed', dtype: 'int64', shape: [-2], index: 0 },
      { kind: 'feed', dtype: 'float32', shape: [-2, 4096], index: 1 },
      { kind: 'param', dtype: 'float32', shape: [4, 2], index: 0 },
    ];
    const p = plan(
      {
        values,
        params: [{ name: 'w', dtype: 'float32', shape: [4, 2] }],
        feeds: [{ name: 'indices', dtype: 'int64', shape: [-2] }, { name: 'values', dtype: 'float32', shape: [-2, 4096] }],
        steps: [{ name: 'apply', kernel: 'sparse_apply', inputs: [0, 1, 0, 1], outputs: [2], attrs: { optimizer: 0 } }],
      },
      [hb.variable(new Float32Array(8), { shape: [4, 2] }).handle],
    );
    await expect(native.planRun(p, 0, [BigInt64Array.from([1n]), new Float32Array(4096)], [{ rule: 'gradientDescent', learningRate: 1 }], [])).rejects.toThrow(/apply: IndexedSlices 0 has values \[1, 4096\] for 1 indices of a variable \[4, 2\]/);
    const scalar = hb.tensor(new Float32Array(1), [], undefined, { device: 'cpu' }).handle;
    await expect(native.kernelRun('restore_order', [scalar, hb.tensor(new Int32Array(0), [0], undefined, { device: 'cpu' }).handle], [{ dtype: 'float32' }], {}, 'r')).rejects.toThrow(/r: rows must have a first dimension/);
  });
  test('feed shapes whose size overflows are refused', () => {
    const big = 2 ** 32;
    expect(() => plan({ feeds: [{ name: 'huge', dtype: 'float32', shape: [-1, big, big] }] })).toThrow(/feed 'huge': shape has more than 2\^53 elements/);
  });
});

describe('in a child process', () => {
  // The cases above whose checks, were they lost, would write through a null pointer or
  // past a buffer: run where such a regression kills a child, not the test runner.
  test('a null write, an oversized slice and a scalar of rows end in Errors, and the process exits normally', () => {
    const dist = (p: string) => JSON.stringify(path.resolve(__dirname, '..', 'dist', p));
    const script = `
      const hb = require(${dist('index.js')});
      const { native, KERNEL_REGISTRY_VERSION } = require(${dist('native.js')});
      const plan = (spec, params = []) => native.planCreate({ version: KERNEL_REGISTRY_VERSION, params: [], feeds: [], steps: [], storageCount: 0, values: [], ...spec }, params);
      const said = (e) => console.log('error: ' + e.message.split('\\n')[0]);
      const cpu = (x, shape) => hb.tensor(x, shape, undefined, { device: 'cpu' }).handle;
      (async () => {
        try {
          plan({ values: [{ kind: 'temp', dtype: 'float32', shape: [1], index: 0 }, { kind: 'dynamic', dtype: 'float32', shape: [-2], index: -1 }], storageCount: 1,
                 steps: [{ name: 'u', kernel: 'unary', inputs: [0], outputs: [1], attrs: { op: 'neg' } }] });
        } catch (e) { said(e); }
        const p = plan({
          values: [{ kind: 'feed', dtype: 'int64', shape: [-2], index: 0 }, { kind: 'feed', dtype: 'float32', shape: [-2, 4096], index: 1 }, { kind: 'param', dtype: 'float32', shape: [4, 2], index: 0 }],
          params: [{ name: 'w', dtype: 'float32', shape: [4, 2] }],
          feeds: [{ name: 'indices', dtype: 'int64', shape: [-2] }, { name: 'values', dtype: 'float32', shape: [-2, 4096] }],
          steps: [{ name: 'apply', kernel: 'sparse_apply', inputs: [0, 1, 0, 1], outputs: [2], attrs: { optimizer: 0 } }],
        }, [hb.variable(new Float32Array(8), { shape: [4, 2] }).handle]);
        await native.planRun(p, 0, [BigInt64Array.from([1n]), new Float32Array(4096)], [{ rule: 'gradientDescent', learningRate: 1 }], []).catch(said);
        await native.kernelRun('restore_order', [cpu(new Float32Array(1), []), cpu(new Int32Array(0), [0])], [{ dtype: 'float32' }], {}, 'r').catch(said);
        console.log('done');
      })();
    `;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HB_DEVICE: 'cpu' } });
    expect({ signal: child.signal, status: child.status, stderr: child.stderr }).toEqual({ signal: null, status: 0, stderr: '' });
    const lines = child.stdout.trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^error: .*u: kernel unary output 0 \(y\) is written into memory the plan gives/);
    expect(lines[1]).toMatch(/^error: .*apply: IndexedSlices 0 has values \[1, 4096\] for 1 indices/);
    expect(lines[2]).toMatch(/^error: .*r: rows must have a first dimension/);
    expect(lines[3]).toBe('done');
  });
});
