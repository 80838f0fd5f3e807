// Defects a fuzzing pass found in hb.data and the column types it yields: reader threads
// that outlived an abandoned pass, uint64 ids that wrapped, a TSV file cut while it was
// read that ended the epoch silently short, and StringColumn / hb.ragged values accepted
// in shapes native code would misread.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as arrow from 'apache-arrow';
import * as hb from '../lib';
import { collect, rowsOf, writeParquetFile } from './support/data';
import { readCriteoTsvUnit } from '../lib/data/criteo_tsv_reader';

const dist = path.resolve(__dirname, '..', 'dist', 'index.js');
const sample = path.resolve(__dirname, 'fixtures', 'criteo_kaggle_sample.tsv');

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-data-reliability-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function writeParquet(name: string, columns: Record<string, arrow.Vector>, rowGroupRows: number): string {
  return writeParquetFile(path.join(dir, name), columns, rowGroupRows);
}

function criteoLine(i: number): string {
  const ints = Array.from({ length: 13 }, (_, j) => ((i + j) % 7 === 0 ? '' : String(((i * 31 + j * 7) % 2001) - 1000)));
  const cats = Array.from({ length: 26 }, (_, j) => ((i + j) % 11 === 0 ? '' : ((i * 2654435761 + j * 40503) >>> 0).toString(16).padStart(8, '0')));
  return [String(i % 3 === 0 ? 1 : 0), ...ints, ...cats].join('\t');
}

/** Runs `body` (with `ds` and `hb` in scope) in a fresh Node; what it printed and how long it took to exit after DONE. */
function runChild(makeDataset: string, body: string): { status: number | null; signal: string | null; stdout: string; stderr: string; exitAfterDoneMs: number } {
  const script = `
    const hb = require(${JSON.stringify(dist)});
    let done = 0;
    process.on('exit', () => { if (done) process.stdout.write('EXIT_AFTER ' + (Date.now() - done) + '\\n'); });
    (async () => {
      const ds = ${makeDataset};
      ${body}
      done = Date.now();
      console.log('DONE');
    })().catch((e) => { console.log('ERROR ' + e.message); process.exit(2); });`;
  const child = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  const match = /EXIT_AFTER (\d+)/.exec(child.stdout ?? '');
  return { status: child.status, signal: child.signal, stdout: child.stdout ?? '', stderr: child.stderr ?? '', exitAfterDoneMs: match ? Number(match[1]) : Infinity };
}

describe('a pass left half-read does not keep the process alive', () => {
  let parquetFile: string;
  beforeAll(() => {
    const n = 500;
    parquetFile = writeParquet('abandoned.parquet', {
      x: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => i)),
      label: arrow.vectorFromArray(Float32Array.from({ length: n }, (_, i) => i % 2)),
    }, 50);
  });

  // Two threads and several units each: a thread the pass never waited on (the second)
  // is the one that used to hold the process until a GC collected the pass (~8 s).
  const readers: Record<string, () => string> = {
    'Criteo TSV': () => `hb.data.Dataset.fromCriteoTsv(${JSON.stringify(sample)}, { blockBytes: 1000, numWorkers: 2 }).batch(2)`,
    Parquet: () => `hb.data.Dataset.fromParquet(${JSON.stringify(parquetFile)}, { labelField: 'label', numWorkers: 2 }).batch(7)`,
    'Parquet, prefetched': () => `hb.data.Dataset.fromParquet(${JSON.stringify(parquetFile)}, { labelField: 'label', numWorkers: 2 }).batch(7).prefetch(3)`,
  };
  const ways: Record<string, string> = {
    'a for-await loop that breaks': 'for await (const batch of ds) break;',
    'an exception in the loop body': "try { for await (const batch of ds) throw new Error('boom'); } catch {}",
    'an iterator closed by throw()': "const it = ds[Symbol.asyncIterator](); await it.next(); await it.throw(new Error('stop')).catch(() => {});",
    'an iterator dropped without return()': 'const it = ds[Symbol.asyncIterator](); await it.next();',
  };
  for (const [reader, make] of Object.entries(readers)) {
    for (const [how, body] of Object.entries(ways)) {
      test(`${reader}: ${how}: the child exits by itself, at once`, () => {
        const child = runChild(make(), body);
        expect(child.stdout).toContain('DONE');
        expect(child.signal).toBeNull(); // not killed by spawnSync's timeout
        expect(child.status).toBe(0);
        expect(child.exitAfterDoneMs).toBeLessThan(3000);
      });
    }
  }

  // The threads themselves end (not merely stop holding the event loop): counted as the
  // process's OS threads, which only Linux shows this way.
  const linux = fs.existsSync('/proc/self/task') ? test : test.skip;
  linux('the reader threads are kept for the next pass after return(), and end when a dropped iterator is collected', () => {
    const make = `hb.data.Dataset.fromCriteoTsv(${JSON.stringify(sample)}, { blockBytes: 1000, numWorkers: 3 }).batch(2)`;
    const body = `
      const threads = () => require('fs').readdirSync('/proc/self/task').length;
      const settle = async () => { for (let i = 0; i < 20; i++) { global.gc(); await new Promise((r) => setTimeout(r, 25)); } };
      let it = ds[Symbol.asyncIterator]();
      await it.next();
      const reading = threads();
      await it.return();
      await settle();
      const returned = threads();
      it = ds[Symbol.asyncIterator]();
      await it.next();
      const readingAgain = threads();
      it = null;
      await settle();
      console.log('THREADS ' + JSON.stringify({ reading, returned, readingAgain, collected: threads() }));`;
    const child = runChild(make, body);
    expect(child.status).toBe(0);
    const counts = JSON.parse(/THREADS (.*)/.exec(child.stdout)![1]) as Record<string, number>;
    // return(): the 3 threads stop and wait, idle, for the next pass, which takes them
    // (no 3 gone, no 3 new; other threads of the process may come and go).
    expect(counts.reading - counts.returned).toBeLessThan(3);
    expect(counts.readingAgain - counts.returned).toBeLessThan(3);
    // A dropped iterator: collected, with its threads.
    expect(counts.readingAgain - counts.collected).toBeGreaterThanOrEqual(3);
  });
});

