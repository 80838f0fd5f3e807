// Reader threads run at a lower CPU priority (lib/data/reader_priority.ts): nice 19 unless
// HB_READER_NICE says otherwise, read when a pass starts its threads. Linux gives each
// thread its own niceness, which /proc/self/task shows; the JS thread keeps its own.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as arrow from 'apache-arrow';
import * as hb from '../lib';
import { writeParquetFile } from './support/data';

const linux = process.platform === 'linux';

/** Each thread of this process: its niceness. */
function threadNiceness(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // Fields after the command's closing parenthesis: state is the 3rd field, nice the 19th.
      out.set(tid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return out;
}

const dataset = () =>
  hb.data.Dataset.synthetic({ numDense: 2, tables: [{ name: 'C1', vocabularySize: 100, hotness: 1 }], numSamples: 40_000, seed: 3, numWorkers: 2, blockRows: 1024 }).batch(512);

/** The niceness of the threads a pass started (those that were not there before it). */
async function readerThreadNiceness(setting: string | undefined): Promise<{ readers: number[]; main: number }> {
  const saved = process.env.HB_READER_NICE;
  if (setting === undefined) delete process.env.HB_READER_NICE;
  else process.env.HB_READER_NICE = setting;
  try {
    const before = threadNiceness();
    let during = new Map<string, number>();
    let batches = 0;
    for await (const batch of dataset()) {
      expect(batch.labels.length).toBe(512);
      // By the third batch both threads have posted blocks (each is credited 4 ahead).
      if (++batches === 3) {
        during = threadNiceness();
        break; // a pass stopped early keeps its threads for the next one
      }
    }
    const readers = [...during].filter(([tid]) => !before.has(tid)).map(([, nice]) => nice);
    return { readers, main: during.get(String(process.pid)) as number };
  } finally {
    if (saved === undefined) delete process.env.HB_READER_NICE;
    else process.env.HB_READER_NICE = saved;
  }
}

(linux ? describe : describe.skip)('reader threads at a lower priority (Linux)', () => {
  const mainNice = threadNiceness().get(String(process.pid)) as number;

  test('by default the reader threads run at nice 19; the JS thread keeps its niceness', async () => {
    const { readers, main } = await readerThreadNiceness(undefined);
    // The new threads are the 2 readers, and any V8 started meanwhile (at the process's).
    expect(readers.filter((n) => n === 19)).toHaveLength(mainNice === 19 ? readers.length : 2);
    expect(main).toBe(mainNice);
  });

  test('HB_READER_NICE=5 sets it; 0 keeps the process priority', async () => {
    if (mainNice < 5) {
      const five = await readerThreadNiceness('5');
      expect(five.readers.filter((n) => n === 5)).toHaveLength(2);
    }
    const zero = await readerThreadNiceness('0');
    expect(zero.readers.length).toBeGreaterThanOrEqual(2);
    expect(zero.readers.every((n) => n === mainNice)).toBe(true);
    expect(zero.main).toBe(mainNice);
  });

  test("threads the readers' work starts elsewhere keep the process's priority (libuv's pool after a Parquet pass)", () => {
    // A fresh process, whose libuv pool nothing has started yet: Parquet's readers read
    // through fs.promises, and the pool threads that serve them serve the whole process.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-reader-nice-'));
    try {
      const columns = { x: arrow.vectorFromArray(Int32Array.from({ length: 400 }, (_, i) => i)), label: arrow.vectorFromArray(Float32Array.from({ length: 400 }, (_, i) => i % 2)) };
      const file = writeParquetFile(path.join(dir, 'rows.parquet'), columns, 50);
      const script = `
        const fs = require('fs');
        const hb = require(${JSON.stringify(path.resolve(__dirname, '..', 'dist', 'index.js'))});
        const niceOf = (t) => { try { const s = fs.readFileSync('/proc/self/task/' + t + '/stat', 'utf8'); return Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[16]); } catch { return -1; } };
        const nices = () => fs.readdirSync('/proc/self/task').map(niceOf);
        (async () => {
          let rows = 0;
          for await (const b of hb.data.Dataset.fromParquet(${JSON.stringify(file)}, { labelField: 'label', numWorkers: 2 }).batch(50)) rows += b.labels.length;
          await new Promise((resolve) => fs.stat(__filename, resolve)); // the pool serves this thread too
          console.log(JSON.stringify({ rows, at19: nices().filter((n) => n === 19).length, main: niceOf(process.pid) }));
        })().catch((e) => { console.error(e); process.exit(1); });`;
      const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HB_READER_NICE: '19', UV_THREADPOOL_SIZE: '4' } });
      expect(child.stderr).toBe('');
      const report = JSON.parse(child.stdout.trim());
      expect(report.rows).toBe(400);
      if (report.main === 19) return; // the whole process runs at 19 already
      // The 2 readers (kept for the next pass), not the pool's 4 threads as well.
      expect(report.at19).toBe(2);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a bad HB_READER_NICE fails the pass with an Error naming it', async () => {
    for (const bad of ['20', '-1', 'low', '1.5']) {
      await expect(readerThreadNiceness(bad)).rejects.toThrow(`HB_READER_NICE must be an integer from 0 (the process's priority) to 19 (the lowest), got '${bad}'`);
    }
  });
});
