// hb.data.Dataset.fromCriteoTsv on the real Criteo sample and on files the tests write.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { collect, rowsOf } from './support/data';

const samplePath = path.resolve(__dirname, 'fixtures/criteo_kaggle_sample.tsv');

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-data-criteo-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The layout read by a plain split, as the reference. */
function referenceRows(text: string): string[][] {
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => line.split('\t'));
}

function writeTsv(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

function criteoLine(i: number, { label = i % 3 === 0 ? 1 : 0 } = {}): string {
  const ints = Array.from({ length: 13 }, (_, j) => ((i + j) % 7 === 0 ? '' : String(((i * 31 + j * 7) % 2001) - 1000)));
  const cats = Array.from({ length: 26 }, (_, j) => ((i + j) % 11 === 0 ? '' : ((i * 2654435761 + j * 40503) >>> 0).toString(16).padStart(8, '0')));
  return [String(label), ...ints, ...cats].join('\t');
}

describe('Dataset.fromCriteoTsv', () => {
  test('the real Criteo sample: 100 rows, 29 positives, every field as the layout says', async () => {
    expect(fs.existsSync(samplePath)).toBe(true);
    const reference = referenceRows(fs.readFileSync(samplePath, 'utf8'));
    expect(reference).toHaveLength(100);
    const batches = await collect(hb.data.Dataset.fromCriteoTsv(samplePath).batch(32));
    expect(batches.map((b) => (b.labels as Float32Array).length)).toEqual([32, 32, 32, 4]);
    const batch = batches[0];
    expect(batch.labels).toBeInstanceOf(Float32Array);
    expect(Object.keys(batch.features)).toEqual([...hb.data.CRITEO_INTEGER_FIELDS, ...hb.data.CRITEO_CATEGORICAL_FIELDS]);
    expect(batch.features.I1).toBeInstanceOf(Float32Array);
    expect(batch.features.C1).toBeInstanceOf(hb.StringColumn);

    const rows = rowsOf(batches);
    expect(rows).toHaveLength(100);
    expect(rows.filter((r) => r.label === 1)).toHaveLength(29);
    let negatives = 0;
    let emptyInts = 0;
    let emptyCats = 0;
    rows.forEach((row, i) => {
      const fields = reference[i];
      expect(row.label).toBe(Number(fields[0]));
      for (let j = 1; j <= 13; j++) {
        const text = fields[j];
        if (text === '') emptyInts++;
        if (text.startsWith('-')) negatives++;
        expect(row[`I${j}`]).toBe(text === '' ? 0 : Number(text)); // missing numeric -> default 0
      }
      for (let j = 14; j < 40; j++) {
        const text = fields[j];
        if (text === '') emptyCats++;
        expect(row[`C${j - 13}`]).toBe(text === '' ? null : text); // missing categorical -> no value (no id)
      }
    });
    // The sample exercises every rule: empty and negative integers, empty categoricals.
    expect(negatives).toBeGreaterThan(0);
    expect(emptyInts).toBeGreaterThan(0);
    expect(emptyCats).toBeGreaterThan(0);
    // Strings are one UTF-8 buffer plus offsets: 8 hex characters per present value.
    const c1 = batch.features.C1 as hb.StringColumn;
    expect(c1.offsets).toBeInstanceOf(Int32Array);
    expect(c1.offsets[1] - c1.offsets[0]).toBe(8);
  });

  test('defaults for empty integers, int32 integers, a custom label name', async () => {
    const file = writeTsv('defaults.tsv', [criteoLine(0), criteoLine(1)].join('\n') + '\n');
    const [batch] = await collect(
      hb.data.Dataset.fromCriteoTsv(file, { defaults: { I1: -1, I8: 42 }, integerDtype: 'int32', labelField: 'click' }).batch(10),
    );
    expect(batch.labels).toEqual(Float32Array.from([1, 0]));
    expect(batch.features.I1).toBeInstanceOf(Int32Array);
    // criteoLine(0) leaves I1 and I8 empty ((0 + j) % 7 === 0 for j = 0, 7)
    expect((batch.features.I1 as Int32Array)[0]).toBe(-1);
    expect((batch.features.I8 as Int32Array)[0]).toBe(42);
    expect((batch.features.I2 as Int32Array)[0]).toBe(Number(criteoLine(0).split('\t')[2]));
  });

  test('CRLF line ends, no trailing newline, and many files read in order by several threads', async () => {
    const lines = Array.from({ length: 300 }, (_, i) => criteoLine(i));
    const a = writeTsv('a.tsv', lines.slice(0, 100).join('\r\n') + '\r\n');
    const b = writeTsv('b.tsv', lines.slice(100, 250).join('\n'));
    const c = writeTsv('c.tsv', lines.slice(250).join('\n') + '\n');
    for (const numWorkers of [1, 3]) {
      const rows = rowsOf(await collect(hb.data.Dataset.fromCriteoTsv([a, b, c], { numWorkers, blockBytes: 2000, blockRows: 7 }).batch(64)));
      expect(rows.map((r) => r.C1)).toEqual(lines.map((l) => l.split('\t')[14] || null));
      expect(rows.map((r) => r.I13)).toEqual(lines.map((l) => Number(l.split('\t')[13] || 0)));
    }
  });

  test('partitions split the rows of one file: every row exactly once', async () => {
    const lines = Array.from({ length: 1000 }, (_, i) => criteoLine(i));
    const file = writeTsv('partitioned.tsv', lines.join('\n') + '\n');
    const partitionCount = 3;
    const seen: string[] = [];
    for (let partitionIndex = 0; partitionIndex < partitionCount; partitionIndex++) {
      const part = rowsOf(await collect(hb.data.Dataset.fromCriteoTsv(file, { partitionCount, partitionIndex, numWorkers: 2, blockBytes: 10_000 }).batch(100)));
      expect(part.length).toBeGreaterThan(200); // each partition gets a real share
      seen.push(...part.map((r) => `${r.label}|${r.C1}|${r.C2}|${r.I2}|${r.I3}`));
    }
    const expected = lines.map((l) => {
      const f = l.split('\t');
      return `${f[0]}|${f[14] || null}|${f[15] || null}|${Number(f[2] || 0)}|${Number(f[3] || 0)}`;
    });
    expect(seen.sort()).toEqual(expected.sort());
  });

  test('partitions take equal spans of the bytes, whatever the number of pieces: near-equal rows (a job stops at its shortest share)', async () => {
    const lines = Array.from({ length: 990 }, (_, i) => criteoLine(i));
    const text = lines.join('\n') + '\n';
    const file = writeTsv('balanced.tsv', text);
    const size = Buffer.byteLength(text);
    // 3 pieces between 2 partitions went 2 and 1 (661 and 329 rows); 9 between 4, 3-2-2-2.
    for (const [pieces, partitionCount] of [[3, 2], [9, 4], [11, 3], [1, 3]]) {
      const shares: number[] = [];
      const seen: string[] = [];
      for (let partitionIndex = 0; partitionIndex < partitionCount; partitionIndex++) {
        const part = rowsOf(await collect(hb.data.Dataset.fromCriteoTsv(file, { partitionCount, partitionIndex, numWorkers: 2, blockBytes: Math.ceil(size / pieces) }).batch(100)));
        shares.push(part.length);
        seen.push(...part.map((r) => `${r.label}|${r.C1}|${r.C2}|${r.I2}`));
      }
      // Lines differ in length a little: shares within 1% of each other, every line once.
      expect(Math.max(...shares) / Math.min(...shares)).toBeLessThan(1.01 + 2 / Math.min(...shares));
      expect(seen).toHaveLength(990);
      expect(new Set(seen).size).toBe(990);
    }
    // An empty file is empty for every partition, as for one (not an Error saying a partition gets no rows).
    const empty = writeTsv('empty.tsv', '');
    for (const partitionIndex of [0, 1]) expect(await collect(hb.data.Dataset.fromCriteoTsv(empty, { partitionCount: 2, partitionIndex }).batch(10))).toEqual([]);
  });

  test('a missing file is an Error naming it', async () => {
    const missing = path.join(dir, 'nope.tsv');
    await expect(collect(hb.data.Dataset.fromCriteoTsv(missing))).rejects.toThrow(/Dataset\.fromCriteoTsv: cannot read .*nope\.tsv/);
  });

  test('a row with the wrong number of fields names the file and line; skipCorrupted skips and counts', async () => {
    const lines = Array.from({ length: 50 }, (_, i) => criteoLine(i));
    lines[17] = lines[17].split('\t').slice(0, 39).join('\t'); // line 18: a field short
    lines[30] = `${lines[30]}\textra`; // line 31: a field too many
    lines[41] = lines[41].replace(/^[01]\t/, 'x\t'); // line 42: not a label
    const file = writeTsv('bad.tsv', lines.join('\n') + '\n');
    await expect(collect(hb.data.Dataset.fromCriteoTsv(file, { blockBytes: 1000 }))).rejects.toThrow(
      new RegExp(`${path.basename(file).replace('.', '\\.')}, line 18: 39 fields, expected 40`),
    );
    const ds = hb.data.Dataset.fromCriteoTsv(file, { skipCorrupted: true, blockBytes: 1000 });
    const rows = rowsOf(await collect(ds.batch(16)));
    expect(rows).toHaveLength(47);
    expect(ds.skipped).toBe(3);
    expect(ds.stats.rows).toBe(47);
    expect(ds.stats.messages.join('\n')).toMatch(/line 31: 41 fields/);
    expect(ds.stats.messages.join('\n')).toMatch(/line 42: the label is "x"/);
  });

  test('a compressed, Parquet or binary file is refused as not text, skipCorrupted or not, without printing its bytes', async () => {
    const text = Buffer.from(criteoLine(0) + '\n');
    const cases: Array<[string, Buffer, RegExp]> = [
      ['gz.tsv', Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), text]), /gz\.tsv is not a text file \(gzip-compressed\).*decompress it first$/],
      ['pq.tsv', Buffer.concat([Buffer.from('PAR1'), text]), /pq\.tsv is not a text file \(Parquet\).*Dataset\.fromParquet$/],
      ['elf.tsv', Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), text]), /elf\.tsv is not a text file \(binary: it has NUL bytes\); Criteo TSV is tab-separated text$/],
    ];
    for (const [name, bytes, message] of cases) {
      const file = path.join(dir, name);
      fs.writeFileSync(file, bytes);
      for (const skipCorrupted of [false, true]) {
        const error = await collect(hb.data.Dataset.fromCriteoTsv(file, { skipCorrupted })).then(() => undefined, (e: Error) => e);
        expect(error?.message).toMatch(message);
        expect(error?.message).not.toMatch(/[\u0000-\u0008]/);
      }
    }
  });

  test('an integer field that does not parse names the field', async () => {
    const line = criteoLine(1).split('\t');
    line[3] = '12a';
    const file = writeTsv('badint.tsv', `${criteoLine(0)}\n${line.join('\t')}\n`);
    await expect(collect(hb.data.Dataset.fromCriteoTsv(file))).rejects.toThrow(/badint\.tsv, line 2: field I3 is "12a", not an integer/);
  });

  test('an integer beyond float32 (a 400-digit count) is an Error naming the field, not Infinity', async () => {
    const line = criteoLine(1).split('\t');
    line[2] = '9'.repeat(400);
    const file = writeTsv('huge.tsv', `${criteoLine(0)}\n${line.join('\t')}\n`);
    await expect(collect(hb.data.Dataset.fromCriteoTsv(file))).rejects.toThrow(/huge\.tsv, line 2: field I2 is "9{40}\.\.\.", beyond float32's range/);
    const ds = hb.data.Dataset.fromCriteoTsv(file, { skipCorrupted: true });
    expect(rowsOf(await collect(ds.batch(4)))).toHaveLength(1);
    expect(ds.skipped).toBe(1);
    // 3.4e38 still fits; int32 columns have their own bound
    line[2] = '340282346638528859811704183484516925440';
    const fits = writeTsv('fits.tsv', `${line.join('\t')}\n`);
    const [batch] = await collect(hb.data.Dataset.fromCriteoTsv(fits).batch(1));
    expect(Number.isFinite((batch.features.I2 as Float32Array)[0])).toBe(true);
  });

  test('a file cut while it is read ends the pass with an Error saying where, not an epoch silently short', async () => {
    const lines = Array.from({ length: 40_000 }, (_, i) => criteoLine(i));
    const file = writeTsv('cut.tsv', lines.join('\n') + '\n');
    const size = fs.statSync(file).size;
    const read = async (options: { skipCorrupted?: boolean }) => {
      fs.writeFileSync(file, lines.join('\n') + '\n');
      const ds = hb.data.Dataset.fromCriteoTsv(file, { blockBytes: 64 << 10, numWorkers: 1, ...options });
      let rows = 0;
      for await (const batch of ds.batch(256)) {
        if (rows === 0) fs.truncateSync(file, Math.floor(size / 2)); // after the first batch
        rows += (batch.labels as Float32Array).length;
      }
      return { rows, ds };
    };
    await expect(read({})).rejects.toThrow(/cut\.tsv ended at byte \d+ \(after line \d+\), before byte \d+ where it ended when the pass began: the file was truncated while it was read/);
    const { rows, ds } = await read({ skipCorrupted: true });
    expect(rows).toBeLessThan(40_000);
    expect(ds.stats.messages.join('\n')).toMatch(/truncated while it was read/);
  });
});
