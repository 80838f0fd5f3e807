// Checkpoint defects a fuzzing pass found, one regression test (or more) each: header
// edits that loaded silently, tensors and optimizer slots the checkpoint lacks, edited
// dtypes and shapes that stopped a run instead of falling back, retries after a failed
// restore that trained over the model directory, and temp files of killed saves.
import { spawnSync } from 'child_process';
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import {
  CheckpointTensor,
  latestValidCheckpoint,
  listCheckpoints,
  loadCheckpoint,
  loadLatestCheckpoint,
  saveCheckpoint,
  verifyCheckpoint,
} from '../lib/io/checkpoint_file';
import { openCheckpoint } from '../lib/io/checkpoint_source';
import { native } from '../lib/native';
import { checkpointDigest, DIGEST_AT, DIGEST_PREFIX } from './support/checkpoint_digest';
import { dataset, numDense, TRAIN } from './support/planted_data';

const fc = hb.featureColumn;
const { ModeKeys } = hb.estimator;

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-ckpt-rel-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

// The whole-file digest sits first in the header, at a fixed place, and is hashed as zeros.
function headerOf(file: string): { header: Record<string, any>; headerLength: number; bytes: Buffer } {
  const bytes = fs.readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  return { header: JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')), headerLength, bytes };
}

/** Edits the header in place, keeping its length (space-padded) and the recorded sha256: what a hand edit does. */
function editHeader(file: string, edit: (h: Record<string, any>) => void): void {
  const { header, headerLength, bytes } = headerOf(file);
  edit(header);
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  if (json.length > headerLength) throw new Error('test: the edited header grew');
  const padded = Buffer.alloc(headerLength, 0x20);
  json.copy(padded);
  fs.writeFileSync(file, Buffer.concat([bytes.subarray(0, 8), padded, bytes.subarray(8 + headerLength)]));
}

/** Records the file's correct digest (of `format`): a checkpoint that verifies, whatever it holds. */
function resign(file: string, format: 'hb-ts/3' | 'hb-ts/2' = 'hb-ts/3'): void {
  const bytes = fs.readFileSync(file);
  expect(bytes.subarray(8, DIGEST_AT).toString('utf8')).toBe(DIGEST_PREFIX);
  bytes.write(checkpointDigest(bytes, format), DIGEST_AT, 'latin1');
  fs.writeFileSync(file, bytes);
}

const pair = (): CheckpointTensor[] => [
  { name: 'a', dtype: 'float32', shape: [2, 2], data: Float32Array.from([1, 2, 3, 4]) },
  { name: 'b', dtype: 'float32', shape: [2, 2], data: Float32Array.from([5, 6, 7, 8]) },
];

describe('1. the checksum covers the header as well as the data', () => {
  test('the recorded sha256 is of the whole file, with its own 64 characters as zeros, over 4 MiB pieces', async () => {
    const { path: file } = await saveCheckpoint(dir, 3, pair(), { metadata: { note: 'x' } });
    const { header, bytes } = headerOf(file);
    expect(header.__metadata__.format).toBe('hb-ts/3');
    expect(bytes.subarray(8, DIGEST_AT).toString('utf8')).toBe(DIGEST_PREFIX);
    expect(header.__metadata__.sha256).toBe(checkpointDigest(bytes));
    expect(bytes.subarray(DIGEST_AT, DIGEST_AT + 64).toString('latin1')).toBe(header.__metadata__.sha256);
    // One piece: the SHA-256 of the file's SHA-256.
    const blanked = Buffer.from(bytes);
    blanked.fill('0'.charCodeAt(0), DIGEST_AT, DIGEST_AT + 64);
    expect(header.__metadata__.sha256).toBe(createHash('sha256').update(createHash('sha256').update(blanked).digest()).digest('hex'));
  });

  test('a file of 9.5 pieces records the digest of its pieces, whichever digest wrote it; a flipped byte in any piece is a mismatch', async () => {
    const rows = 19 * 2 ** 15;
    const values = Float32Array.from({ length: rows * 32 }, (_, i) => Math.tan(i));
    const table = native.tensorFromTypedArray(values, [rows, 32], 'cpu');
    const files: string[] = [];
    for (const nativeDigest of [true, false]) {
      if (!nativeDigest) process.env.HB_NATIVE_SHA256 = '0';
      try {
        const into = path.join(dir, nativeDigest ? 'native' : 'node');
        files.push((await saveCheckpoint(into, 5, [...pair(), { name: 'table', dtype: 'float32', shape: [rows, 32], data: { tensor: table } }])).path);
      } finally {
        delete process.env.HB_NATIVE_SHA256;
      }
    }
    const bytes = fs.readFileSync(files[0]);
    expect(bytes.length).toBeGreaterThan(9.5 * 2 ** 22);
    expect(bytes.equals(fs.readFileSync(files[1]))).toBe(true);
    expect(headerOf(files[0]).header.__metadata__.sha256).toBe(checkpointDigest(bytes));
    for (const at of [DIGEST_AT + 70, 2 ** 22 - 1, 2 ** 22, 5 * 2 ** 22 + 12345, bytes.length - 1]) {
      const copy = path.join(dir, 'flipped', path.basename(files[0]));
      fs.mkdirSync(path.dirname(copy), { recursive: true });
      const flipped = Buffer.from(bytes);
      flipped[at] ^= 0x01;
      fs.writeFileSync(copy, flipped);
      await expect(verifyCheckpoint(copy)).rejects.toThrow(/checksum mismatch|bad header/);
    }
    table.dispose();
  });

  test('a file of format hb-ts/2 (one SHA-256 stream over the file) still verifies and loads; signed the other way it is a mismatch', async () => {
    const { path: file } = await saveCheckpoint(dir, 3, pair());
    editHeader(file, (h) => (h.__metadata__.format = 'hb-ts/2'));
    await expect(verifyCheckpoint(file)).rejects.toThrow(/checksum mismatch/);
    resign(file, 'hb-ts/2');
    expect((await verifyCheckpoint(file)).digestKind).toBe('stream');
    expect(Array.from((await loadCheckpoint(file)).tensors.get('b')!.data as Float32Array)).toEqual([5, 6, 7, 8]);
    // Read as the Estimator restores: a stream cannot take reads in any order, so the file
    // is verified whole at open (a flipped byte refused there), then read.
    const source = await openCheckpoint(file, { verifyWhileReading: true });
    const b = native.tensorFromTypedArray(new Float32Array(4), [2, 2], 'cpu');
    await source.read('b', b);
    await source.verified();
    expect(Array.from((await native.tensorData(b)) as Float32Array)).toEqual([5, 6, 7, 8]);
    b.dispose();
    const flipped = path.join(dir, 'flipped', path.basename(file));
    fs.mkdirSync(path.dirname(flipped), { recursive: true });
    const bytes = fs.readFileSync(file);
    bytes[bytes.length - 2] ^= 0x10;
    fs.writeFileSync(flipped, bytes);
    await expect(openCheckpoint(flipped, { verifyWhileReading: true })).rejects.toThrow(/checksum mismatch/);
    resign(file, 'hb-ts/3');
    await expect(verifyCheckpoint(file)).rejects.toThrow(/checksum mismatch/);
  });

  test('swapped tensor names are a checksum mismatch', async () => {
    const { path: file } = await saveCheckpoint(dir, 3, pair());
    editHeader(file, (h) => ([h.a, h.b] = [h.b, h.a]));
    await expect(loadCheckpoint(file)).rejects.toThrow(/checksum mismatch/);
    await expect(verifyCheckpoint(file)).rejects.toThrow(/checksum mismatch/);
  });

  test('swapped data offsets are a checksum mismatch', async () => {
    const { path: file } = await saveCheckpoint(dir, 3, pair());
    editHeader(file, (h) => ([h.a.data_offsets, h.b.data_offsets] = [h.b.data_offsets, h.a.data_offsets]));
    await expect(loadCheckpoint(file)).rejects.toThrow(/checksum mismatch/);
  });

  test('edited metadata (an optimizer beta power, the global step) is a checksum mismatch; loading falls back', async () => {
    await saveCheckpoint(dir, 1, pair(), { metadata: { optimizer_state: '[{"beta1_power":0.81}]' } });
    const { path: file } = await saveCheckpoint(dir, 3, pair(), { metadata: { optimizer_state: '[{"beta1_power":0.72}]' } });
    editHeader(file, (h) => (h.__metadata__.optimizer_state = '[{"beta1_power":0.99}]'));
    await expect(loadCheckpoint(file)).rejects.toThrow(/checksum mismatch/);
    const latest = await loadLatestCheckpoint(dir);
    expect(latest!.globalStep).toBe(1);
    expect(latest!.skipped).toEqual([{ path: file, error: expect.stringMatching(/checksum mismatch/) }]);

    // The global step, with the file renamed to match.
    const { path: three } = await saveCheckpoint(dir, 3, pair());
    editHeader(three, (h) => (h.__metadata__.global_step = '4'));
    const four = path.join(dir, 'model.ckpt-4.safetensors');
    fs.renameSync(three, four);
    await expect(verifyCheckpoint(four)).rejects.toThrow(/checksum mismatch/);
  });

  test('a file of the previous format (data-only checksum) is refused, saying why', async () => {
    const data = Buffer.from(Float32Array.from([1, 2, 3, 4]).buffer);
    const json = JSON.stringify({
      __metadata__: { global_step: '3', sha256: createHash('sha256').update(data).digest('hex'), format: 'hb-ts/1' },
      w: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] },
    });
    const header = Buffer.from(json.padEnd(Math.ceil(json.length / 8) * 8, ' '));
    const prefix = Buffer.alloc(8);
    prefix.writeBigUInt64LE(BigInt(header.length));
    const file = path.join(dir, 'model.ckpt-3.safetensors');
    fs.writeFileSync(file, Buffer.concat([prefix, header, data]));
    await expect(loadCheckpoint(file)).rejects.toThrow(/format "hb-ts\/1".*checksum covers only the data/);
    await expect(latestValidCheckpoint(dir)).rejects.toThrow(/No usable checkpoint[^]*hb-ts\/1/);
  });
});