describe('Parquet uint64 ids of 2^63 and more', () => {
  const list = (type: arrow.DataType) => new arrow.List(new arrow.Field('item', type, true));

  test('are an Error naming the file, row group, column, value and row, not negative ids (skipCorrupted too)', async () => {
    const file = writeParquet('u64_groups.parquet', { id: arrow.makeVector(BigUint64Array.from([1n, 2n, 3n, 4n, 2n ** 63n + 7n, 5n])) }, 2);
    const message = /u64_groups\.parquet, row group 2 \(rows 4\.\.5\): column 'id' holds the uint64 value 9223372036854775815 at row 0 of its row group, beyond int64 \(ids must be below 2\^63\); that is row 4 of the file/;
    await expect(collect(hb.data.Dataset.fromParquet(file))).rejects.toThrow(message);
    await expect(collect(hb.data.Dataset.fromParquet(file, { skipCorrupted: true }))).rejects.toThrow(message);
  });

  test('a null in a uint64 column takes its default; only present values are checked, and the row named is the bad one', async () => {
    // parquet-wasm leaves 2^64 - 1 in a null's slot, which used to read as a bad id.
    const nulls = writeParquet('u64_nulls.parquet', { id: arrow.vectorFromArray([1n, null, 2n ** 63n - 1n], new arrow.Uint64()) }, 10);
    expect(rowsOf(await collect(hb.data.Dataset.fromParquet(nulls, { defaults: { id: 42n } }))).map((r) => r.id)).toEqual([1n, 42n, 2n ** 63n - 1n]);
    const bad = writeParquet('u64_nulls_bad.parquet', { id: arrow.vectorFromArray([1n, null, 2n ** 64n - 2n], new arrow.Uint64()) }, 10);
    await expect(collect(hb.data.Dataset.fromParquet(bad))).rejects.toThrow(/column 'id' holds the uint64 value 18446744073709551614 at row 2 of its row group/);
  });

  test('in a list column the row named is the list row, not the element index; nulls in lists are dropped before the check', async () => {
    const ok = writeParquet('u64_list_ok.parquet', { ids: arrow.vectorFromArray([[1n, null], null, [3n]], list(new arrow.Uint64())) }, 10);
    expect(rowsOf(await collect(hb.data.Dataset.fromParquet(ok))).map((r) => r.ids)).toEqual([[1n], [], [3n]]);
    const bad = writeParquet('u64_list.parquet', { ids: arrow.vectorFromArray([[1n, 2n], [], [3n, 2n ** 63n]], list(new arrow.Uint64())) }, 10);
    await expect(collect(hb.data.Dataset.fromParquet(bad))).rejects.toThrow(/column 'ids' holds the uint64 value 9223372036854775808 at row 2 of its row group.*that is row 2 of the file/);
  });

  test('a dictionary of uint64 values is checked by row too', async () => {
    const file = writeParquet('u64_dict.parquet', { d: arrow.vectorFromArray([1n, 1n, 2n ** 63n, 1n], new arrow.Dictionary(new arrow.Uint64(), new arrow.Int32())) }, 10);
    await expect(collect(hb.data.Dataset.fromParquet(file))).rejects.toThrow(/column 'd' holds the uint64 value 9223372036854775808 at row 2 of its row group/);
  });
});

