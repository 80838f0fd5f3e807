// hb.estimator end to end: a model that must learn a planted signal, checkpoints that
// resume bit-identically and survive corruption, predict, and the errors users hit.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { CompiledStep } from '../lib/graph/compiled_step';
import { Graph, VariableStore } from '../lib/graph/graph';
import { placeholder } from '../lib/graph/ops/sources';
import { native } from '../lib/native';
import { dataset, EVAL, numDense, tables, TRAIN } from './support/planted_data';

const fc = hb.featureColumn;
const { ModeKeys } = hb.estimator;
const m = hb.math;

function columns() {
  return {
    dense: Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`)),
    sparse: tables.map((t) => fc.embeddingColumn(fc.categoricalColumnWithIdentity(t.name, t.vocabularySize), 8, { initializer: hb.initializers.truncatedNormal({ stddev: 0.1, seed: 3 }) })),
  };
}

interface ModelParams {
  makeOptimizers?: () => { sparse: hb.train.Optimizer; dense: hb.train.Optimizer };
  lossScale?: number;
}

function makeModelFn() {
  const cols = columns();
  return (features: Record<string, unknown>, labels: unknown, mode: hb.estimator.Mode, params: Record<string, unknown>) => {
    const p = params as ModelParams;
    // Counts -> log(1 + x), natively.
    const dense = m.log(m.addConstant(hb.nn.relu(fc.DenseFeatures(cols.dense)(features)), 1));
    const sparse = fc.DenseFeatures(cols.sparse)(features);
    const x = m.concat([dense, sparse], 1);
    const h = hb.layers.dense(x, 16, { activation: hb.nn.relu, kernelInitializer: hb.initializers.glorotUniform({ seed: 1 }) });
    const logits = hb.layers.dense(h, 1, { kernelInitializer: hb.initializers.glorotUniform({ seed: 2 }) });
    const probs = hb.nn.sigmoid(logits);
    if (mode === ModeKeys.PREDICT) return hb.estimator.EstimatorSpec({ mode, predictions: { probs, logits } });
    const y = labels as hb.SymbolicTensor;
    let loss = hb.losses.sigmoidCrossEntropy(y, logits);
    if (p.lossScale !== undefined) loss = m.scale(loss, p.lossScale);
    if (mode === ModeKeys.EVAL) {
      // Predicted class: probs > 0.5. The share of positives tells what always guessing the
      // majority class would score.
      const predicted = m.greater(m.addConstant(probs, -0.5), m.scale(probs, 0));
      return hb.estimator.EstimatorSpec({ mode, loss, evalMetricOps: { auc: hb.metrics.auc(y, probs), accuracy: hb.metrics.accuracy(y, predicted), positives: hb.metrics.mean(y) } });
    }
    if (!p.makeOptimizers) {
      const opt = new hb.train.AdagradOptimizer({ learningRate: 0.1 });
      return hb.estimator.EstimatorSpec({ mode, loss, trainOp: opt.minimize(loss) });
    }
    // One optimizer for the tables, another for the MLP, as HybridBackend models often do.
    const made = p.makeOptimizers();
    const tableVars = cols.sparse.map((c) => c.variable);
    const mlpVars = hb.train.trainableVariables().filter((v) => !tableVars.includes(v));
    return hb.estimator.EstimatorSpec({ mode, loss, trainOp: [made.sparse.minimize(loss, { varList: tableVars }), made.dense.minimize(loss, { varList: mlpVars })] });
  };
}

const quiet = () => new hb.estimator.RunConfig({ log: () => undefined, progressBar: false });
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'hb-estimator-'));

describe('Estimator: a DLRM-like model learns a planted signal', () => {
  test('eval AUC rises well above 0.5 and the loss falls', async () => {
    const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), config: quiet() });
    const evalInput = dataset(4096, EVAL, 1024);
    const before = await est.evaluate(evalInput);
    await est.train(dataset(40_000, TRAIN), { maxSteps: 150 });
    const after = await est.evaluate(evalInput);
    expect(est.globalStep).toBe(150);
    expect(after.globalStep).toBe(150);
    expect(before.auc).toBeGreaterThan(0.3);
    expect(before.auc).toBeLessThan(0.7);
    expect(after.auc).toBeGreaterThan(0.7);
    expect(after.loss).toBeLessThan(before.loss - 0.05);
    // Better than always guessing the majority class...
    expect(after.accuracy).toBeGreaterThan(Math.max(after.positives, 1 - after.positives) + 0.01);
    // ...and the metric is what the predictions say, counted here in JS.
    let correct = 0;
    let count = 0;
    for await (const batch of evalInput()) {
      const labels = batch.labels as Float32Array;
      let row = 0;
      for await (const p of est.predict(() => [batch])) {
        correct += Number((p.probs as number) > 0.5) === labels[row++] ? 1 : 0;
        count++;
      }
    }
    expect(after.accuracy).toBeCloseTo(correct / count, 5);
  });
});

async function snapshot(est: hb.estimator.Estimator): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  for (const [name, v] of est.variables) out.set(name, (await v.data()) as Float32Array);
  return out;
}

describe('Estimator checkpoints', () => {
  const adamAndFtrl = () => ({ sparse: new hb.train.FtrlOptimizer({ learningRate: 0.05 }), dense: new hb.train.AdamOptimizer({ learningRate: 0.01 }) });

  test('training resumes from the latest checkpoint with the same step and bit-identical parameters', async () => {
    const dir = tmp();
    const params = { makeOptimizers: adamAndFtrl };
    const input = dataset(20_000, TRAIN);
    const first = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, params, config: new hb.estimator.RunConfig({ saveCheckpointsSteps: 10, keepCheckpointMax: 2, log: () => undefined, progressBar: false }) });
    await first.train(input, { steps: 20 });
    expect(first.globalStep).toBe(20);
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.safetensors')).sort();
    expect(files).toEqual(['model.ckpt-10.safetensors', 'model.ckpt-20.safetensors']);
    // One naming scheme, TensorFlow's: variables, tables, and each slot as
    // <variable>/<optimizer name>[_1].
    const saved = [...(await hb.estimator.loadCheckpoint(path.join(dir, 'model.ckpt-20.safetensors'))).tensors.keys()].sort();
    expect(saved).toEqual(expect.arrayContaining([
      'dense/kernel', 'dense/kernel/Adam', 'dense/kernel/Adam_1', 'dense_1/bias/Adam',
      'user_embedding/embedding_weights', 'user_embedding/embedding_weights/Ftrl', 'user_embedding/embedding_weights/Ftrl_1',
      'item_embedding/embedding_weights/Ftrl',
    ]));
    expect(saved.every((n) => [...first.variables.keys()].includes(n) || /\/(Adam|Ftrl)(_1)?$/.test(n))).toBe(true);

    // A new Estimator on the same modelDir picks up step 20 and the same values...
    const resumed = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, params, config: quiet() });
    await resumed.train(input, { steps: 0 });
    expect(resumed.globalStep).toBe(20);
    const a = await snapshot(first);
    const b = await snapshot(resumed);
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    for (const [k, v] of a) expect(Buffer.from((b.get(k) as Float32Array).buffer).equals(Buffer.from(v.buffer))).toBe(true);

    // ...and ten more steps from either (same batches) give the same bits: slots and
    // Adam's beta powers came back too.
    await first.train(input, { steps: 10 });
    await resumed.train(input, { steps: 10 });
    expect(resumed.globalStep).toBe(30);
    const a2 = await snapshot(first);
    const b2 = await snapshot(resumed);
    for (const [k, v] of a2) expect(Buffer.from((b2.get(k) as Float32Array).buffer).equals(Buffer.from(v.buffer))).toBe(true);
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.safetensors')).length).toBe(2);
  });

  test("an Estimator that has not trained evaluates and predicts on the trainer's latest checkpoint; one that trained keeps its own values", async () => {
    const dir = tmp();
    const input = dataset(8192, TRAIN);
    const evalInput = dataset(1024, EVAL);
    const config = () => new hb.estimator.RunConfig({ saveCheckpointsSteps: 1000, log: () => undefined, progressBar: false });
    const probs = async (est: hb.estimator.Estimator) => {
      const out: number[] = [];
      for await (const p of est.predict(dataset(2048, EVAL, 64))) { out.push(p.probs as number); if (out.length === 64) break; }
      return out;
    };
    const trainer = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, config: config() });
    // Watching the directory before any checkpoint is there: the initial values, step 0.
    const watcher = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, config: config() });
    expect((await watcher.evaluate(evalInput)).globalStep).toBe(0);
    await trainer.train(input, { steps: 2 });
    expect((await watcher.evaluate(evalInput)).globalStep).toBe(2);
    expect(await probs(watcher)).toEqual(await probs(trainer));
    // The trainer goes on: the watcher follows (before, it stayed at its first restore).
    await trainer.train(input, { steps: 3 });
    const atFive = await watcher.evaluate(evalInput);
    expect(atFive.globalStep).toBe(5);
    expect(atFive.loss).toBe((await trainer.evaluate(evalInput)).loss);
    expect(await probs(watcher)).toEqual(await probs(trainer));
    // Another Estimator resumes and trains on to step 8: the first trainer holds values it
    // trained itself, newer than its last restore, and keeps them.
    const resumed = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, config: config() });
    await resumed.train(input, { steps: 3 });
    expect(resumed.globalStep).toBe(8);
    expect((await trainer.evaluate(evalInput)).globalStep).toBe(5);
    expect((await watcher.evaluate(evalInput)).globalStep).toBe(8);
  });

  test('a variable restored as soon as it is made is not filled by its initializer first (zeros, then the checkpoint)', async () => {
    const dir = tmp();
    const input = dataset(4096, TRAIN);
    const first = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, config: quiet() });
    await first.train(input, { steps: 3 });
    const fills: string[] = [];
    const fill = native.tensorFill;
    const spy = jest.spyOn(native, 'tensorFill').mockImplementation((shape, device, spec) => {
      fills.push(spec.kind);
      return fill.call(native, shape, device, spec);
    });
    try {
      const resumed = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, config: quiet() });
      const evalInput = dataset(2048, EVAL, 1024);
      const [a, b] = [await first.evaluate(evalInput), await resumed.evaluate(evalInput)];
      expect(b).toEqual(a);
      // Tables and kernels are made as zeros (constant fills), never drawn (truncatedNormal, uniform).
      expect(fills.length).toBeGreaterThan(0);
      expect(fills.filter((k) => k !== 'constant')).toEqual([]);
      // A new model whose variables no checkpoint holds draws them as its initializers say.
      fills.length = 0;
      await new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: tmp(), config: quiet() }).evaluate(evalInput);
      expect(fills.filter((k) => k !== 'constant').length).toBeGreaterThan(0);
    } finally {
      spy.mockRestore();
    }
  });

  test('a truncated latest checkpoint is refused and the previous one loads', async () => {
    const dir = tmp();
    const input = dataset(8192, TRAIN);
    const logs: string[] = [];
    const config = new hb.estimator.RunConfig({ saveCheckpointsSteps: 5, log: (l) => logs.push(l), progressBar: false });
    const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, config });
    await est.train(input, { steps: 10 });
    const atFive = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, config: quiet() });
    const latest = path.join(dir, 'model.ckpt-10.safetensors');
    const size = fs.statSync(latest).size;
    fs.truncateSync(latest, size - 100);
    await expect(hb.estimator.loadCheckpoint(latest)).rejects.toThrow(/model\.ckpt-10\.safetensors/);
    await atFive.train(input, { steps: 0 });
    expect(atFive.globalStep).toBe(5);
  });
});

describe('Estimator predict and errors', () => {
  test('training steps go through the worker, so the event loop turns between them; small predictions may not', async () => {
    const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), config: quiet() });
    const batches: hb.estimator.Batch[] = [];
    for await (const b of dataset(8 * 40, TRAIN, 8)()) batches.push(b);
    // Turns of the event loop while `work` runs (timers, signals and input are served there).
    const turnsDuring = async (work: () => Promise<unknown>) => {
      let turns = 0;
      let done = false;
      const count = () => {
        turns++;
        if (!done) setImmediate(count);
      };
      setImmediate(count);
      await work();
      done = true;
      return turns;
    };
    await est.train(() => batches.slice(0, 2), { steps: 2 }); // built and warm
    // Premade batches of 8 rows: each step is quick, yet training must not hold the loop
    // (steps run on the JS thread gave 0 turns; how many it takes otherwise depends on how
    // many finished steps one turn collects).
    expect(await turnsDuring(() => est.train(() => batches, { steps: 40 }))).toBeGreaterThan(0);
    const predictions: number[] = [];
    for await (const p of est.predict(() => batches.slice(0, 2))) predictions.push(p.probs as number);
    expect(predictions).toHaveLength(16);
  });

  test('a batch object passed again with new values in its arrays is read anew, in training and predict', async () => {
    // A caller may reuse one input buffer, overwriting its arrays between steps. Before,
    // the steps memoised their transforms by batch object: training saw the first batch's
    // ids every step and predict answered the first values again (checked).
    const batches: hb.estimator.Batch[] = [];
    for await (const b of dataset(64 * 4, TRAIN, 64)()) batches.push(b);
    // The holder keeps its identity and its features object's; the dense arrays are
    // overwritten in place, the ragged ids (of varying lengths) replaced.
    const copyOf = (b: hb.estimator.Batch): hb.estimator.Batch => ({
      features: Object.fromEntries(
        Object.entries(b.features).map(([k, v]) => [k, v instanceof hb.Ragged ? hb.ragged(v.values.slice(), v.rowSplits.slice()) : (v as Float32Array).slice()]),
      ),
      labels: (b.labels as Float32Array).slice(),
    });
    const reused = copyOf(batches[0]);
    const fill = (from: hb.estimator.Batch) => {
      for (const [k, v] of Object.entries(from.features)) {
        if (v instanceof hb.Ragged) {
          (reused.features as Record<string, unknown>)[k] = hb.ragged(v.values.slice(), v.rowSplits.slice());
        } else {
          (reused.features[k] as Float32Array).set(v as Float32Array);
        }
      }
      (reused.labels as Float32Array).set(from.labels as Float32Array);
      return reused;
    };
    const seeded = () => new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, tfRandomSeed: 3 });
    const fresh = new hb.estimator.Estimator({ modelFn: makeModelFn(), config: seeded() });
    await fresh.train(() => batches.map(copyOf), { steps: 4 });
    const refilled = new hb.estimator.Estimator({ modelFn: makeModelFn(), config: seeded() });
    // The buffer is refilled only when the loop asks for the next batch.
    await refilled.train(() => (function* () { for (const b of batches) yield fill(b); })(), { steps: 4 });
    const a = await snapshot(fresh);
    const b = await snapshot(refilled);
    expect([...b.keys()]).toEqual([...a.keys()]);
    for (const [name, values] of a) expect(Buffer.from(b.get(name)!.buffer).equals(Buffer.from(values.buffer))).toBe(true);
    const predict = async (batch: hb.estimator.Batch) => {
      const out: number[] = [];
      for await (const p of fresh.predict(() => [batch])) out.push(p.probs as number);
      return out;
    };
    const first = await predict(fill(batches[0]));
    const second = await predict(fill(batches[1]));
    expect(second).toEqual(await predict(copyOf(batches[1])));
    expect(second).not.toEqual(first);
  });

  test('two evaluations at once each report their own input, as one after the other', async () => {
    // The metrics of one model share native accumulators: before, each of two concurrent
    // evaluations reset them and counted the other's rows too (checked).
    const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), config: quiet() });
    await est.train(dataset(4096, TRAIN), { steps: 4 });
    // Batches in memory: the two evaluations' steps take turns at every await.
    const inMemory = async (input: hb.estimator.InputFn) => {
      const out: hb.estimator.Batch[] = [];
      for await (const b of (await input()) as AsyncIterable<hb.estimator.Batch>) out.push(b);
      return out;
    };
    const first = await inMemory(dataset(2048, EVAL, 256));
    const other = await inMemory(() => hb.data.Dataset.synthetic({ numDense, tables, numSamples: 512, seed: 23 }).batch(128));
    const alone = [await est.evaluate(() => first), await est.evaluate(() => other)];
    expect(alone[0].auc).not.toBe(alone[1].auc);
    expect(await Promise.all([est.evaluate(() => first), est.evaluate(() => other)])).toEqual(alone);
  });

  test('predict yields one object per example with each prediction', async () => {
    const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), config: quiet() });
    const rows: Array<Record<string, number | Float32Array>> = [];
    for await (const p of est.predict(() => hb.data.Dataset.synthetic({ numDense, tables, numSamples: 600, seed: 11 }).batch(256))) rows.push(p);
    expect(rows.length).toBe(600);
    expect(typeof rows[0].probs).toBe('number');
    expect(rows[0].probs as number).toBeGreaterThan(0);
    expect(rows[0].probs as number).toBeLessThan(1);
    const batches: Array<Record<string, number | Float32Array>> = [];
    for await (const p of est.predict(() => hb.data.Dataset.synthetic({ numDense, tables, numSamples: 600, seed: 11 }).batch(256), { yieldSingleExamples: false })) batches.push(p);
    expect(batches.map((b) => (b.probs as Float32Array).length)).toEqual([256, 256, 88]);
  });

  test("RunConfig's device is checked when the config is made, and the model's variables live there", async () => {
    expect(() => new hb.estimator.RunConfig({ device: 'tpu' as hb.DeviceSpec })).toThrow(/RunConfig: device.*'tpu'/);
    if (hb.backend().cuda.deviceCount === 0) expect(() => new hb.estimator.RunConfig({ device: 'cuda' })).toThrow(/RunConfig: device/);
    const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), config: new hb.estimator.RunConfig({ device: 'cpu', log: () => undefined, progressBar: false }) });
    expect(est.device).toBe('cpu');
    await est.train(dataset(512, TRAIN), { steps: 1 });
    expect(est.variables.size).toBeGreaterThan(0);
    for (const v of est.variables.values()) expect(v.device).toBe('cpu');
  });

  test('a TRAIN spec without a loss is an Error', async () => {
    const est = new hb.estimator.Estimator({
      modelFn: (features, _labels, mode) => hb.estimator.EstimatorSpec({ mode, predictions: fc.DenseFeatures(columns().dense)(features) }),
      config: quiet(),
    });
    await expect(est.train(dataset(512, TRAIN), { steps: 1 })).rejects.toThrow(/TRAIN spec needs a loss/);
  });

  test('a shape mismatch names the op', async () => {
    const est = new hb.estimator.Estimator({
      modelFn: (features, labels, mode) => {
        const x = fc.DenseFeatures(columns().dense)(features);
        const y = hb.layers.dense(x, 3, { name: 'tower' });
        const bad = m.add(y, hb.layers.dense(x, 2, { name: 'other' }), 'mix');
        return hb.estimator.EstimatorSpec({ mode, loss: m.reduceMean(bad), trainOp: new hb.train.GradientDescentOptimizer({ learningRate: 0.1 }).minimize(m.reduceMean(bad)) });
      },
      config: quiet(),
    });
    await expect(est.train(dataset(512, TRAIN), { steps: 1 })).rejects.toThrow(/mix: shapes \[batch, 3\] and \[batch, 2\] do not broadcast/);
  });

  test('a NaN loss stops training with an error naming the step, before any update', async () => {
    const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), params: { lossScale: 1 }, config: quiet() });
    await est.train(dataset(2048, TRAIN), { steps: 3 });
    const before = await snapshot(est);
    const poisoned = () => (async function* () {
      for await (const batch of dataset(512, TRAIN)()) {
        const i1 = Float32Array.from(batch.features.I1 as Float32Array);
        i1.fill(Number.POSITIVE_INFINITY);
        yield { features: { ...batch.features, I1: i1 }, labels: batch.labels };
      }
    })();
    await expect(est.train(poisoned, { steps: 2 })).rejects.toMatchObject({
      code: 'HB_ERR_NAN',
      message: expect.stringMatching(/training stopped at step 4: loss is NaN or infinite \(.* at index \d+ of \[\]\); no update was applied/),
    });
    expect(est.globalStep).toBe(3);
    const after = await snapshot(est);
    for (const [k, v] of before) expect(Buffer.from((after.get(k) as Float32Array).buffer).equals(Buffer.from(v.buffer))).toBe(true);
  });

  test('trainAndEvaluate evaluates every N steps and returns the last metrics', async () => {
    const logs: string[] = [];
    const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), config: new hb.estimator.RunConfig({ log: (l) => logs.push(l), logStepCountSteps: 10, progressBar: false }) });
    const result = await hb.estimator.trainAndEvaluate(
      est,
      new hb.estimator.TrainSpec({ inputFn: dataset(20_000, TRAIN), maxSteps: 40 }),
      new hb.estimator.EvalSpec({ inputFn: dataset(2048, EVAL, 1024), steps: 2 }),
      { evalEveryNIter: 20 },
    );
    expect(result.globalStep).toBe(40);
    expect(result.auc).toBeGreaterThan(0.5);
    expect(logs.filter((l) => l.startsWith('evaluation')).length).toBe(2);
    expect(logs.some((l) => /^step 10: loss = /.test(l))).toBe(true);
  });

  test('a rerun whose maxSteps the restored step is already past trains nothing and evaluates once, also with evalEveryNIter', async () => {
    const dir = tmp();
    const first = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, config: quiet() });
    await first.train(dataset(4096, TRAIN), { steps: 10 });
    for (const every of [undefined, 2]) {
      const logs: string[] = [];
      const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, config: new hb.estimator.RunConfig({ log: (l) => logs.push(l), progressBar: false }) });
      const result = await hb.estimator.trainAndEvaluate(
        est,
        new hb.estimator.TrainSpec({ inputFn: dataset(4096, TRAIN), maxSteps: 5 }),
        new hb.estimator.EvalSpec({ inputFn: dataset(1024, EVAL), steps: 1 }),
        every === undefined ? {} : { evalEveryNIter: every },
      );
      expect(result.globalStep).toBe(10);
      expect(logs.filter((l) => l.startsWith('evaluation')).length).toBe(1);
    }
  });

  test('evaluate with steps reads that many batches of its input, no more', async () => {
    const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), config: quiet() });
    let read = 0;
    const counted = async function* () {
      for await (const batch of dataset(4096, EVAL)()) {
        read++;
        yield batch;
      }
    };
    const result = await est.evaluate(counted, { steps: 3 });
    expect(read).toBe(3);
    expect(Number.isFinite(result.loss)).toBe(true);
  });

  test('maxSteps counts from the restored global step: a finished job rerun trains no more', async () => {
    const dir = tmp();
    const run = async () => {
      const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), modelDir: dir, config: quiet() });
      await hb.estimator.trainAndEvaluate(
        est,
        new hb.estimator.TrainSpec({ inputFn: dataset(8192, TRAIN), maxSteps: 12 }),
        new hb.estimator.EvalSpec({ inputFn: dataset(1024, EVAL), steps: 1 }),
        { evalEveryNIter: 5 },
      );
      return est.globalStep;
    };
    expect(await run()).toBe(12);
    expect(await run()).toBe(12);
    const steps = fs.readdirSync(dir).filter((f) => f.endsWith('.safetensors')).map((f) => Number(/-(\d+)\./.exec(f)![1]));
    expect(Math.max(...steps)).toBe(12);
  });
});

describe('reproducible runs: RunConfig tfRandomSeed', () => {
  // Every initializer left unseeded: the embedding tables' default and the dense layers'.
  const unseededModelFn = () => {
    const dense = Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`));
    const sparse = tables.map((t) => fc.embeddingColumn(fc.categoricalColumnWithIdentity(t.name, t.vocabularySize), 8));
    return (features: Record<string, unknown>, labels: unknown, mode: hb.estimator.Mode) => {
      const x = m.concat([m.log(m.addConstant(hb.nn.relu(fc.DenseFeatures(dense)(features)), 1)), fc.DenseFeatures(sparse)(features)], 1);
      const logits = hb.layers.dense(hb.layers.dense(x, 16, { activation: hb.nn.relu }), 1);
      const loss = hb.losses.sigmoidCrossEntropy(labels as hb.SymbolicTensor, logits);
      return hb.estimator.EstimatorSpec({ mode, loss, trainOp: new hb.train.AdagradOptimizer({ learningRate: 0.1 }).minimize(loss) });
    };
  };
  const run = async (tfRandomSeed: number | undefined) => {
    const est = new hb.estimator.Estimator({ modelFn: unseededModelFn(), config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, tfRandomSeed }) });
    await est.train(dataset(4096, TRAIN, 256), { maxSteps: 8 });
    return snapshot(est);
  };
  const same = (a: Map<string, Float32Array>, b: Map<string, Float32Array>) =>
    a.size === b.size && [...a].every(([k, v]) => b.has(k) && Buffer.from(v.buffer).equals(Buffer.from(b.get(k)!.buffer)));

  test('two models built at once, their modelFns awaiting midway, keep their own graphs and seeds', async () => {
    // The graph being built and the graph-level seed were globals: the second build's,
    // set while the first awaited, took over the first's ops and variables (checked).
    const awaitingMidway = () => {
      const dense = Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`));
      const sparse = tables.map((t) => fc.embeddingColumn(fc.categoricalColumnWithIdentity(t.name, t.vocabularySize), 8));
      return async (features: Record<string, unknown>, labels: unknown, mode: hb.estimator.Mode) => {
        const x = m.concat([m.log(m.addConstant(hb.nn.relu(fc.DenseFeatures(dense)(features)), 1)), fc.DenseFeatures(sparse)(features)], 1);
        await new Promise((r) => setTimeout(r, 20));
        const logits = hb.layers.dense(hb.layers.dense(x, 16, { activation: hb.nn.relu }), 1);
        const loss = hb.losses.sigmoidCrossEntropy(labels as hb.SymbolicTensor, logits);
        return hb.estimator.EstimatorSpec({ mode, loss, trainOp: new hb.train.AdagradOptimizer({ learningRate: 0.1 }).minimize(loss) });
      };
    };
    const estimatorOf = (tfRandomSeed: number) =>
      new hb.estimator.Estimator({ modelFn: awaitingMidway(), config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, tfRandomSeed }) });
    // Batches in memory: both builds start at once.
    const batches: hb.estimator.Batch[] = [];
    for await (const b of dataset(2048, TRAIN, 256)()) batches.push(b);
    const trained = async (est: hb.estimator.Estimator) => {
      await est.train(() => batches.slice(0, 4), { maxSteps: 4 });
      return snapshot(est);
    };
    const alone = [await trained(estimatorOf(7)), await trained(estimatorOf(8))];
    const together = await Promise.all([trained(estimatorOf(7)), trained(estimatorOf(8))]);
    for (const i of [0, 1]) {
      expect([...together[i].keys()].sort()).toEqual([...alone[i].keys()].sort());
      expect(same(together[i], alone[i])).toBe(true);
    }
  });

  test('the same seed trains to bit-identical variables; another seed, or none, does not', async () => {
    const first = await run(7);
    expect(first.size).toBeGreaterThan(4);
    expect(same(first, await run(7))).toBe(true);
    expect(same(first, await run(8))).toBe(false);
    expect(same(await run(undefined), await run(undefined))).toBe(false);
    expect(() => new hb.estimator.RunConfig({ tfRandomSeed: -1 })).toThrow('RunConfig: tfRandomSeed must be an integer >= 0, got -1');
  });
});

describe('hb.models', () => {
  test('dlrmModelFn trains through the Estimator', async () => {
    const modelFn = hb.models.dlrmModelFn({
      denseFeatures: Array.from({ length: numDense }, (_, i) => `I${i + 1}`),
      tables: tables.map((t) => ({ name: t.name, numBuckets: t.vocabularySize })),
      embeddingDim: 4,
      bottomMlp: [8, 4],
      topMlp: [8],
    });
    const est = new hb.estimator.Estimator({ modelFn, config: quiet() });
    await est.train(dataset(2048, TRAIN, 256), { maxSteps: 3 });
    expect(est.globalStep).toBe(3);
    expect(() => hb.models.dlrmModelFn({ denseFeatures: [], tables: [], embeddingDim: 4, bottomMlp: [8], topMlp: [] })).toThrow(/bottom MLP must end at embeddingDim \(4\)/);
  });
});

describe('trainAndEvaluate stopping', () => {
  test('a hook that returns false ends the run (one final evaluation)', async () => {
    const logs: string[] = [];
    const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), config: new hb.estimator.RunConfig({ log: (l) => logs.push(l), progressBar: false }) });
    const stopAtThree = { afterRun: (info: { globalStep: number }) => (info.globalStep >= 3 ? false : undefined) };
    const result = await hb.estimator.trainAndEvaluate(
      est,
      new hb.estimator.TrainSpec({ inputFn: dataset(20_000, TRAIN), hooks: [stopAtThree] }),
      new hb.estimator.EvalSpec({ inputFn: dataset(1024, EVAL, 1024), steps: 1 }),
      { evalEveryNIter: 100 },
    );
    expect(result.globalStep).toBe(3);
    expect(logs.filter((l) => l.startsWith('evaluation')).length).toBe(1);
  });

  test('evaluations by time lose no training batch', async () => {
    const est = new hb.estimator.Estimator({ modelFn: makeModelFn(), config: quiet() });
    const batches = 12;
    const result = await hb.estimator.trainAndEvaluate(
      est,
      new hb.estimator.TrainSpec({ inputFn: dataset(256 * batches, TRAIN) }),
      new hb.estimator.EvalSpec({ inputFn: dataset(1024, EVAL, 1024), steps: 1, throttleSecs: 0 }),
    );
    expect(result.globalStep).toBe(batches);
  });
});

describe('loss weights', () => {
  test('a number, per-example weights and [batch, 1] weights over [batch, 2] losses follow TF', async () => {
    const graph = new Graph(new VariableStore(), 'train', 'cpu');
    const labels = Float32Array.from([1, 0, 1, 0, 0, 1]);
    const predictions = Float32Array.from([0.5, 0.5, 1, 1, 0, 2]);
    const weights = Float32Array.from([1, 0, 3]);
    const y = placeholder(graph, { name: 'y', dtype: 'float32', shape: [-1, 2], build: () => labels });
    const p = placeholder(graph, { name: 'p', dtype: 'float32', shape: [-1, 2], build: () => predictions });
    const w = placeholder(graph, { name: 'w', dtype: 'float32', shape: [-1, 1], build: () => weights });
    const plain = hb.losses.meanSquaredError(y, p);
    const scaled = hb.losses.meanSquaredError(y, p, { weights: 2 });
    const broadcast = hb.losses.meanSquaredError(y, p, { weights: w });
    const step = new CompiledStep(graph, [plain, scaled, broadcast]);
    const out = (await step.run(await step.prepare({ features: { y: hb.tensor(labels, [3, 2]) } }))).outputs.map((o) => (o as Float32Array)[0]);
    const sq = [0.25, 0.25, 0, 1, 0, 1];
    expect(out[0]).toBeCloseTo(sq.reduce((a, b) => a + b) / 6, 6);
    // SUM_BY_NONZERO_WEIGHTS: sum(w * l) / count(w != 0), weights broadcast to [3, 2].
    expect(out[1]).toBeCloseTo((2 * sq.reduce((a, b) => a + b)) / 6, 6);
    expect(out[2]).toBeCloseTo((1 * (0.25 + 0.25) + 0 * (0 + 1) + 3 * (0 + 1)) / 4, 6);
  });
});
