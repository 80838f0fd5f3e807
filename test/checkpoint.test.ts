import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import {
  CheckpointTensor,
  latestValidCheckpoint,
  listCheckpoints,
  loadCheckpoint,
  loadLatestCheckpoint,
  loadTensorRows,
  readCheckpointHeader,
  saveCheckpoint,
  verifyCheckpoint,
} from '../lib/io/checkpoint_file';
import { openCheckpoint } from '../lib/io/checkpoint_source';
import { VerifiedReads } from '../lib/io/verified_reads';
import { native, NativeTensorHandle, TypedArray } from '../lib/native';
import { checkpointDigest } from './support/checkpoint_digest';
import { randomSource } from './support/reference';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-ckpt-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const weights = (step: number): CheckpointTensor[] => [
  { name: 'w', dtype: 'float32', shape: [2, 2], data: Float32Array.from([1, 2, 3, step]) },
];

/** The safetensors header, parsed by hand as another reader would. */
function readHeader(file: string): { headerLength: number; header: Record<string, any>; data: Buffer } {
  const bytes = fs.readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8'));
  return { headerLength, header, data: bytes.subarray(8 + headerLength) };
}

/** The digest a checkpoint records (test/support/checkpoint_digest.ts). */
function fileDigest(file: string): string {
  return checkpointDigest(fs.readFileSync(file));
}

function flipByte(file: string, position: number): void {
  const bytes = fs.readFileSync(file);
  bytes[position] ^= 0xff;
  fs.writeFileSync(file, bytes);
}