describe('5. rotation keeps the checkpoints of later steps', () => {
  test('a save at an earlier step than those kept deletes none of the later ones', async () => {
    for (const step of [10, 20]) await saveCheckpoint(dir, step, pair(), { keepMax: 2 });
    // A run that started over (step 1, 2, 3) must not rotate out the model it did not restore.
    for (const step of [1, 2, 3]) await saveCheckpoint(dir, step, pair(), { keepMax: 2 });
    expect((await listCheckpoints(dir)).map((c) => c.globalStep)).toEqual([10, 20, 3]);
    // Once the new run passes them, rotation is as before.
    await saveCheckpoint(dir, 30, pair(), { keepMax: 2 });
    expect((await listCheckpoints(dir)).map((c) => c.globalStep)).toEqual([3, 30]);
  });
});

describe('6. temp files of killed saves are removed', () => {
  function deadPid(): number {
    const child = spawnSync(process.execPath, ['-e', '0']);
    return child.pid!;
  }

  function plantTemps(target: string, pid: number): { stale: string[]; kept: string[] } {
    const past = new Date(Date.now() - 3600_000);
    const write = (name: string, when?: Date) => {
      const file = path.join(target, name);
      fs.writeFileSync(file, Buffer.alloc(1000, 7));
      if (when) fs.utimesSync(file, when, when);
      return name;
    };
    return {
      stale: [
        write(`.model.ckpt-5.safetensors.tmp-${pid}-0123456789ab`, past),
        write(`.checkpoint.json.tmp-${pid}-a1b2c3d4e5f6`, past),
      ],
      kept: [
        // A live writer's (this process is alive), newer than any checkpoint, or not ours.
        write(`.model.ckpt-6.safetensors.tmp-${process.pid}-0123456789ab`, past),
        write(`.model.ckpt-7.safetensors.tmp-${pid}-fedcba987654`, new Date(Date.now() + 3600_000)),
        write(`.notes.txt.tmp-${pid}-0123456789ab`, past),
        write(`model.ckpt-8.safetensors.tmp-${pid}-0123456789ab`, past),
        write('notes.txt', past),
      ],
    };
  }

  test("the first save removes this writer's stale temps older than the newest checkpoint, nothing else", async () => {
    const { stale, kept } = plantTemps(dir, deadPid());
    await saveCheckpoint(dir, 1, pair());
    const left = fs.readdirSync(dir);
    for (const name of stale) expect(left).not.toContain(name);
    for (const name of kept) expect(left).toContain(name);
    expect(left).toContain('model.ckpt-1.safetensors');
  });

  test('a restore removes them too', async () => {
    await saveCheckpoint(dir, 1, pair());
    const { stale, kept } = plantTemps(dir, deadPid());
    expect((await latestValidCheckpoint(dir))!.header.globalStep).toBe(1);
    const left = fs.readdirSync(dir);
    for (const name of stale) expect(left).not.toContain(name);
    for (const name of kept) expect(left).toContain(name);
  });
});