describe('Criteo TSV: an integer field too long for its column', () => {
  const withI5 = (value: string) => {
    const fields = criteoLine(1).split('\t');
    fields[5] = value;
    return fields.join('\t');
  };

  test('is an Error naming the file, line and field, for float32 and int32 columns and either sign; skipCorrupted counts it', async () => {
    const file = path.join(dir, 'long_int.tsv');
    fs.writeFileSync(file, `${criteoLine(0)}\n${withI5('9'.repeat(400))}\n${criteoLine(2)}\n`);
    await expect(collect(hb.data.Dataset.fromCriteoTsv(file))).rejects.toThrow(/long_int\.tsv, line 2: field I5 is "9{40}\.\.\.", beyond float32's range/);
    await expect(collect(hb.data.Dataset.fromCriteoTsv(file, { integerDtype: 'int32' }))).rejects.toThrow(/long_int\.tsv, line 2: field I5 is "9{40}\.\.\.", beyond int32/);
    fs.writeFileSync(file, `${criteoLine(0)}\n${criteoLine(2)}\n${withI5('-' + '1'.repeat(400))}\n`);
    await expect(collect(hb.data.Dataset.fromCriteoTsv(file))).rejects.toThrow(/long_int\.tsv, line 3: field I5 is "-1{39}\.\.\.", beyond float32's range/);
    const ds = hb.data.Dataset.fromCriteoTsv(file, { skipCorrupted: true });
    const rows = rowsOf(await collect(ds));
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => Number.isFinite(r.I5 as number))).toBe(true);
    expect(ds.skipped).toBe(1);
  });
});

describe('Criteo TSV: a file cut while the pass reads it', () => {
  const lines = Array.from({ length: 20_000 }, (_, i) => criteoLine(i));
  const text = lines.join('\n') + '\n';

  /** Reads `file` in 64 KiB pieces on one thread, cutting it to `cutAt` bytes once the first batch has arrived. */
  async function readCut(name: string, cutAt: (size: number) => number, options: { skipCorrupted?: boolean } = {}) {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    const ds = hb.data.Dataset.fromCriteoTsv(file, { blockBytes: 64 << 10, numWorkers: 1, ...options });
    let rows = 0;
    for await (const batch of ds.batch(256)) {
      if (rows === 0) fs.truncateSync(file, cutAt(text.length));
      rows += (batch.labels as Float32Array).length;
    }
    return { rows, ds };
  }

  test('cut to nothing after pieces already read: an Error saying where it ended and how many rows the pass had read', async () => {
    // The pieces read ahead before the cut are whole, and every later piece starts past
    // the new end: no piece meets a cut line, which used to end the epoch silently.
    await expect(readCut('cut_empty.tsv', () => 0)).rejects.toThrow(
      /cut_empty\.tsv ended at byte 0, before its piece at bytes \d+\.\.\d+, though it had \d+ bytes when the pass began: the file was truncated while it was read; the pass had read \d+ rows when it stopped there/,
    );
  });

  test('cut to nothing while a piece is half read: the Error gives where the file ends now, not where the read was', async () => {
    // The reader itself, so the cut falls mid-piece every time: it holds the first MiB it
    // read, gives rows from it, and meets the cut at its next read.
    const file = path.join(dir, 'cut_mid_piece.tsv');
    fs.writeFileSync(file, text);
    const start = text.indexOf('\n', 100_000) + 1;
    const unit = { index: 0, file, start, end: text.length, fileSize: text.length };
    const task = { defaults: Array(13).fill(0), integerDtype: 'float32' as const, labelField: 'label', blockRows: 64, skipCorrupted: false };
    const chunks = readCriteoTsvUnit(unit, task, { skip: () => undefined });
    expect((await chunks.next()).done).toBe(false);
    fs.truncateSync(file, 0);
    const drain = async () => {
      for (let next = await chunks.next(); !next.done; next = await chunks.next());
    };
    await expect(drain()).rejects.toThrow(
      new RegExp(`cut_mid_piece\\.tsv ended at byte 0, before its piece at bytes ${start}\\.\\.${text.length}, though it had ${text.length} bytes when the pass began`),
    );
  });

  test('cut at a line boundary in the middle: an Error naming the line after which it ended', async () => {
    const cut = text.indexOf('\n', text.length >> 1) + 1;
    const after = text.slice(0, cut).split('\n').length - 1;
    await expect(readCut('cut_line.tsv', () => cut)).rejects.toThrow(
      new RegExp(`cut_line\\.tsv ended at byte ${cut} \\(after line ${after}\\), before byte ${text.length} where it ended when the pass began: the file was truncated while it was read; the pass had read ${after} rows when it stopped there`),
    );
  });

  test('under skipCorrupted the pass ends short without an Error, and stats say why', async () => {
    const { rows, ds } = await readCut('cut_skip.tsv', () => 0, { skipCorrupted: true });
    expect(rows).toBeLessThan(lines.length);
    expect(rows).toBe(ds.stats.rows);
    expect(ds.stats.messages.join('\n')).toMatch(/cut_skip\.tsv ended at byte 0, .*the file was truncated while it was read/);
  });

  test('a file that is not cut reads whole, with or without a newline after its last line, in any number of pieces', async () => {
    for (const blockBytes of [100, 1000, 4 << 20]) {
      const ds = hb.data.Dataset.fromCriteoTsv(sample, { blockBytes, numWorkers: 2 }); // the sample has no final newline
      expect(rowsOf(await collect(ds))).toHaveLength(100);
      expect(ds.stats.messages).toEqual([]);
    }
  });
});

