import { spawnSync } from 'child_process';
import { createHash, randomBytes } from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { native, NativeTensorHandle, TypedArray } from '../lib/native';
import { describeCuda } from './support/devices';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-io-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const bytesOf = (a: ArrayBufferView): Buffer => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
const owned = (values: TypedArray, shape: number[], device = 'cpu'): NativeTensorHandle =>
  native.tensorFromTypedArray(values, shape, device);

/** An existing file of `size` bytes (tensorWriteRows neither creates nor truncates). */
function emptyFile(name: string, size = 0): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, Buffer.alloc(size));
  return file;
}

/**
 * What `run()` throws or rejects with: argument errors throw at the call, errors of the
 * queued work reject. Errors come from the addon's realm, not jest's, so tests compare
 * `name` rather than use instanceof.
 */
async function errorOf(run: () => unknown): Promise<Error & { code?: string }> {
  try {
    await run();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected an error');
}

describe('tensorWriteRows / tensorReadRows', () => {
  test('rows of a float32 tensor land in the file byte for byte', async () => {
    const values = Float32Array.from({ length: 5 * 3 }, (_, i) => i * 1.25 - 7);
    values[4] = NaN;
    values[5] = -0;
    const tensor = owned(values, [5, 3]);
    const file = emptyFile('f32.bin', 10);
    // Rows 1..4 at byte 10: the bytes before stay, the file grows.
    await expect(native.tensorWriteRows(tensor, 1, 4, file, 10)).resolves.toBe(36);
    const written = fs.readFileSync(file);
    expect(written.length).toBe(46);
    expect(written.subarray(0, 10)).toEqual(Buffer.alloc(10));
    expect(written.subarray(10)).toEqual(bytesOf(values.subarray(3, 12)));
  });

  test('an int64 tensor, whole, beyond 2^53', async () => {
    const values = BigInt64Array.from([2n ** 62n + 1n, -(2n ** 63n), 2n ** 53n + 1n, -1n, 0n, 7n]);
    const file = emptyFile('i64.bin');
    await expect(native.tensorWriteRows(owned(values, [3, 2]), 0, 3, file, 0)).resolves.toBe(48);
    expect(fs.readFileSync(file)).toEqual(bytesOf(values));
  });

  test('a rank-0 tensor is one row, and an empty range writes nothing', async () => {
    const file = emptyFile('scalar.bin');
    await expect(native.tensorWriteRows(owned(Float64Array.from([42.5]), []), 0, 1, file, 0)).resolves.toBe(8);
    await expect(native.tensorWriteRows(owned(Float64Array.from([1, 2]), [2]), 1, 1, file, 8)).resolves.toBe(0);
    expect(fs.readFileSync(file)).toEqual(bytesOf(Float64Array.from([42.5])));
  });

  test('a row range read into the middle of a tensor leaves the other rows alone', async () => {
    const source = Int32Array.from({ length: 4 * 2 }, (_, i) => 100 + i);
    const file = path.join(dir, 'rows.bin');
    fs.writeFileSync(file, Buffer.concat([Buffer.from('header!'), bytesOf(source)]));
    const target = owned(new Int32Array(6 * 2).fill(-1), [6, 2]);
    // Source rows 1..3 (file bytes 7 + 8 ..) into target rows 2..4.
    await native.tensorReadRows(target, 2, 4, file, 7 + 8);
    expect(Array.from((await native.tensorData(target)) as Int32Array)).toEqual([-1, -1, -1, -1, 102, 103, 104, 105, -1, -1, -1, -1]);
  });

  test('writes are queued after earlier updates of the tensor', async () => {
    const tensor = owned(new Float32Array(4), [2, 2]);
    const assigned = native.tensorAssign(tensor, owned(Float32Array.from([1, 2, 3, 4]), [2, 2]));
    const file = emptyFile('ordered.bin');
    const written = native.tensorWriteRows(tensor, 0, 2, file, 0);
    await Promise.all([assigned, written]);
    expect(fs.readFileSync(file)).toEqual(bytesOf(Float32Array.from([1, 2, 3, 4])));
  });

});

describe('SHA-256 beside the writes (sha256New, tensorWriteRows with a digest, fileSha256Update)', () => {
  const nodeSha = (...parts: Uint8Array[]) => {
    const hash = createHash('sha256');
    for (const p of parts) hash.update(p);
    return hash.digest('hex');
  };

  test('node carries OpenSSL, so the digest is native here', () => {
    expect(native.sha256Available()).toBe(true);
  });

  test('equals node crypto over the same bytes, whatever the pieces', () => {
    const bytes = randomBytes(5000);
    for (const cuts of [[], [0], [1], [55, 56], [63, 64, 65], [1000, 4999]]) {
      const digest = native.sha256New();
      let at = 0;
      for (const cut of [...cuts, bytes.length]) {
        native.sha256Update(digest, bytes.subarray(at, cut));
        at = cut;
      }
      expect(native.sha256Hex(digest)).toBe(nodeSha(bytes));
    }
    expect(native.sha256Hex(native.sha256New())).toBe(nodeSha(new Uint8Array(0)));
  });

  test('sha256New(true): the SHA-256 of the SHA-256s of 4 MiB pieces, whatever the updates, on the JS thread and beside writes and reads', async () => {
    const PIECE = 4 * 1024 * 1024;
    const ofPieces = (bytes: Uint8Array) => {
      const pieces: Buffer[] = [];
      for (let at = 0; at < bytes.length; at += PIECE) pieces.push(createHash('sha256').update(bytes.subarray(at, at + PIECE)).digest());
      return createHash('sha256').update(Buffer.concat(pieces)).digest('hex');
    };
    const bytes = randomBytes(3 * PIECE + 777);
    // Updates inside one piece, across one boundary, ending on one, spanning whole pieces.
    for (const cuts of [[], [1], [PIECE - 1, PIECE, PIECE + 1], [100, 2 * PIECE + 5], [PIECE, 2 * PIECE, 3 * PIECE]]) {
      const digest = native.sha256New(true);
      let at = 0;
      for (const cut of [...cuts, bytes.length]) {
        native.sha256Update(digest, bytes.subarray(at, cut));
        at = cut;
      }
      expect(native.sha256Hex(digest)).toBe(ofPieces(bytes));
    }
    expect(native.sha256Hex(native.sha256New(true))).toBe(nodeSha(new Uint8Array(0)));
    // Rows written, then read back, each hashed as they go, after a header of odd length.
    const file = path.join(dir, 'pieces.bin');
    const header = randomBytes(99);
    fs.writeFileSync(file, header);
    const values = Float32Array.from({ length: 5000 * 300 }, (_, i) => Math.cos(i));
    const written = native.sha256New(true);
    native.sha256Update(written, header);
    await native.tensorWriteRows(owned(values, [5000, 300]), 0, 5000, file, header.length, written);
    const expected = ofPieces(Buffer.concat([header, bytesOf(values)]));
    expect(native.sha256Hex(written)).toBe(expected);
    const read = native.sha256New(true);
    native.sha256Update(read, header);
    const back = owned(new Float32Array(values.length), [5000, 300]);
    await native.tensorReadRows(back, 0, 5000, file, header.length, read);
    expect(native.sha256Hex(read)).toBe(expected);
    expect(bytesOf((await native.tensorData(back)) as Float32Array).equals(bytesOf(values))).toBe(true);
    expect((await errorOf(() => native.sha256New('yes' as unknown as boolean))).message).toMatch(/^sha256New: pieces must be a boolean/);
  });

  test('sha256New(true, origin) + sha256TakePieces: a run from any file offset hands over the digests of the 4 MiB pieces it held whole', async () => {
    const PIECE = 4 * 1024 * 1024;
    const bytes = randomBytes(3 * PIECE + 777);
    const pieceDigests = Array.from({ length: 4 }, (_, k) => createHash('sha256').update(bytes.subarray(k * PIECE, (k + 1) * PIECE)).digest());
    // [origin, end, fileEnds]: from a boundary, from inside a piece, ending inside one or at the file's end.
    const runs: Array<[number, number, boolean]> = [
      [0, bytes.length, true],
      [0, bytes.length, false],
      [1, bytes.length, true],
      [PIECE, 3 * PIECE, false],
      [PIECE - 5, 3 * PIECE + 10, false],
      [PIECE + 1, 2 * PIECE + 1, false],
      [3 * PIECE + 1, bytes.length, true],
      [2 * PIECE, 2 * PIECE, false],
    ];
    for (const [origin, end, fileEnds] of runs) {
      for (const cuts of [[], [origin + 1, origin + PIECE]]) {
        const digest = native.sha256New(true, origin);
        let at = origin;
        for (const cut of [...cuts.filter((c) => c < end), end]) {
          native.sha256Update(digest, bytes.subarray(at, cut));
          at = cut;
        }
        const first = Math.ceil(origin / PIECE);
        // Whole pieces: those from the first boundary at or after origin that end by `end`, and the
        // last, shorter one when the run reached the file's end.
        let last = Math.floor(end / PIECE);
        if (fileEnds && end === bytes.length && end % PIECE !== 0) last += 1;
        const expected = Buffer.concat(pieceDigests.slice(first, Math.max(first, last)));
        const taken = native.sha256TakePieces(digest, fileEnds);
        expect([origin, end, Buffer.from(taken).toString('hex')]).toEqual([origin, end, expected.toString('hex')]);
        expect((await errorOf(() => native.sha256Update(digest, bytes.subarray(0, 1)))).message).toMatch(/already taken/);
      }
    }
    // Beside a read of rows: the pieces a read from an unaligned offset holds.
    const file = path.join(dir, 'run.bin');
    fs.writeFileSync(file, bytes);
    const rows = owned(new Float32Array((2 * PIECE) / 4), [2 * PIECE / 1024, 256]);
    const read = native.sha256New(true, PIECE - 1024);
    await native.tensorReadRows(rows, 0, 2 * PIECE / 1024, file, PIECE - 1024, read);
    expect(Buffer.from(native.sha256TakePieces(read, false)).equals(pieceDigests[1])).toBe(true);
    // Misuse is named.
    expect((await errorOf(() => native.sha256New(false, 5))).message).toMatch(/^sha256New: an origin is for a digest of pieces/);
    expect((await errorOf(() => native.sha256New(true, -1))).message).toMatch(/^sha256New: origin must be an integer/);
    expect((await errorOf(() => native.sha256TakePieces(native.sha256New(), true))).message).toMatch(/^sha256TakePieces: digest must be a digest of pieces/);
    expect((await errorOf(() => native.sha256TakePieces(native.sha256New(true), 1 as unknown as boolean))).message).toMatch(/^sha256TakePieces: fileEnds must be a boolean/);
    expect((await errorOf(() => native.sha256Hex(native.sha256New(true, 7)))).message).toMatch(/no whole-file digest/);
  });

  // A checkpoint's shape: a JS header of odd length, then rows of a tensor from an
  // unaligned offset (its middle pages direct, its ends through the page cache; over one
  // 8 MiB piece), then a small tensor (all through the page cache).
  async function writeCheckpointLike(file: string, direct: boolean): Promise<{ digest: string; expected: Buffer }> {
    const header = randomBytes(321);
    fs.writeFileSync(file, header);
    const width = 257; // 1028-byte rows: no row boundary is page-aligned
    const bigValues = Float32Array.from({ length: 9000 * width }, (_, i) => Math.sin(i) * 1000);
    const big = owned(bigValues, [9000, width]);
    const small = owned(Int32Array.from({ length: 30 }, (_, i) => i * 7 - 100), [10, 3]);
    const digest = native.sha256New();
    native.sha256Update(digest, header);
    const bigBytes = await native.tensorWriteRows(big, 3, 8999, file, header.length, digest, direct);
    expect(bigBytes).toBe(8996 * width * 4);
    await native.tensorWriteRows(small, 2, 9, file, header.length + bigBytes, digest, direct);
    const expected = Buffer.concat([header, bytesOf(bigValues.subarray(3 * width, 8999 * width)), bytesOf(new Int32Array(30).map((_, i) => i * 7 - 100).subarray(6, 27))]);
    return { digest: native.sha256Hex(digest), expected };
  }

  test.each([
    ['direct', true],
    ['through the page cache', false],
  ])('rows land byte for byte and the digest is of the file (%s)', async (_, direct) => {
    const file = path.join(dir, 'ckpt.bin');
    const { digest, expected } = await writeCheckpointLike(file, direct);
    const written = fs.readFileSync(file);
    expect(written.length).toBe(expected.length);
    expect(written.equals(expected)).toBe(true);
    expect(digest).toBe(nodeSha(written));
  });

  // What the page cache holds of a file, from util-linux's fincore (skipped without it).
  const hasFincore = spawnSync('fincore', ['--version']).status === 0;
  (hasFincore ? test : test.skip)('direct writes leave the rows out of the page cache (where the filesystem takes O_DIRECT)', async () => {
    const resident = (file: string) => {
      const r = spawnSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', file], { encoding: 'utf8' });
      expect(r.status).toBe(0);
      return Number(r.stdout.trim());
    };
    // tmpfs (since Linux 6.6) takes O_DIRECT but keeps every byte in memory all the same.
    const TMPFS_MAGIC = 0x01021994;
    const bypassesCache = (file: string) => {
      if (fs.constants.O_DIRECT === undefined || fs.statfsSync(file).type === TMPFS_MAGIC) return false;
      try {
        fs.closeSync(fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_DIRECT));
        return true;
      } catch {
        return false;
      }
    };
    const buffered = path.join(dir, 'buffered.bin');
    await writeCheckpointLike(buffered, false);
    const direct = path.join(dir, 'direct.bin');
    await writeCheckpointLike(direct, true);
    const size = fs.statSync(direct).size;
    // The page cache holds what went through it: all of the one, the ends of the other.
    expect(resident(buffered)).toBeGreaterThan(0.9 * size);
    if (bypassesCache(direct)) expect(resident(direct)).toBeLessThan(64 * 1024);
    else expect(resident(direct)).toBeGreaterThan(0.9 * size);
  });

  test('fileSha256Update hashes a range of an open file, over several pieces', async () => {
    const bytes = randomBytes((9 << 20) + 333);
    const file = path.join(dir, 'hashed.bin');
    fs.writeFileSync(file, bytes);
    const fd = fs.openSync(file, 'r');
    try {
      for (const [position, length] of [[0, bytes.length], [17, (8 << 20) + 1], [bytes.length, 0], [100, 5]]) {
        const digest = native.sha256New();
        await native.fileSha256Update(digest, fd, file, position, length);
        expect(native.sha256Hex(digest)).toBe(nodeSha(bytes.subarray(position, position + length)));
      }
      // The task reads its own copy of the descriptor: closing the caller's at once is safe.
      const early = fs.openSync(file, 'r');
      const digest = native.sha256New();
      const hashing = native.fileSha256Update(digest, early, file, 0, bytes.length);
      fs.closeSync(early);
      // Another file, likely under the number just closed: a task reading that number would hash it.
      const other = path.join(dir, 'other.bin');
      fs.writeFileSync(other, Buffer.alloc(bytes.length, 1));
      const reused = fs.openSync(other, 'r');
      try {
        await hashing;
      } finally {
        fs.closeSync(reused);
      }
      expect(native.sha256Hex(digest)).toBe(nodeSha(bytes));
      const short = await errorOf(() => native.fileSha256Update(native.sha256New(), fd, file, bytes.length - 10, 11));
      expect(short.code).toBe('HB_ERR_CORRUPT');
      expect(short.message).toContain(file);
    } finally {
      fs.closeSync(fd);
    }
  });

  test('bad digests, bytes and descriptors are refused with errors that name them', async () => {
    const digest = native.sha256New();
    const notBytes = await errorOf(() => native.sha256Update(digest, Float32Array.from([1]) as unknown as Uint8Array));
    expect(notBytes.name).toBe('TypeError');
    expect(notBytes.message).toMatch(/^sha256Update: bytes must be a Uint8Array/);
    const shared = await errorOf(() => native.sha256Update(digest, new Uint8Array(new SharedArrayBuffer(4))));
    expect(shared.name).toBe('TypeError');
    expect(shared.message).toMatch(/^sha256Update: bytes is backed by a SharedArrayBuffer/);
    native.sha256Hex(digest);
    expect((await errorOf(() => native.sha256Update(digest, new Uint8Array(1)))).message).toMatch(/already taken/);
    expect((await errorOf(() => native.sha256Hex(digest))).message).toMatch(/already taken/);
    const file = emptyFile('d.bin');
    const notBoolean = await errorOf(() => native.tensorWriteRows(owned(Float32Array.from([1]), [1]), 0, 1, file, 0, undefined, 1 as never));
    expect(notBoolean.name).toBe('TypeError');
    expect(notBoolean.message).toMatch(/^tensorWriteRows: direct must be a boolean/);
    const notDigest = await errorOf(() => native.tensorWriteRows(owned(Float32Array.from([1]), [1]), 0, 1, file, 0, {} as never));
    expect(notDigest.name).toBe('TypeError');
    expect(notDigest.message).toMatch(/^tensorWriteRows: digest is not a digest/);
    expect((await errorOf(() => native.sha256Hex({} as never))).message).toMatch(/^sha256Hex: digest is not a digest/);
    const badFd = await errorOf(() => native.fileSha256Update(native.sha256New(), -1, file, 0, 1));
    expect(badFd.message).toMatch(/^fd must be an integer/);
    const closedFd = await errorOf(() => native.fileSha256Update(native.sha256New(), 2 ** 30, file, 0, 1));
    expect(closedFd.code).toBe('HB_ERR_IO');
    expect(closedFd.message).toContain(file);
  });
});

