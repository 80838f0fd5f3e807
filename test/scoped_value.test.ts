// Values that follow a model build through its awaits (planned variables, tables the
// restore will fill, the memory budget), and leave no promise hooks behind once the build
// is done: Node runs its hooks on every promise while an AsyncLocalStorage is enabled.
import { spawnSync } from 'child_process';
import * as path from 'path';
import { ScopedValue } from '../lib/tensor/scoped_value';

describe('ScopedValue', () => {
  test('each run sees its own value through its awaits, others none; a failed run ends too', async () => {
    const scoped = new ScopedValue<string>();
    const seen: Array<string | undefined> = [];
    const body = (tag: string) => async () => {
      await new Promise((r) => setTimeout(r, 5));
      seen.push(`${tag}:${scoped.get()}`);
      await null;
      return scoped.get();
    };
    const [a, b] = await Promise.all([scoped.run('a', body('a')), scoped.run('b', body('b')), (async () => seen.push(`outside:${scoped.get()}`))()]);
    expect([a, b]).toEqual(['a', 'b']);
    expect(seen.sort()).toEqual(['a:a', 'b:b', 'outside:undefined']);
    await expect(scoped.run('c', async () => Promise.reject(new Error('build failed')))).rejects.toThrow('build failed');
    expect(() => scoped.run('d', () => { throw new Error('at once'); })).toThrow('at once');
    expect(await scoped.run('e', async () => scoped.get())).toBe('e');
    expect(scoped.get()).toBeUndefined();
  });

  test('in a child process: after a memory plan, training and a restore, promises carry no hooks', () => {
    // With Node's promise hooks on, each promise is an async resource with an id of its
    // own, seen after an await; with them off, code after an await runs under the id of
    // what started it (0 here).
    const dist = JSON.stringify(path.resolve(__dirname, '..', 'dist', 'index.js'));
    const script = `
      const hb = require(${dist});
      const fs = require('fs'), os = require('os'), path = require('path');
      const { executionAsyncId } = require('async_hooks');
      const hooked = async () => { await null; const a = executionAsyncId(); await null; return a !== 0 || executionAsyncId() !== 0; };
      const fc = hb.featureColumn;
      const modelFn = (features, labels, mode) => {
        const x = fc.DenseFeatures([fc.embeddingColumn(fc.categoricalColumnWithIdentity('user', 100), 4)])(features);
        const loss = hb.losses.sigmoidCrossEntropy(labels, hb.layers.dense(x, 1, { name: 'logit' }));
        return hb.estimator.EstimatorSpec({ mode, loss, trainOp: new hb.train.AdagradOptimizer({ learningRate: 0.1 }).minimize(loss) });
      };
      const batch = { features: { user: BigInt64Array.of(1n, 2n, 3n, 4n) }, labels: Float32Array.of(0, 1, 0, 1) };
      const modelDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-scoped-'));
      (async () => {
        const before = await hooked();
        const config = new hb.estimator.RunConfig({ log: () => undefined, progressBar: false });
        const first = new hb.estimator.Estimator({ modelFn, modelDir, config });
        await hb.estimator.memoryPlan(first, batch);
        await first.train(() => [batch, batch], { maxSteps: 2 });
        const restored = new hb.estimator.Estimator({ modelFn, modelDir, config });
        await restored.train(() => [batch], { maxSteps: 3 });
        console.log(JSON.stringify({ before, after: await hooked(), step: restored.globalStep }));
        fs.rmSync(modelDir, { recursive: true, force: true });
      })().catch((e) => { console.log('ERROR ' + e.message); process.exit(2); });`;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HB_DEVICE: 'cpu' } });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    expect(JSON.parse(child.stdout.trim())).toEqual({ before: false, after: false, step: 3 });
  });
});