// ---------------------------------------------------------------------------------------
// Through the Estimator

interface Options {
  width?: number;
  extraLayer?: boolean;
  extraTable?: boolean;
  optimizer?: 'adagrad' | 'adam';
}

function makeModelFn(options: Options = {}) {
  const init = hb.initializers.truncatedNormal({ stddev: 0.1, seed: 3 });
  const dense = Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`));
  const sparse = [fc.embeddingColumn(fc.categoricalColumnWithIdentity('user', 2000), 4, { initializer: init })];
  const item = fc.embeddingColumn(fc.categoricalColumnWithIdentity('item', 1000), 4, { initializer: init });
  return (features: Record<string, unknown>, labels: unknown, mode: hb.estimator.Mode) => {
    const x = hb.math.concat([fc.DenseFeatures(dense)(features), fc.DenseFeatures(sparse)(features)], 1);
    const h = hb.layers.dense(x, options.width ?? 16, { activation: hb.nn.relu, kernelInitializer: hb.initializers.glorotUniform({ seed: 1 }) });
    let logits = hb.layers.dense(h, 1, { kernelInitializer: hb.initializers.glorotUniform({ seed: 2 }) });
    // Additions that leave every other variable's shape as it was.
    if (options.extraLayer) logits = hb.math.add(logits, hb.layers.dense(x, 1, { name: 'extra', kernelInitializer: hb.initializers.glorotUniform({ seed: 4 }) }));
    if (options.extraTable) logits = hb.math.add(logits, hb.math.reduceSum(fc.DenseFeatures([item])(features), 1, true));
    if (mode === ModeKeys.PREDICT) return hb.estimator.EstimatorSpec({ mode, predictions: { logits } });
    const loss = hb.losses.sigmoidCrossEntropy(labels as hb.SymbolicTensor, logits);
    if (mode === ModeKeys.EVAL) return hb.estimator.EstimatorSpec({ mode, loss });
    const opt = options.optimizer === 'adam' ? new hb.train.AdamOptimizer({ learningRate: 0.01 }) : new hb.train.AdagradOptimizer({ learningRate: 0.1 });
    return hb.estimator.EstimatorSpec({ mode, loss, trainOp: opt.minimize(loss) });
  };
}

function estimator(options: Options = {}, config: { saveCheckpointsSteps?: number; keepCheckpointMax?: number; logs?: string[] } = {}) {
  return new hb.estimator.Estimator({
    modelFn: makeModelFn(options),
    modelDir: dir,
    config: new hb.estimator.RunConfig({
      saveCheckpointsSteps: config.saveCheckpointsSteps ?? 5,
      keepCheckpointMax: config.keepCheckpointMax ?? 0,
      log: (l) => config.logs?.push(l),
      progressBar: false,
    }),
  });
}

const input = dataset(8192, TRAIN);
const ckpt = (step: number) => path.join(dir, `model.ckpt-${step}.safetensors`);
const filesNow = () => Object.fromEntries(fs.readdirSync(dir).sort().map((n) => [n, createHash('sha256').update(fs.readFileSync(path.join(dir, n))).digest('hex')]));

async function expectVariablesFrom(est: hb.estimator.Estimator, file: string): Promise<void> {
  const saved = (await loadCheckpoint(file)).tensors;
  for (const [name, v] of est.variables) {
    const want = saved.get(name)!.data as Float32Array;
    expect(Buffer.from(((await v.data()) as Float32Array).buffer).equals(Buffer.from(want.buffer, want.byteOffset, want.byteLength))).toBe(true);
  }
}

describe('1. through the Estimator', () => {
  test('an edited beta power in the newest checkpoint is refused; the run resumes from the one before', async () => {
    await estimator({ optimizer: 'adam' }).train(input, { steps: 10 });
    editHeader(ckpt(10), (h) => {
      h.__metadata__.optimizer_state = h.__metadata__.optimizer_state.replace(/"beta1_power":[0-9.e-]+/, '"beta1_power":0.5');
    });
    const logs: string[] = [];
    const resumed = estimator({ optimizer: 'adam' }, { logs });
    await resumed.train(input, { steps: 0 });
    expect(resumed.globalStep).toBe(5);
    expect(logs.join('\n')).toMatch(/model\.ckpt-10\.safetensors was refused \(.*checksum mismatch/);
  });

  // The files are verified as the restore reads them (one pass): a corrupt one is found
  // after its values are in the model, which must then hold the older checkpoint's values.
  test('a flipped data byte in the newest checkpoint: every variable is read again from the one before, and training goes on from it', async () => {
    await estimator().train(input, { steps: 10 });
    // In the last tensor's data: read late, after the others landed in the model.
    const bytes = fs.readFileSync(ckpt(10));
    bytes[bytes.length - 3] ^= 0x10;
    fs.writeFileSync(ckpt(10), bytes);
    const logs: string[] = [];
    const resumed = estimator({}, { logs });
    await resumed.evaluate(input, { steps: 1 });
    expect(resumed.globalStep).toBe(5);
    expect(logs.join('\n')).toMatch(/model\.ckpt-10\.safetensors was refused \(Checkpoint .*model\.ckpt-10\.safetensors: checksum mismatch/);
    expect(logs).toContain(`restored ${ckpt(5)} (global step 5)`);
    await expectVariablesFrom(resumed, ckpt(5));
    // Trained on from step 5, its own checkpoint at 10 replaces the corrupt one.
    await resumed.train(input, { steps: 5 });
    expect(resumed.globalStep).toBe(10);
    await expect(verifyCheckpoint(ckpt(10))).resolves.toBeDefined();
  });

  test("an evaluator following a trainer reads a newer checkpoint found corrupt once, not before every evaluation, and keeps the older one's values", async () => {
    await estimator().train(input, { steps: 5 });
    const evaluator = estimator();
    await evaluator.evaluate(input, { steps: 1 });
    expect(evaluator.globalStep).toBe(5);
    // Another process trains on in the same modelDir, and its newest checkpoint is damaged.
    await estimator().train(input, { steps: 5 });
    const good = fs.readFileSync(ckpt(10));
    const bytes = Buffer.from(good);
    bytes[bytes.length - 9] ^= 0x02;
    fs.writeFileSync(ckpt(10), bytes);
    const spy = jest.spyOn(native, 'tensorReadRows');
    try {
      const readsOfTen: number[] = [];
      for (let k = 0; k < 3; k++) {
        spy.mockClear();
        await evaluator.evaluate(input, { steps: 1 });
        readsOfTen.push(spy.mock.calls.filter((call) => call[3] === ckpt(10)).length);
        expect(evaluator.globalStep).toBe(5);
      }
      expect(readsOfTen[0]).toBeGreaterThan(0);
      expect(readsOfTen.slice(1)).toEqual([0, 0]);
    } finally {
      spy.mockRestore();
    }
    await expectVariablesFrom(evaluator, ckpt(5));
    // Put back whole (a new file renamed over it, as a save does): it is read again, and restored.
    fs.writeFileSync(path.join(dir, 'good'), good);
    fs.renameSync(path.join(dir, 'good'), ckpt(10));
    await evaluator.evaluate(input, { steps: 1 });
    expect(evaluator.globalStep).toBe(10);
    await expectVariablesFrom(evaluator, ckpt(10));
  });

  test('trainAndEvaluate every 5 steps to 10 from a corrupt checkpoint at 10: the restore goes back to 5, trains 5 steps and evaluates at 10 only', async () => {
    await estimator().train(input, { steps: 10 });
    const bytes = fs.readFileSync(ckpt(10));
    bytes[bytes.length - 5] ^= 0x04;
    fs.writeFileSync(ckpt(10), bytes);
    const est = estimator();
    // The header still opens: the step read before anything is built is 10.
    expect(await est.restoreGlobalStep()).toBe(10);
    const evaluatedAt: number[] = [];
    const steps: number[] = [];
    const evaluate = est.evaluate.bind(est);
    est.evaluate = (...args: Parameters<typeof est.evaluate>) => (evaluatedAt.push(est.globalStep), evaluate(...args));
    const result = await hb.estimator.trainAndEvaluate(
      est,
      new hb.estimator.TrainSpec({ inputFn: input, maxSteps: 10, hooks: [{ afterRun: ({ globalStep }) => void steps.push(globalStep) }] }),
      new hb.estimator.EvalSpec({ inputFn: input, steps: 1 }),
      { evalEveryNIter: 5 },
    );
    expect(steps).toEqual([6, 7, 8, 9, 10]);
    expect(evaluatedAt).toEqual([10]);
    expect(result.globalStep).toBe(10);
  });

  test('when every checkpoint has a corrupt data byte nothing trains or is written, and a retry says so again', async () => {
    await estimator().train(input, { steps: 10 });
    for (const step of [5, 10]) {
      const bytes = fs.readFileSync(ckpt(step));
      bytes[bytes.length - 100] ^= 0x01;
      fs.writeFileSync(ckpt(step), bytes);
    }
    const before = filesNow();
    const resumed = estimator();
    const refused = /No usable checkpoint in .*model\.ckpt-10\.safetensors: checksum mismatch.*model\.ckpt-5\.safetensors: checksum mismatch/s;
    await expect(resumed.train(input, { steps: 5 })).rejects.toThrow(refused);
    await expect(resumed.train(input, { steps: 5 })).rejects.toThrow(refused);
    expect(filesNow()).toEqual(before);
  });
});

describe('2. tensors the model has and the checkpoint lacks', () => {
  test('a variable the checkpoint lacks is refused, naming it', async () => {
    await estimator().train(input, { steps: 5 });
    const before = filesNow();
    const changed = estimator({ extraLayer: true });
    await expect(changed.train(input, { steps: 1 })).rejects.toThrow(/lacks 2 tensors the model has: 'extra\/bias', 'extra\/kernel'/);
    await expect(changed.evaluate(input, { steps: 1 })).rejects.toThrow(/'extra\/kernel'/);
    expect(changed.globalStep).toBe(5);
    expect(filesNow()).toEqual(before);
  });

  test('a table the checkpoint lacks is refused, naming it', async () => {
    await estimator().train(input, { steps: 5 });
    const changed = estimator({ extraTable: true });
    await expect(changed.evaluate(input, { steps: 1 })).rejects.toThrow(/lacks 1 tensor the model has: 'item_embedding\/embedding_weights'/);
    await expect(changed.train(input, { steps: 1 })).rejects.toThrow(/lacks 1 tensor the model has: 'item_embedding\/embedding_weights'/);
    expect(changed.globalStep).toBe(5);
  });
});

describe('3. another optimizer than the checkpoint\'s', () => {
  test('Adagrad then Adam is refused, naming the slots expected and found', async () => {
    await estimator({ optimizer: 'adagrad' }).train(input, { steps: 5 });
    const before = filesNow();
    const adam = estimator({ optimizer: 'adam' });
    // Evaluation needs no slots: it restores.
    await adam.evaluate(input, { steps: 1 });
    const error = await adam.train(input, { steps: 1 }).then(() => undefined, (e: Error) => e);
    expect(error?.message).toMatch(/optimizer slots/);
    expect(error?.message).toMatch(/optimizers expect .*'dense\/kernel\/Adam', 'dense\/kernel\/Adam_1'.* but the checkpoint has .*'dense\/kernel\/Adagrad'/);
    expect(error?.message).toMatch(/has .*'dense\/kernel\/Adagrad'/);
    expect(adam.globalStep).toBe(5);
    expect(filesNow()).toEqual(before);
  });

  test('with the same optimizer, evaluating first and training then restores the slots and beta powers', async () => {
    const first = estimator({ optimizer: 'adam' });
    await first.train(input, { steps: 5 });
    const second = estimator({ optimizer: 'adam' });
    await second.evaluate(input, { steps: 1 });
    // Both go on from step 5 on the same batches.
    await first.train(input, { steps: 3 });
    await second.train(input, { steps: 3 });
    expect(second.globalStep).toBe(8);
    for (const [name, v] of first.variables) {
      const a = (await v.data()) as Float32Array;
      const b = (await second.variables.get(name)!.data()) as Float32Array;
      expect(Buffer.from(b.buffer).equals(Buffer.from(a.buffer))).toBe(true);
    }
  });
});

describe('4. an edited dtype or shape falls back to the previous checkpoint', () => {
  test('an edited shape (same size) is skipped and the one before loads', async () => {
    await estimator().train(input, { steps: 10 });
    editHeader(ckpt(10), (h) => (h['dense/kernel'].shape = [...h['dense/kernel'].shape].reverse()));
    const logs: string[] = [];
    const resumed = estimator({}, { logs });
    await resumed.train(input, { steps: 0 });
    expect(resumed.globalStep).toBe(5);
    await expectVariablesFrom(resumed, ckpt(5));
    expect(logs.join('\n')).toMatch(/model\.ckpt-10\.safetensors was refused/);
  });

  test('an edited dtype is skipped and the one before loads', async () => {
    await estimator().train(input, { steps: 10 });
    editHeader(ckpt(10), (h) => (h['dense/bias'].dtype = 'I32'));
    const resumed = estimator();
    await resumed.train(input, { steps: 0 });
    expect(resumed.globalStep).toBe(5);
    await expectVariablesFrom(resumed, ckpt(5));
  });

  test('a checkpoint that verifies but does not fit the model is skipped the same way', async () => {
    await estimator().train(input, { steps: 10 });
    editHeader(ckpt(10), (h) => (h['dense/kernel'].shape = [...h['dense/kernel'].shape].reverse()));
    resign(ckpt(10));
    await expect(verifyCheckpoint(ckpt(10))).resolves.toBeDefined();
    const logs: string[] = [];
    const resumed = estimator({}, { logs });
    await resumed.evaluate(input, { steps: 1 });
    expect(resumed.globalStep).toBe(5);
    await expectVariablesFrom(resumed, ckpt(5));
    expect(logs.join('\n')).toMatch(/model\.ckpt-10\.safetensors was refused \(.*'dense\/kernel' has shape/);
    // Training on from there keeps the slots of step 5 too.
    await resumed.train(input, { steps: 1 });
    expect(resumed.globalStep).toBe(6);
  });
});

describe('5. a failed restore stops the run', () => {
  test('retries fail the same way and nothing is saved over the model directory', async () => {
    await estimator({ width: 16 }, { keepCheckpointMax: 2 }).train(input, { steps: 10 });
    const before = filesNow();
    const changed = estimator({ width: 12 }, { keepCheckpointMax: 2 });
    for (let attempt = 0; attempt < 3; attempt++) {
      await expect(changed.train(input, { steps: 10 })).rejects.toThrow(/No checkpoint in .* fits the model[^]*'dense\/kernel' has shape \[\d+,16\] but the model's is \[\d+,12\]/);
    }
    await expect(changed.evaluate(input, { steps: 1 })).rejects.toThrow(/fits the model/);
    await expect(changed.saveCheckpoint()).rejects.toThrow(/fits the model/);
    expect(filesNow()).toEqual(before);
  });

  test('when no checkpoint verifies, retries fail and nothing is saved', async () => {
    await estimator({}, { keepCheckpointMax: 2 }).train(input, { steps: 10 });
    for (const step of [5, 10]) fs.truncateSync(ckpt(step), 100);
    const before = filesNow();
    const est = estimator({}, { keepCheckpointMax: 2 });
    for (let attempt = 0; attempt < 2; attempt++) await expect(est.train(input, { steps: 10 })).rejects.toThrow(/No usable checkpoint/);
    await expect(est.saveCheckpoint()).rejects.toThrow(/No usable checkpoint/);
    expect(filesNow()).toEqual(before);
  });
});

describe('6. through the Estimator', () => {
  test('restoring removes the temp files of a save that was killed', async () => {
    await estimator().train(input, { steps: 5 });
    const child = spawnSync(process.execPath, ['-e', '0']);
    const temp = path.join(dir, `.model.ckpt-6.safetensors.tmp-${child.pid}-00112233aabb`);
    fs.writeFileSync(temp, Buffer.alloc(4096));
    const past = new Date(Date.now() - 60_000);
    fs.utimesSync(temp, past, past);
    const est = estimator();
    await est.train(input, { steps: 0 });
    expect(est.globalStep).toBe(5);
    expect(fs.existsSync(temp)).toBe(false);
  });
});