describe('errors', () => {
  const tensor = () => owned(Float32Array.from([1, 2, 3, 4, 5, 6]), [3, 2]);

  test('a missing file is HB_ERR_IO naming it', async () => {
    const missing = path.join(dir, 'nope', 'x.bin');
    for (const run of [
      () => native.tensorWriteRows(tensor(), 0, 1, missing, 0),
      () => native.tensorReadRows(tensor(), 0, 1, missing, 0),
    ]) {
      const error = await errorOf(run);
      expect(error.code).toBe('HB_ERR_IO');
      expect(error.message).toContain(missing);
      expect(error.message).toMatch(/No such file/);
    }
  });

  test('a file too short is HB_ERR_CORRUPT naming the file and position', async () => {
    const file = path.join(dir, 'short.bin');
    fs.writeFileSync(file, Buffer.alloc(20));
    const read = await errorOf(() => native.tensorReadRows(tensor(), 0, 3, file, 0));
    expect(read.code).toBe('HB_ERR_CORRUPT');
    expect(read.message).toContain(file);
    expect(read.message).toMatch(/end of file at byte 20/);
  });

  test('row ranges, positions and integers are checked before anything is queued', async () => {
    const file = emptyFile('args.bin');
    const rowEnd = await errorOf(() => native.tensorWriteRows(tensor(), 0, 4, file, 0));
    expect(rowEnd.message).toMatch(/^rowEnd \(4\) must be in \[0, 3\]/);
    expect(rowEnd.code).toBe('HB_ERR_OUT_OF_RANGE');
    expect((await errorOf(() => native.tensorReadRows(tensor(), 2, 1, file, 0))).message).toMatch(/^rowBegin \(2\)/);
    expect((await errorOf(() => native.tensorWriteRows(tensor(), -1, 1, file, 0))).message).toMatch(/^rowBegin must be an integer/);
    expect((await errorOf(() => native.tensorWriteRows(tensor(), 0, 1.5, file, 0))).message).toMatch(/^rowEnd must be an integer/);
    expect((await errorOf(() => native.tensorWriteRows(tensor(), 0, 1, file, 2 ** 53))).message).toMatch(/^position must be an integer/);
    expect((await errorOf(() => native.tensorReadRows(tensor(), 0, 1, file, NaN))).message).toMatch(/^position must be an integer/);
    expect((await errorOf(() => native.tensorWriteRows(tensor(), 0, 1, '', 0))).message).toMatch(/path must not be empty/);
    const notNumber = await errorOf(() => native.tensorWriteRows(tensor(), '0' as unknown as number, 1, file, 0));
    expect(notNumber.name).toBe('TypeError');
    expect(notNumber.message).toMatch(/rowBegin/);
    expect(fs.statSync(file).size).toBe(0);
  });

  test('a non-tensor is a TypeError', async () => {
    const file = emptyFile('types.bin');
    const notTensor = await errorOf(() => native.tensorWriteRows(Float32Array.from([1]) as unknown as NativeTensorHandle, 0, 1, file, 0));
    expect(notTensor.name).toBe('TypeError');
    expect(notTensor.code).toBe('HB_ERR_TYPE');
    expect(notTensor.message).toMatch(/^tensor must be/);
  });

  test('a disposed tensor is refused', async () => {
    const file = emptyFile('disposed.bin', 24);
    const t = tensor();
    t.dispose();
    for (const run of [() => native.tensorWriteRows(t, 0, 1, file, 0), () => native.tensorReadRows(t, 0, 1, file, 0)]) {
      const error = await errorOf(run);
      expect(error.message).toMatch(/tensor has been disposed/);
      expect(error.code).toBe('HB_ERR_INVALID_ARGUMENT');
    }
  });
});

