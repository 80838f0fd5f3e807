// Malformed plans and runs get Errors before any memory is touched (the native plan is
// reachable from JS, so it validates everything it is given).
import { native } from '../lib/native';

const plan = (spec: Record<string, unknown>) => native.planCreate({ params: [], feeds: [], steps: [], storageCount: 0, values: [], ...spec });

describe('planCreate / planRun validation', () => {
  test('a feed value must be a float32 dense feed', () => {
    expect(() => plan({ values: [{ kind: 'feed', dtype: 'float64', shape: [-1], index: 0 }], feeds: [{ name: 'x', kind: 'dense' }] })).toThrow(/must read a float32 dense feed/);
    expect(() => plan({ values: [{ kind: 'feed', dtype: 'float32', shape: [-1], index: 0 }], feeds: [{ name: 'ids', kind: 'ids' }] })).toThrow(/must read a float32 dense feed/);
  });
  test('feeds of the wrong typed-array kind are refused by name', () => {
    const p = plan({ values: [{ kind: 'feed', dtype: 'float32', shape: [-1], index: 0 }], feeds: [{ name: 'x', kind: 'dense' }] });
    expect(() => native.planRun(p, 4, [new Int32Array(4) as unknown as Float32Array], [], [0])).toThrow(/feature 'x' must be float32/);
    expect(() => native.planRun(p, 4, [new Float32Array(3)], [], [0])).toThrow(/feature 'x' has 3 values but 4 were expected/);
    expect(() => native.planRun(p, 4, [], [], [0])).toThrow(/takes 1 feeds, got 0/);
  });
  test('a reshape whose element count overflows is an Error, not a huge view', async () => {
    const B = 4294967296;
    const p = plan({
      values: [
        { kind: 'temp', dtype: 'float32', shape: [0], index: 0 },
        { kind: 'alias', dtype: 'float32', shape: [B, B], index: 0 },
        { kind: 'temp', dtype: 'float32', shape: [0], index: 1 },
        { kind: 'alias', dtype: 'float32', shape: [B, B], index: 2 },
      ],
      steps: [{ kind: 'kernel', name: 'mm', kernel: 'matmul', inputs: [1, 1], outputs: [3] }],
      storageCount: 2,
    });
    await expect(native.planRun(p, 0, [], [], [])).rejects.toThrow(/more than 2\^53 elements/);
  });
  test('a long chain of reshapes runs without deep recursion', async () => {
    const values: Array<Record<string, unknown>> = [{ kind: 'temp', dtype: 'float32', shape: [1], index: 0 }];
    for (let i = 0; i < 100_000; i++) values.push({ kind: 'alias', dtype: 'float32', shape: [1], index: i });
    const p = plan({ values, storageCount: 1, steps: [{ kind: 'kernel', name: 'fill', kernel: 'unary', inputs: [0], outputs: [0], attrs: [3] }] });
    const out = await native.planRun(p, 0, [], [], [values.length - 1]);
    expect(out.outputs[0].length).toBe(1);
  });
  test('fetch, value and step indices are checked', () => {
    const p = plan({ values: [{ kind: 'temp', dtype: 'float32', shape: [1], index: 0 }], storageCount: 1 });
    expect(() => native.planRun(p, 0, [], [], [5])).toThrow(/fetch\[0\] must name a value/);
    expect(() => native.planRun(p, 0, [], [], [Number.NaN])).toThrow(/fetch\[0\] must name a value/);
    expect(() => plan({ values: [{ kind: 'temp', dtype: 'float32', shape: [1], index: 3 }], storageCount: 1 })).toThrow(/no storage slot/);
    expect(() => plan({ values: [{ kind: 'alias', dtype: 'float32', shape: [1], index: 0 }] })).toThrow(/must view an earlier value/);
    expect(() => plan({ steps: [{ kind: 'kernel', name: 'k', kernel: 'no_such_kernel', inputs: [], outputs: [] }] })).toThrow(/no kernel named 'no_such_kernel'/);
    expect(() => plan({ steps: [{ kind: 'kernel', name: 'k', kernel: 'unary', inputs: [7], outputs: [] }] })).toThrow(/names no value 7/);
    expect(() => native.planRun({} as never, 0, [], [], [])).toThrow(/must be a plan/);
  });
});