describe('column values built wrong fail where they are built', () => {
  const offsets = Int32Array.from([0, 2]);

  test('StringColumn: bytes that are not a Uint8Array are a TypeError naming bytes', () => {
    for (const [bytes, got] of [
      [[104, 105], 'Array'],
      [new Int8Array(2), 'Int8Array'],
      [new Uint8ClampedArray(2), 'Uint8ClampedArray'],
      [new Uint16Array(2), 'Uint16Array'],
      [new ArrayBuffer(2), 'ArrayBuffer'],
      ['hi', 'string'],
      [null, 'null'],
    ] as Array<[unknown, string]>) {
      let error: Error | undefined;
      try {
        new hb.StringColumn(bytes as Uint8Array, offsets);
      } catch (e) {
        error = e as Error;
      }
      expect(error?.name).toBe('TypeError');
      expect(error?.message).toBe(`StringColumn: bytes must be a Uint8Array (UTF-8), got ${got}`);
    }
    expect(new hb.StringColumn(Buffer.from('hi'), offsets).get(0)).toBe('hi');
  });

  test('hb.ragged: rowSplits that do not start at 0, decrease, or do not end at the number of values are a RangeError naming rowSplits', () => {
    const values = BigInt64Array.from([1n, 2n, 3n]);
    const cases: Array<[Int32Array | number[], RegExp]> = [
      [Int32Array.from([1, 3]), /^ragged: rowSplits must start at 0, got rowSplits\[0\] = 1$/],
      [[0, 2, 1, 3], /^ragged: rowSplits must be non-decreasing, but rowSplits\[2\] = 1 < rowSplits\[1\] = 2$/],
      [[0, -1, 3], /^ragged: rowSplits must be non-decreasing, but rowSplits\[1\] = -1 < rowSplits\[0\] = 0$/],
      [[0, 2], /^ragged: rowSplits ends at 2 but values has 3 values$/],
      [[0, 4], /^ragged: rowSplits ends at 4 but values has 3 values$/],
      [[], /^ragged: rowSplits must hold at least one value \(0\)$/],
    ];
    for (const [splits, message] of cases) {
      let error: Error | undefined;
      try {
        hb.ragged(values, splits);
      } catch (e) {
        error = e as Error;
      }
      expect(error?.name).toBe('RangeError');
      expect(error?.message).toMatch(message);
    }
    expect(hb.ragged(values, [0, 0, 3, 3]).toArray()).toEqual([[], [1n, 2n, 3n], []]);
    expect(hb.ragged(new BigInt64Array(0), [0]).nrows).toBe(0);
  });
});