describeCuda('on a GPU', () => {
  test('rows go out of and back into device memory through the staging buffer', async () => {
    // More than one 16 MiB staging piece, not a multiple of it.
    const rows = 4099;
    const width = 1031;
    const values = Float32Array.from({ length: rows * width }, (_, i) => Math.fround(Math.sin(i) * 1000));
    const gpu = owned(values, [rows, width], 'cuda');
    const file = emptyFile('gpu.bin', 4);
    const bytes = (rows - 3) * width * 4;
    await expect(native.tensorWriteRows(gpu, 1, rows - 2, file, 4)).resolves.toBe(bytes);
    const expected = bytesOf(values.subarray(width, (rows - 2) * width));
    expect(fs.readFileSync(file).subarray(4).equals(expected)).toBe(true);

    const target = owned(new Float32Array(rows * width), [rows, width], 'cuda');
    await native.tensorReadRows(target, 2, rows - 1, file, 4);
    const back = (await native.tensorData(target)) as Float32Array;
    expect(bytesOf(back.subarray(2 * width, (rows - 1) * width)).equals(expected)).toBe(true);
    expect(back.subarray(0, 2 * width).every((v) => v === 0)).toBe(true);

    // Again with a digest and direct writes: each staged piece's aligned middle goes around
    // the page cache, its ends through it, and the digest sees the bytes in file order.
    const direct = emptyFile('gpu-direct.bin', 4);
    const digest = native.sha256New();
    native.sha256Update(digest, fs.readFileSync(direct));
    await expect(native.tensorWriteRows(gpu, 1, rows - 2, direct, 4, digest, true)).resolves.toBe(bytes);
    const written = fs.readFileSync(direct);
    expect(written.subarray(4).equals(expected)).toBe(true);
    expect(native.sha256Hex(digest)).toBe(createHash('sha256').update(written).digest('hex'));
  });
});