describe('checkpoint files', () => {
  test('all four dtypes round-trip, with empty tensors, a scalar and int64 beyond 2^53', async () => {
    const big = [2n ** 62n + 1n, -(2n ** 63n), 2n ** 53n + 1n, -1n];
    const tensors: CheckpointTensor[] = [
      { name: 'f32', dtype: 'float32', shape: [2, 3], data: Float32Array.from([1.5, -2, 3e-38, Infinity, NaN, -0]) },
      { name: 'f64', dtype: 'float64', shape: [3], data: Float64Array.from([1e300, Math.PI, -5e-324]) },
      { name: 'i32', dtype: 'int32', shape: [1, 3], data: Int32Array.from([-(2 ** 31), 0, 2 ** 31 - 1]) },
      { name: 'i64', dtype: 'int64', shape: [4], data: BigInt64Array.from(big) },
      { name: 'empty_f32', dtype: 'float32', shape: [0, 7], data: new Float32Array(0) },
      { name: 'empty_i64', dtype: 'int64', shape: [0], data: new BigInt64Array(0) },
      { name: 'scalar', dtype: 'float64', shape: [], data: Float64Array.from([42.25]) },
      { name: 'odd_i32', dtype: 'int32', shape: [1], data: Int32Array.from([7]) },
    ];
    const info = await saveCheckpoint(dir, 1234, tensors);
    expect(info).toEqual({ path: path.join(dir, 'model.ckpt-1234.safetensors'), globalStep: 1234 });

    const loaded = await loadCheckpoint(info.path);
    expect(loaded.globalStep).toBe(1234);
    expect(loaded.metadata).toEqual({});
    expect([...loaded.tensors.keys()].sort()).toEqual(tensors.map((t) => t.name).sort());
    for (const t of tensors) {
      const got = loaded.tensors.get(t.name)!;
      expect(got.name).toBe(t.name);
      expect(got.dtype).toBe(t.dtype);
      expect(got.shape).toEqual(t.shape);
      expect(got.data.constructor).toBe(t.data.constructor);
      // Byte equality keeps NaN payloads and -0 honest.
      const saved = t.data as Float32Array;
      expect(Buffer.from(got.data.buffer, got.data.byteOffset, got.data.byteLength)).toEqual(
        Buffer.from(saved.buffer, saved.byteOffset, saved.byteLength),
      );
      expect(got.data.byteOffset % got.data.BYTES_PER_ELEMENT).toBe(0);
    }
    expect(Array.from(loaded.tensors.get('i64')!.data as BigInt64Array)).toEqual(big);
    expect(Array.from(loaded.tensors.get('scalar')!.data as Float32Array)).toEqual([42.25]);
  });

  test('the file is plain safetensors with the documented layout', async () => {
    const a = Float32Array.from([1, 2, 3]);
    const b = BigInt64Array.from([5n, -6n]);
    const c = Int32Array.from([9]);
    const { path: file } = await saveCheckpoint(dir, 7, [
      { name: 'a', dtype: 'float32', shape: [3], data: a },
      { name: 'b', dtype: 'int64', shape: [1, 2], data: b },
      { name: 'c', dtype: 'int32', shape: [], data: c },
    ], { metadata: { model: 'wide_deep' } });

    const { headerLength, header, data } = readHeader(file);
    expect(headerLength % 8).toBe(0);
    const raw = fs.readFileSync(file).subarray(8, 8 + headerLength).toString('utf8');
    expect(raw.startsWith('{')).toBe(true);
    expect(raw.trimEnd().endsWith('}')).toBe(true);
    expect(raw.slice(raw.trimEnd().length)).toMatch(/^ *$/);

    // Eight-byte tensors come first so every tensor is aligned; then caller order.
    expect(header.b).toEqual({ dtype: 'I64', shape: [1, 2], data_offsets: [0, 16] });
    expect(header.a).toEqual({ dtype: 'F32', shape: [3], data_offsets: [16, 28] });
    expect(header.c).toEqual({ dtype: 'I32', shape: [], data_offsets: [28, 32] });
    expect(data.length).toBe(32);
    expect(data.readBigInt64LE(0)).toBe(5n);
    expect(data.readBigInt64LE(8)).toBe(-6n);
    expect(data.readFloatLE(16)).toBe(1);
    expect(data.readFloatLE(24)).toBe(3);
    expect(data.readInt32LE(28)).toBe(9);
    // The checksum covers the header too (not the data alone, as format hb-ts/1 did).
    expect(raw.startsWith('{"__metadata__":{"sha256":"')).toBe(true);
    expect(header.__metadata__).toEqual({
      model: 'wide_deep',
      global_step: '7',
      format: 'hb-ts/3',
      sha256: fileDigest(file),
    });
  });

  test('metadata round-trips; reserved keys are refused', async () => {
    const metadata = { model: 'dlrm', 'ünïcode': 'välue', empty: '' };
    const { path: file } = await saveCheckpoint(dir, 3, weights(3), { metadata });
    expect((await loadCheckpoint(file)).metadata).toEqual(metadata);
    for (const key of ['global_step', 'sha256', 'format']) {
      await expect(saveCheckpoint(dir, 4, weights(4), { metadata: { [key]: 'x' } })).rejects.toThrow(new RegExp(`${key}.*reserved`));
    }
    expect(fs.existsSync(path.join(dir, 'model.ckpt-4.safetensors'))).toBe(false);
  });

  test('bad arguments are refused before anything is written', async () => {
    const t = weights(0)[0];
    await expect(saveCheckpoint(dir, 1, [t, { ...t }])).rejects.toThrow(/"w".*duplicate/);
    await expect(saveCheckpoint(dir, -1, [t])).rejects.toThrow(/globalStep/);
    await expect(saveCheckpoint(dir, NaN, [t])).rejects.toThrow(/globalStep/);
    await expect(saveCheckpoint(dir, Infinity, [t])).rejects.toThrow(/globalStep/);
    await expect(saveCheckpoint(dir, 1, [{ ...t, shape: [3] }])).rejects.toThrow(/shape/);
    await expect(saveCheckpoint(dir, 1, [{ ...t, dtype: 'float64' }])).rejects.toThrow(/Float64Array/);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('creates the model directory, leaves no temporary files, and writes the manifest', async () => {
    const modelDir = path.join(dir, 'a', 'b');
    await saveCheckpoint(modelDir, 10, weights(10));
    await saveCheckpoint(modelDir, 20, weights(20));
    expect(fs.readdirSync(modelDir).sort()).toEqual(['checkpoint.json', 'model.ckpt-10.safetensors', 'model.ckpt-20.safetensors']);
    expect(JSON.parse(fs.readFileSync(path.join(modelDir, 'checkpoint.json'), 'utf8'))).toEqual({
      latest: 'model.ckpt-20.safetensors',
      all: ['model.ckpt-10.safetensors', 'model.ckpt-20.safetensors'],
    });
  });

  test('listCheckpoints is oldest first; saving a step again replaces it', async () => {
    expect(await listCheckpoints(path.join(dir, 'missing'))).toEqual([]);
    expect(await loadLatestCheckpoint(path.join(dir, 'missing'))).toBeUndefined();
    for (const step of [5, 100, 20]) await saveCheckpoint(dir, step, weights(step));
    // Order of saving, as TensorFlow's CheckpointManager keeps it.
    expect((await listCheckpoints(dir)).map((c) => c.globalStep)).toEqual([5, 100, 20]);
    expect((await listCheckpoints(dir))[0].path).toBe(path.join(dir, 'model.ckpt-5.safetensors'));

    await saveCheckpoint(dir, 5, [{ name: 'w', dtype: 'float32', shape: [1], data: Float32Array.from([-1]) }]);
    expect((await listCheckpoints(dir)).map((c) => c.globalStep)).toEqual([100, 20, 5]);
    const latest = await loadLatestCheckpoint(dir);
    expect(latest!.globalStep).toBe(5);
    expect(Array.from(latest!.tensors.get('w')!.data as Float32Array)).toEqual([-1]);
    expect(latest!.skipped).toEqual([]);
  });

  test('keepMax deletes the oldest checkpoints', async () => {
    for (let step = 1; step <= 5; step++) await saveCheckpoint(dir, step, weights(step), { keepMax: 2 });
    expect((await listCheckpoints(dir)).map((c) => c.globalStep)).toEqual([4, 5]);
    expect(fs.readdirSync(dir).sort()).toEqual(['checkpoint.json', 'model.ckpt-4.safetensors', 'model.ckpt-5.safetensors']);
    // keepMax 0 keeps everything.
    for (let step = 6; step <= 8; step++) await saveCheckpoint(dir, step, weights(step), { keepMax: 0 });
    expect((await listCheckpoints(dir)).map((c) => c.globalStep)).toEqual([4, 5, 6, 7, 8]);
  });

  test('a truncated newest file is refused, and loading falls back to the one before', async () => {
    await saveCheckpoint(dir, 1, weights(1));
    const { path: newest } = await saveCheckpoint(dir, 2, weights(2));
    fs.truncateSync(newest, fs.statSync(newest).size - 3);

    await expect(loadCheckpoint(newest)).rejects.toThrow(new RegExp(`${escape(newest)}.*truncated`));
    const latest = await loadLatestCheckpoint(dir);
    expect(latest!.globalStep).toBe(1);
    expect(latest!.path).toBe(path.join(dir, 'model.ckpt-1.safetensors'));
    expect(Array.from(latest!.tensors.get('w')!.data as Float32Array)).toEqual([1, 2, 3, 1]);
    expect(latest!.skipped).toEqual([{ path: newest, error: expect.stringMatching(/truncated/) }]);

    // Cut inside the header too.
    fs.truncateSync(newest, 20);
    await expect(loadCheckpoint(newest)).rejects.toThrow(new RegExp(`${escape(newest)}.*truncated`));
    fs.truncateSync(newest, 4);
    await expect(loadCheckpoint(newest)).rejects.toThrow(/truncated/);
  });

  test('when no checkpoint verifies, loadLatestCheckpoint says so instead of starting over', async () => {
    const { path: only } = await saveCheckpoint(dir, 1, weights(1));
    fs.truncateSync(only, 10);
    await expect(loadLatestCheckpoint(dir)).rejects.toThrow(new RegExp(`No usable checkpoint[^]*${escape(only)}`));
  });

  test('a flipped byte in the data is a checksum mismatch', async () => {
    const { path: file } = await saveCheckpoint(dir, 9, weights(9));
    flipByte(file, fs.statSync(file).size - 1);
    await expect(loadCheckpoint(file)).rejects.toThrow(new RegExp(`${escape(file)}.*checksum mismatch`));
  });

  test('a flipped byte in the header JSON is a header error', async () => {
    const { path: file } = await saveCheckpoint(dir, 9, weights(9));
    flipByte(file, 8); // the opening brace
    await expect(loadCheckpoint(file)).rejects.toThrow(new RegExp(`${escape(file)}.*bad header`));
  });

  test('headers that parse but lie are refused', async () => {
    const { path: file } = await saveCheckpoint(dir, 9, weights(9));
    const rewrite = (edit: (h: Record<string, any>) => void) => {
      const { header, data } = readHeader(file);
      edit(header);
      const json = Buffer.from(JSON.stringify(header));
      const prefix = Buffer.alloc(8);
      prefix.writeBigUInt64LE(BigInt(json.length));
      fs.writeFileSync(file, Buffer.concat([prefix, json, data]));
    };
    rewrite((h) => (h.w.shape = [2, 3]));
    await expect(loadCheckpoint(file)).rejects.toThrow(/shape\/size mismatch/);
    rewrite((h) => {
      h.w.shape = [2, 2];
      h.w.dtype = 'BF16';
    });
    await expect(loadCheckpoint(file)).rejects.toThrow(/unsupported dtype "BF16"/);
    rewrite((h) => {
      h.w.dtype = 'F32';
      h.w.data_offsets = [4, 20];
    });
    await expect(loadCheckpoint(file)).rejects.toThrow(/contiguous/);
    rewrite((h) => {
      h.w.data_offsets = [0, 16];
      h.__metadata__.global_step = '10';
    });
    await expect(loadCheckpoint(file)).rejects.toThrow(/does not match the file name/);
    // Back to the values written, but not the bytes (the padding): the checksum covers the
    // header, so no rewritten header loads.
    rewrite((h) => (h.__metadata__.global_step = '9'));
    await expect(loadCheckpoint(file)).rejects.toThrow(/checksum mismatch/);
    fs.appendFileSync(file, Buffer.alloc(4));
    await expect(loadCheckpoint(file)).rejects.toThrow(/after the last tensor/);
  });

  test('a corrupt or missing manifest still finds the checkpoints, by step', async () => {
    for (const step of [30, 4, 200]) await saveCheckpoint(dir, step, weights(step));
    const manifest = path.join(dir, 'checkpoint.json');
    fs.writeFileSync(manifest, '{"latest": "model.ckpt-2');
    expect((await listCheckpoints(dir)).map((c) => c.globalStep)).toEqual([4, 30, 200]);
    expect((await loadLatestCheckpoint(dir))!.globalStep).toBe(200);
    fs.rmSync(manifest);
    expect((await listCheckpoints(dir)).map((c) => c.globalStep)).toEqual([4, 30, 200]);
    // The next save writes a good manifest again.
    await saveCheckpoint(dir, 201, weights(201), { keepMax: 2 });
    expect((await listCheckpoints(dir)).map((c) => c.globalStep)).toEqual([200, 201]);
  });

  test('a manifest naming a missing file lists the others', async () => {
    for (const step of [1, 2, 3]) await saveCheckpoint(dir, step, weights(step));
    fs.rmSync(path.join(dir, 'model.ckpt-3.safetensors'));
    expect((await listCheckpoints(dir)).map((c) => c.globalStep)).toEqual([1, 2]);
    expect((await loadLatestCheckpoint(dir))!.globalStep).toBe(2);
  });

  test('overlapping saves into one directory keep a consistent manifest', async () => {
    await Promise.all([1, 2, 3, 4, 5, 6].map((step) => saveCheckpoint(dir, step, weights(step), { keepMax: 3 })));
    expect((await listCheckpoints(dir)).map((c) => c.globalStep)).toEqual([4, 5, 6]);
    expect(fs.readdirSync(dir).filter((n) => n.includes('.tmp-'))).toEqual([]);
  });
});

const owned = (values: TypedArray, shape: number[]): NativeTensorHandle => native.tensorFromTypedArray(values, shape, 'cpu');
const bytesOf = (a: ArrayBufferView): Buffer => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

describe('checkpoints of native tensors', () => {
  // A table of 6 rows x 3 of which rows 1..5 are saved, an int64 table whole, a scalar,
  // and a typed array between them: one digest covers all of it in file order.
  const table = Float32Array.from({ length: 18 }, (_, i) => (i % 5 === 0 ? NaN : i * 0.75 - 4));
  table[7] = -0;
  const counts = BigInt64Array.from([2n ** 62n + 1n, -(2n ** 63n), 2n ** 53n + 1n, -1n]);
  const bias = Float32Array.from([0.5, -1.5]);
  const saveNative = () =>
    saveCheckpoint(dir, 42, [
      { name: 'table', dtype: 'float32', shape: [4, 3], data: { tensor: owned(table, [6, 3]), rowBegin: 1, rowEnd: 5 } },
      { name: 'bias', dtype: 'float32', shape: [2], data: bias },
      { name: 'counts', dtype: 'int64', shape: [2, 2], data: { tensor: owned(counts, [2, 2]) } },
      { name: 'scale', dtype: 'float64', shape: [], data: { tensor: owned(Float64Array.from([Math.E]), []) } },
    ]);

  test('rows saved from native tensors load bit-identically through loadCheckpoint', async () => {
    const { path: file } = await saveNative();
    const loaded = await loadCheckpoint(file);
    expect(loaded.globalStep).toBe(42);
    expect(loaded.tensors.get('table')!.shape).toEqual([4, 3]);
    expect(bytesOf(loaded.tensors.get('table')!.data)).toEqual(bytesOf(table.subarray(3, 15)));
    expect(bytesOf(loaded.tensors.get('bias')!.data)).toEqual(bytesOf(bias));
    expect(loaded.tensors.get('counts')!.data).toEqual(counts);
    expect(Array.from(loaded.tensors.get('scale')!.data as Float64Array)).toEqual([Math.E]);

    // The same layout and checksum a reader of plain safetensors expects.
    const { header, data } = readHeader(file);
    expect(header.counts.data_offsets).toEqual([0, 32]);
    expect(header.scale.data_offsets).toEqual([32, 40]);
    expect(header.table.data_offsets).toEqual([40, 88]);
    expect(header.bias.data_offsets).toEqual([88, 96]);
    expect(data.length).toBe(96);
    expect(header.__metadata__.sha256).toBe(fileDigest(file));
  });

  test('readCheckpointHeader, verifyCheckpoint and loadTensorRows read rows without JS copies', async () => {
    const { path: file } = await saveNative();
    const header = await readCheckpointHeader(file);
    expect(header.globalStep).toBe(42);
    expect(header.metadata).toEqual({});
    expect([...header.entries.keys()]).toEqual(['counts', 'scale', 'table', 'bias']);
    expect(header.entries.get('table')).toEqual({ name: 'table', dtype: 'float32', shape: [4, 3], begin: 40, end: 88 });
    expect(header.dataStart + header.dataLength).toBe(fs.statSync(file).size);
    expect(await verifyCheckpoint(file)).toEqual(header);

    // Saved rows 1..3 into rows 2..4 of a larger table; the rest untouched.
    const target = owned(new Float32Array(6 * 3).fill(9), [6, 3]);
    await loadTensorRows(file, header, 'table', target, { rowBegin: 1, rowEnd: 3, targetRowBegin: 2 });
    const got = (await native.tensorData(target)) as Float32Array;
    expect(bytesOf(got.subarray(6, 12))).toEqual(bytesOf(table.subarray(6, 12)));
    expect(Array.from(got.subarray(0, 6))).toEqual(new Array(6).fill(9));
    expect(Array.from(got.subarray(12))).toEqual(new Array(6).fill(9));

    // Whole tensors by default, each dtype.
    const counts2 = owned(new BigInt64Array(4), [2, 2]);
    await loadTensorRows(file, header, 'counts', counts2);
    expect(Array.from((await native.tensorData(counts2)) as BigInt64Array)).toEqual(Array.from(counts));
    const scale = owned(new Float64Array(1), []);
    await loadTensorRows(file, header, 'scale', scale);
    expect(Array.from((await native.tensorData(scale)) as Float64Array)).toEqual([Math.E]);
    const whole = owned(new Float32Array(12), [4, 3]);
    await loadTensorRows(file, header, 'table', whole);
    expect(bytesOf((await native.tensorData(whole)) as Float32Array)).toEqual(bytesOf(table.subarray(3, 15)));
  });

  test('loadTensorRows refuses targets and ranges that do not fit, naming the tensor', async () => {
    const { path: file } = await saveNative();
    const header = await readCheckpointHeader(file);
    const target = owned(new Float32Array(12), [4, 3]);
    await expect(loadTensorRows(file, header, 'nope', target)).rejects.toThrow(/tensor "nope".*no such tensor/);
    await expect(loadTensorRows(file, header, 'table', owned(new Float64Array(12), [4, 3]))).rejects.toThrow(
      /tensor "table".*saved as float32 but the target is float64/,
    );
    await expect(loadTensorRows(file, header, 'table', owned(new Float32Array(12), [3, 4]))).rejects.toThrow(
      /tensor "table".*hold 3 values.*hold 4/,
    );
    await expect(loadTensorRows(file, header, 'table', target, { rowEnd: 5 })).rejects.toThrow(/tensor "table".*rowEnd 5 is beyond the 4 saved rows/);
    await expect(loadTensorRows(file, header, 'table', target, { rowBegin: 3, rowEnd: 2 })).rejects.toThrow(/rowBegin 3 is after rowEnd 2/);
    await expect(loadTensorRows(file, header, 'table', target, { targetRowBegin: 1 })).rejects.toThrow(/4 rows from targetRowBegin 1 do not fit/);
    await expect(loadTensorRows(file, header, 'table', target, { rowBegin: -1 })).rejects.toThrow(/rowBegin must be a non-negative integer/);
    const disposed = owned(new Float32Array(12), [4, 3]);
    disposed.dispose();
    await expect(loadTensorRows(file, header, 'table', disposed)).rejects.toThrow(/tensor "table".*disposed/);
  });

  test('a corrupted data byte fails verifyCheckpoint; latestValidCheckpoint falls back', async () => {
    await saveCheckpoint(dir, 1, weights(1));
    const { path: newest } = await saveNative();
    expect((await latestValidCheckpoint(dir))!.path).toBe(newest);
    flipByte(newest, fs.statSync(newest).size - 5);
    await expect(readCheckpointHeader(newest)).resolves.toBeDefined();
    await expect(verifyCheckpoint(newest)).rejects.toThrow(new RegExp(`${escape(newest)}.*checksum mismatch`));

    const valid = await latestValidCheckpoint(dir);
    expect(valid!.path).toBe(path.join(dir, 'model.ckpt-1.safetensors'));
    expect(valid!.header.globalStep).toBe(1);
    expect(valid!.skipped).toEqual([{ path: newest, error: expect.stringMatching(/checksum mismatch/) }]);
    const w = owned(new Float32Array(4), [2, 2]);
    await loadTensorRows(valid!.path, valid!.header, 'w', w);
    expect(Array.from((await native.tensorData(w)) as Float32Array)).toEqual([1, 2, 3, 1]);
  });

  test('a large table saves the same file whichever digest and write path; a flipped byte fails either digest', async () => {
    // 1.5 MB of rows: the page-aligned middle goes around the page cache unless HB_DIRECT_IO=0;
    // the digest is the addon's (taken as rows are written) unless HB_NATIVE_SHA256=0.
    const big = Float32Array.from({ length: 3000 * 129 }, (_, i) => Math.cos(i) * 100);
    const tensor = owned(big, [3000, 129]);
    const settings = [
      { HB_NATIVE_SHA256: undefined, HB_DIRECT_IO: undefined },
      { HB_NATIVE_SHA256: '0', HB_DIRECT_IO: undefined },
      { HB_NATIVE_SHA256: undefined, HB_DIRECT_IO: '0' },
      { HB_NATIVE_SHA256: '0', HB_DIRECT_IO: '0' },
    ];
    const withSettings = async <T>(env: Record<string, string | undefined>, run: () => Promise<T>): Promise<T> => {
      const before = { ...process.env };
      for (const [key, value] of Object.entries(env)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      try {
        return await run();
      } finally {
        for (const key of Object.keys(env)) {
          if (before[key] === undefined) delete process.env[key];
          else process.env[key] = before[key];
        }
      }
    };
    const files: string[] = [];
    for (const [k, env] of settings.entries()) {
      const into = path.join(dir, `run-${k}`);
      files.push(
        (await withSettings(env, () =>
          saveCheckpoint(into, 7, [
            { name: 'bias', dtype: 'float32', shape: [3], data: Float32Array.from([1, 2, 3]) },
            { name: 'table', dtype: 'float32', shape: [2999, 129], data: { tensor, rowBegin: 1 } },
          ]),
        )).path,
      );
    }
    const first = fs.readFileSync(files[0]);
    for (const file of files.slice(1)) expect(fs.readFileSync(file).equals(first)).toBe(true);
    expect(readHeader(files[0]).header.__metadata__.sha256).toBe(fileDigest(files[0]));
    const { header } = readHeader(files[0]);
    const dataStart = 8 + readHeader(files[0]).headerLength;
    expect(first.subarray(dataStart + header.table.data_offsets[0], dataStart + header.table.data_offsets[1]).equals(bytesOf(big.subarray(129)))).toBe(true);

    flipByte(files[0], Math.floor(first.length / 2));
    for (const env of settings) {
      await withSettings(env, () => expect(verifyCheckpoint(files[0])).rejects.toThrow(/checksum mismatch/));
      await withSettings(env, () => expect(verifyCheckpoint(files[1])).resolves.toBeDefined());
    }
  });

  test('latestValidCheckpoint: undefined without checkpoints, an error when none verifies', async () => {
    expect(await latestValidCheckpoint(path.join(dir, 'missing'))).toBeUndefined();
    const { path: only } = await saveCheckpoint(dir, 3, weights(3));
    fs.truncateSync(only, fs.statSync(only).size - 1);
    await expect(latestValidCheckpoint(dir)).rejects.toThrow(new RegExp(`No usable checkpoint[^]*${escape(only)}.*truncated`));
  });

  test('native sources are checked before anything is written', async () => {
    const t = owned(Float32Array.from([1, 2, 3, 4, 5, 6]), [3, 2]);
    const save = (data: CheckpointTensor['data'], shape = [3, 2], dtype: CheckpointTensor['dtype'] = 'float32') =>
      saveCheckpoint(dir, 1, [{ name: 'n', dtype, shape, data }]);
    await expect(save({ tensor: t }, [3, 2], 'int32')).rejects.toThrow(/"n".*dtype int32 but the native tensor is float32/);
    await expect(save({ tensor: t, rowEnd: 4 })).rejects.toThrow(/"n".*rowEnd 4 is beyond the native tensor's 3 rows/);
    await expect(save({ tensor: t, rowBegin: 2, rowEnd: 1 })).rejects.toThrow(/rowBegin 2 is after rowEnd 1/);
    await expect(save({ tensor: t, rowBegin: 1 })).rejects.toThrow(/shape \[3,2\] holds 6 values but rows 1..3 of \[3,2\] hold 4/);
    await expect(save({ tensor: {} as NativeTensorHandle })).rejects.toThrow(/"n".*must be a native tensor/);
    const gone = owned(new Float32Array(6), [3, 2]);
    gone.dispose();
    await expect(save({ tensor: gone })).rejects.toThrow(/"n".*disposed/);
    expect(fs.readdirSync(dir)).toEqual([]);
    // The same tensor in a reshaped form is fine: the shape describes the rows saved.
    await save({ tensor: t, rowBegin: 1 }, [4]);
    expect(Array.from((await loadCheckpoint(path.join(dir, 'model.ckpt-1.safetensors'))).tensors.get('n')!.data as Float32Array)).toEqual([3, 4, 5, 6]);
  });
});

describe('checkpoints verified as they are read (openCheckpoint with verifyWhileReading)', () => {
  // In file order: the int64 tensor first, then the float32 ones as given. `big` (20 MiB)
  // spans three of the native read's pieces on two threads (8 MiB; 4 MiB per thread, at
  // most 64), so a piece is hashed beside the next one's read.
  const counts = BigInt64Array.from([3n, -(2n ** 62n), 5n, 7n]);
  const small = Float32Array.from({ length: 30 }, (_, i) => i - 7.5);
  const big = Float32Array.from({ length: 20 * 2 ** 18 }, (_, i) => Math.sin(i) * 1000);
  const mid = Float32Array.from({ length: 1000 * 64 }, (_, i) => i / 3);
  const BIG_ROWS = big.length / 64;
  const save = async () =>
    (await saveCheckpoint(dir, 9, [
      { name: 'small', dtype: 'float32', shape: [10, 3], data: small },
      { name: 'big', dtype: 'float32', shape: [BIG_ROWS, 64], data: { tensor: owned(big, [BIG_ROWS, 64]) } },
      { name: 'mid', dtype: 'float32', shape: [1000, 64], data: mid },
      { name: 'counts', dtype: 'int64', shape: [4], data: counts },
    ])).path;
  const zerosLike = (a: TypedArray, shape: number[]) => owned(new (a.constructor as Float32ArrayConstructor)(a.length) as TypedArray, shape);
  const targets = () => ({ counts: zerosLike(counts, [4]), small: zerosLike(small, [10, 3]), big: zerosLike(big, [BIG_ROWS, 64]), mid: zerosLike(mid, [1000, 64]) });
  const expectSame = async (t: NativeTensorHandle, want: TypedArray) => expect(bytesOf((await native.tensorData(t)) as TypedArray).equals(bytesOf(want))).toBe(true);
  /** The byte counts hashed by reading the file again (fileSha256Update), during `run`. */
  async function hashedAgain(run: () => Promise<void>): Promise<number[]> {
    const spy = jest.spyOn(native, 'fileSha256Update');
    try {
      await run();
      return spy.mock.calls.map((call) => call[4]);
    } finally {
      spy.mockRestore();
    }
  }

  test('reads in file order are hashed as they land, so verified() reads nothing again; the values are the saved ones', async () => {
    const file = await save();
    const dataBytes = counts.byteLength + small.byteLength + big.byteLength + mid.byteLength;
    // Opened the default way, the whole data is hashed before open resolves.
    expect((await hashedAgain(async () => void (await openCheckpoint(file)))).reduce((a, b) => a + b, 0)).toBe(dataBytes);
    const t = targets();
    const again = await hashedAgain(async () => {
      const source = await openCheckpoint(file, { verifyWhileReading: true });
      for (const name of ['counts', 'small', 'big', 'mid'] as const) await source.read(name, t[name]);
      await source.verified();
    });
    expect(again).toEqual([]);
    await expectSame(t.counts, counts);
    await expectSame(t.small, small);
    await expectSame(t.big, big);
    await expectSame(t.mid, mid);
    // Reads queued before verified() is called, not awaited first: hashed as well.
    const u = targets();
    const queued = await hashedAgain(async () => {
      const reads = await VerifiedReads.open(file);
      const all = Promise.all((['counts', 'small', 'big', 'mid'] as const).map((name) => reads.loadRows(name, u[name])));
      await reads.verified();
      await all;
    });
    expect(queued).toEqual([]);
    await expectSame(u.big, big);
  });

  test('reads out of order, of some rows, or of some tensors verify too: only the 4 MiB pieces no read held whole are read again', async () => {
    const file = await save();
    const PIECE = 4 * 2 ** 20;
    const size = fs.statSync(file).size;
    const dataStart = size - (counts.byteLength + small.byteLength + big.byteLength + mid.byteLength);
    const t = targets();
    const part = owned(new Float32Array(100 * 64), [100, 64]);
    const rowBytes = 64 * 4;
    // As a model with several dynamic tables reads: far ahead (mid, in the file's last
    // piece), then back where the first reads stopped (small, big). The run from the header
    // holds pieces 0-4 whole and ends inside the last piece, which mid's run began inside:
    // verified() carries it on to the file's end, reading mid's bytes again and no more.
    const again = await hashedAgain(async () => {
      const reads = await VerifiedReads.open(file);
      await reads.loadRows('counts', t.counts);
      await reads.loadRows('mid', t.mid);
      await reads.loadRows('small', t.small);
      await reads.loadRows('big', t.big);
      await reads.verified();
      // After verified(): a plain read.
      await reads.loadRows('counts', t.counts);
    });
    expect(size).toBeGreaterThan(5 * PIECE);
    expect(again).toEqual([mid.byteLength]);
    await expectSame(t.mid, mid);
    await expectSame(t.small, small);
    await expectSame(t.counts, counts);
    await expectSame(t.big, big);

    // Some rows of the middle tensor: the bytes before them (less than a piece) are hashed
    // first; verified() carries the run on to the end of piece 0 and hashes pieces 1-5.
    const rows = await hashedAgain(async () => {
      const reads = await VerifiedReads.open(file);
      await reads.loadRows('big', part, { rowBegin: 200, rowEnd: 300 });
      await reads.verified();
    });
    expect(rows).toEqual([counts.byteLength + small.byteLength + 200 * rowBytes, PIECE - (dataStart + counts.byteLength + small.byteLength + 300 * rowBytes), size - PIECE]);
    await expectSame(part, big.subarray(200 * 64, 300 * 64));
    // One tensor: its run, from the header on, holds pieces 0-4, and is carried on over mid.
    const one = await hashedAgain(async () => {
      const source = await openCheckpoint(file, { verifyWhileReading: true });
      await source.read('big', t.big);
      await source.verified();
    });
    expect(one).toEqual([counts.byteLength + small.byteLength, mid.byteLength]);
    await expectSame(t.big, big);
    // Rows read a second time, ending where the first read of their tensor ended: both runs'
    // pieces are kept, and nothing is read again.
    const twice = await hashedAgain(async () => {
      const reads = await VerifiedReads.open(file);
      for (const name of ['counts', 'small', 'big'] as const) await reads.loadRows(name, t[name]);
      await reads.loadRows('big', t.big, { rowBegin: (2 * PIECE) / rowBytes, rowEnd: BIG_ROWS, targetRowBegin: (2 * PIECE) / rowBytes });
      await reads.loadRows('mid', t.mid);
      await reads.verified();
    });
    expect(twice).toEqual([]);
    await expectSame(t.big, big);
    // Reads that begin a piece or more after every run: a run each, beginning inside a piece
    // and holding none whole, so the file is read again (the header's run carried on to the
    // end of piece 0, then pieces 1-5).
    const apart = await hashedAgain(async () => {
      const reads = await VerifiedReads.open(file);
      await reads.loadRows('mid', t.mid);
      await reads.loadRows('big', part, { rowBegin: 1 + PIECE / rowBytes, rowEnd: 101 + PIECE / rowBytes });
      await reads.verified();
    });
    expect(apart).toEqual([PIECE - dataStart, size - PIECE]);
  });

  test('a flipped byte is found by verified() whether its tensor was read in order, out of order or not at all', async () => {
    const file = await save();
    const { header, headerLength } = readHeader(file);
    const at = (name: string, offset: number) => 8 + headerLength + header[name].data_offsets[0] + offset;
    const cases: Array<[string, number, string[]]> = [
      ['big, 9 MiB in, read in order', at('big', 9 * 2 ** 20 + 5), ['counts', 'small', 'big', 'mid']],
      ['mid, never read', at('mid', 17), ['counts', 'small', 'big']],
      ['small, read after mid', at('small', 3), ['mid', 'small']],
      ['big, 9 MiB in, read after mid', at('big', 9 * 2 ** 20 + 5), ['counts', 'mid', 'small', 'big']],
      ['big, in the last piece, read after mid', at('big', big.byteLength - 7), ['counts', 'mid', 'small', 'big']],
      ['counts, read first', at('counts', 0), ['counts']],
    ];
    for (const [, position, order] of cases) {
      const copy = path.join(dir, 'copy', path.basename(file));
      fs.mkdirSync(path.dirname(copy), { recursive: true });
      fs.copyFileSync(file, copy);
      flipByte(copy, position);
      await expect(openCheckpoint(copy)).rejects.toThrow(/checksum mismatch/);
      const source = await openCheckpoint(copy, { verifyWhileReading: true });
      const t = targets();
      for (const name of order) await source.read(name, t[name as keyof typeof t]);
      await expect(source.verified()).rejects.toThrow(new RegExp(`${escape(copy)}: checksum mismatch`));
      // The outcome is kept: asked again, the same answer, and nothing read twice.
      await expect(source.verified()).rejects.toThrow(/checksum mismatch/);
    }
  });

  test('random reads in random order (some rows, some tensors, overlapping) agree with verifyCheckpoint on good and flipped files', async () => {
    const file = await save();
    const size = fs.statSync(file).size;
    const dataStart = size - (counts.byteLength + small.byteLength + big.byteLength + mid.byteLength);
    const saved: Record<string, TypedArray> = { counts, small, big, mid };
    const widths: Record<string, number> = { counts: 1, small: 3, big: 64, mid: 64 };
    const random = randomSource(5501);
    const int = (below: number) => Math.floor(random() * below);
    const copy = path.join(dir, 'copy', path.basename(file));
    fs.mkdirSync(path.dirname(copy), { recursive: true });
    for (let round = 0; round < 24; round++) {
      fs.copyFileSync(file, copy);
      // Half the rounds flip one data byte: near a piece boundary or anywhere.
      const flip = round % 2 === 1 ? (round % 4 === 1 ? Math.min(size - 1, (1 + int(5)) * 4 * 2 ** 20 + int(9) - 4) : dataStart + int(size - dataStart)) : -1;
      if (flip >= 0) flipByte(copy, flip);
      const reads = await VerifiedReads.open(copy);
      const landed: Array<[NativeTensorHandle, TypedArray]> = [];
      for (let k = 1 + int(7); k > 0; k--) {
        const name = Object.keys(saved)[int(4)];
        const rows = saved[name].length / widths[name];
        const rowBegin = int(rows + 1);
        const rowEnd = rowBegin + int(rows - rowBegin + 1);
        const targetRows = Math.max(1, rowEnd - rowBegin);
        const target = zerosLike(saved[name].subarray(0, targetRows * widths[name]), name === 'counts' ? [targetRows] : [targetRows, widths[name]]);
        await reads.loadRows(name, target, { rowBegin, rowEnd });
        landed.push([target, saved[name].subarray(rowBegin * widths[name], rowEnd * widths[name])]);
      }
      const verdict = await reads.verified().then(() => 'good', (err: Error) => err.message);
      const reference = await verifyCheckpoint(copy).then(() => 'good', (err: Error) => err.message);
      expect([round, flip, verdict]).toEqual([round, flip, reference]);
      expect(verdict === 'good').toBe(flip < 0);
      if (flip < 0) {
        for (const [target, want] of landed) {
          const got = (await native.tensorData(target)) as TypedArray;
          expect(bytesOf(got.subarray(0, want.length) as TypedArray).equals(bytesOf(want))).toBe(true);
        }
      }
      for (const [target] of landed) target.dispose();
    }
  });

  test('a read that fails part way leaves its run out: verified() hashes those pieces again and the good file passes', async () => {
    const file = await save();
    const size = fs.statSync(file).size;
    const dataStart = size - (counts.byteLength + small.byteLength + big.byteLength + mid.byteLength);
    const t = targets();
    const again = await hashedAgain(async () => {
      const reads = await VerifiedReads.open(file);
      await reads.loadRows('counts', t.counts);
      // Disposed after the read's checks, before it runs: the read fails, and with it the run
      // from the header that it continued.
      const failing = reads.loadRows('big', t.big);
      t.big.dispose();
      await expect(failing).rejects.toThrow(/disposed/);
      await reads.verified();
    });
    // The gap to big (small) hashed into the run, then everything again.
    expect(again).toEqual([small.byteLength, size - dataStart]);
  });

  test('without the addon\'s digest (HB_NATIVE_SHA256=0) the file is verified at open, before any read', async () => {
    const file = await save();
    flipByte(file, fs.statSync(file).size - 3);
    process.env.HB_NATIVE_SHA256 = '0';
    try {
      await expect(openCheckpoint(file, { verifyWhileReading: true })).rejects.toThrow(/checksum mismatch/);
    } finally {
      delete process.env.HB_NATIVE_SHA256;
    }
  });
});


function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
