// hb.train.MonitoredTrainingSession in one process: HybridBackend's first example's loop
// (build on hb.train.inputs, `while (!sess.shouldStop()) await sess.run(trainOp)`), its
// results, hooks, checkpoints and errors. Under hb-ts launch: test/sharded_training.test.ts.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { pinDevice } from './support/devices';
import { dataset, numDense, TRAIN } from './support/planted_data';

pinDevice('cpu');

async function model(source: Parameters<typeof hb.train.inputs>[0]) {
  const { features, labels } = await hb.train.inputs(source);
  const fc = hb.featureColumn;
  const columns = [
    fc.embeddingColumn(fc.categoricalColumnWithIdentity('user', 2000), 8, { initializer: hb.initializers.truncatedNormal({ stddev: 0.1, seed: 1 }) }),
    fc.embeddingColumn(fc.categoricalColumnWithIdentity('item', 1000), 8, { initializer: hb.initializers.truncatedNormal({ stddev: 0.1, seed: 2 }) }),
    ...Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`)),
  ];
  const net = hb.featureColumn.DenseFeatures(columns)(features) as hb.SymbolicTensor;
  const logits = hb.layers.dense(hb.layers.dense(net, 16, { activation: 'relu', kernelInitializer: hb.initializers.glorotUniform({ seed: 3 }) }), 1, { kernelInitializer: hb.initializers.glorotUniform({ seed: 4 }) });
  const loss = hb.losses.sigmoidCrossEntropy(labels as hb.SymbolicTensor, logits);
  const probabilities = hb.nn.sigmoid(logits);
  const trainOp = new hb.train.AdagradOptimizer({ learningRate: 0.1 }).minimize(loss);
  return { loss, trainOp, probabilities, labels: labels as hb.SymbolicTensor };
}

const quiet = { log: () => undefined };

describe('MonitoredTrainingSession', () => {
  test("trains as HybridBackend's example does: run(trainOp) until the input ends; the loss falls", async () => {
    const { loss, trainOp } = await model(dataset(20_000, TRAIN)());
    // Called as TF calls it, without new.
    const sess = hb.train.MonitoredTrainingSession(quiet);
    expect(sess).toBeInstanceOf(hb.train.MonitoredSession);
    const losses: number[] = [];
    while (!sess.shouldStop()) {
      const out = (await sess.run({ trainOp, loss })) as { trainOp: undefined; loss: number } | undefined;
      if (out) losses.push(out.loss);
    }
    await sess.close();
    // Every batch of the input trained once (the last run found it ended, and ran nothing).
    let batches = 0;
    for await (const _ of dataset(20_000, TRAIN)()) batches++;
    expect(losses).toHaveLength(batches);
    expect(sess.globalStep).toBe(batches);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean(losses.slice(-10))).toBeLessThan(mean(losses.slice(0, 10)) - 0.05);
  });

  test('a second session on the same graph reads the input again from its start, as a TF session starts its iterator afresh', async () => {
    const { loss, trainOp } = await model(dataset(4096, TRAIN)());
    let batches = 0;
    for await (const _ of dataset(4096, TRAIN)()) batches++;
    const firstLosses: number[] = [];
    for (const pass of [1, 2]) {
      const sess = new hb.train.MonitoredTrainingSession(quiet);
      while (!sess.shouldStop()) {
        const out = (await sess.run({ trainOp, loss })) as { loss: number } | undefined;
        if (out && pass === 1) firstLosses.push(out.loss);
        if (out && pass === 2 && firstLosses.length === batches) {
          // The same first batch, on weights the first pass trained: a lower loss.
          expect(out.loss).toBeLessThan(firstLosses[0]);
          firstLosses.push(out.loss);
        }
      }
      await sess.close();
      expect(sess.globalStep).toBe(batches);
    }
  });

  test('run resolves to the fetches in their shape; a train op gives undefined, a scalar a number', async () => {
    const { loss, trainOp, probabilities } = await model(dataset(4096, TRAIN)());
    const sess = new hb.train.MonitoredTrainingSession(quiet);
    expect(await sess.run(trainOp)).toBeUndefined();
    expect(typeof (await sess.run(loss))).toBe('number');
    const [l, p] = (await sess.run([loss, probabilities])) as [number, Float32Array];
    expect(typeof l).toBe('number');
    expect(p.constructor.name).toBe('Float32Array');
    expect(p.length).toBe(256);
    // Only runs of a train op count as steps.
    expect(sess.globalStep).toBe(1);
    await sess.close();
    await expect(sess.run(trainOp)).rejects.toThrow(/the session is closed/);
  });

  test('StopAtStepHook stops at lastStep (or numSteps later); the checkpoint restores and a finished run reruns nothing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-session-'));
    try {
      const first = await model(dataset(20_000, TRAIN)());
      const sess = new hb.train.MonitoredTrainingSession({ ...quiet, checkpointDir: dir, hooks: [new hb.train.StopAtStepHook({ lastStep: 7 })] });
      while (!sess.shouldStop()) await sess.run(first.trainOp);
      await sess.close();
      expect(sess.globalStep).toBe(7);
      expect(fs.readdirSync(dir)).toContain('model.ckpt-7.safetensors');
      // A new process's graph: restored from step 7, then 3 more steps.
      const again = await model(dataset(20_000, TRAIN)());
      const logs: string[] = [];
      const resumed = new hb.train.MonitoredTrainingSession({ log: (l) => void logs.push(l), checkpointDir: dir, hooks: [new hb.train.StopAtStepHook({ numSteps: 3 })] });
      while (!resumed.shouldStop()) await resumed.run(again.trainOp);
      await resumed.close();
      expect(resumed.globalStep).toBe(10);
      expect(logs[0]).toBe(`restored ${path.join(dir, 'model.ckpt-7.safetensors')} (global step 7)`);
      const finished = await model(dataset(20_000, TRAIN)());
      const rerun = new hb.train.MonitoredTrainingSession({ ...quiet, checkpointDir: dir, hooks: [new hb.train.StopAtStepHook({ lastStep: 10 })] });
      expect(await rerun.run(finished.trainOp)).toBeUndefined();
      expect(rerun.shouldStop()).toBe(true);
      expect(rerun.globalStep).toBe(10);
      await rerun.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('hooks see each run and can stop the session', async () => {
    const { trainOp, loss } = await model(dataset(20_000, TRAIN)());
    const seen: number[] = [];
    const events: string[] = [];
    const sess = new hb.train.MonitoredTrainingSession({
      ...quiet,
      hooks: [{
        begin: () => void events.push('begin'),
        afterRun: (ctx) => {
          seen.push(ctx.globalStep);
          if (ctx.globalStep === 4) ctx.requestStop();
        },
        end: () => void events.push('end'),
      }],
    });
    while (!sess.shouldStop()) await sess.run([trainOp, loss]);
    await sess.close();
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(events).toEqual(['begin', 'end']);
  });

  test('inputs made from one batch are fed per run', async () => {
    const batches: hb.estimator.Batch[] = [];
    for await (const b of dataset(1024, TRAIN)()) batches.push(b as hb.estimator.Batch);
    const { trainOp, loss } = await model(batches[0]);
    const sess = new hb.train.MonitoredTrainingSession(quiet);
    await expect(sess.run(trainOp)).rejects.toThrow(/made from one batch .*give each run its batch/);
    for (const batch of batches) expect(typeof (await sess.run(loss, { batch }))).toBe('number');
    await sess.close();
  });

  test('bad fetches and options are refused by name', async () => {
    const { trainOp } = await model(dataset(1024, TRAIN)());
    const other = await model(dataset(1024, TRAIN)());
    const sess = new hb.train.MonitoredTrainingSession(quiet);
    await expect(sess.run([] as never)).rejects.toThrow(TypeError);
    await expect(sess.run(42 as never)).rejects.toThrow(/fetches must be a train op, a symbolic tensor/);
    await expect(sess.run([trainOp, other.loss])).rejects.toThrow(/the fetches come from different graphs/);
    await sess.run(trainOp);
    await expect(sess.run(other.trainOp)).rejects.toThrow(/belong to another graph/);
    await sess.close();
    expect(() => new hb.train.MonitoredTrainingSession({ checkpointDirectory: 'x' } as never)).toThrow(/unknown option 'checkpointDirectory'; it takes 'checkpointDir', 'hooks'/);
    expect(() => new hb.train.MonitoredTrainingSession({ saveCheckpointSteps: -1 })).toThrow(RangeError);
    expect(() => new hb.train.StopAtStepHook({})).toThrow(/give one of lastStep and numSteps/);
    await expect(hb.train.inputs([])).rejects.toThrow(/the input gave no batch/);
  });
});
