// Reader threads run at a lower CPU priority (lib/data/reader_priority.ts): nice 19 unless
// HB_READER_NICE says otherwise, read when a pass starts its threads. Linux gives each
// thread its own niceness, which /proc/self/task shows; the JS thread keeps its own.
import * as fs from 'fs';
import * as hb from '../lib';

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
        break; // a pass stopped early ends its threads
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

  test('a bad HB_READER_NICE fails the pass with an Error naming it', async () => {
    for (const bad of ['20', '-1', 'low', '1.5']) {
      await expect(readerThreadNiceness(bad)).rejects.toThrow(`HB_READER_NICE must be an integer from 0 (the process's priority) to 19 (the lowest), got '${bad}'`);
    }
  });
});
