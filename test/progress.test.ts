// The training progress bar as a terminal shows it: one bar for a whole trainAndEvaluate,
// counting to maxSteps from the restored step, log lines (evaluations among them) above it
// with no frozen copies of the bar left behind, and rates that go on after an evaluation.
// The terminal is a small emulator fed what the bar writes to stderr and what the log
// writes, in order; the rates are checked against a fake clock.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { formatEta, TrainingProgress } from '../lib/estimator/progress';
import { dataset, EVAL, numDense, tables, TRAIN } from './support/planted_data';

/** What a terminal shows: rows of text, a cursor, DECSC/DECRC and the CSI codes readline writes. */
class Screen {
  rows: string[] = [''];
  private row = 0;
  private col = 0;
  private saved = { row: 0, col: 0 };

  write(text: string): void {
    const re = /\x1b7|\x1b8|\x1b\[(\??)([\d;]*)([A-Za-z])|\r|\n|[^\x1b\r\n]+/g;
    let m: RegExpExecArray | null;
    while ((m = re.exec(text))) {
      const t = m[0];
      if (t === '\x1b7') this.saved = { row: this.row, col: this.col };
      else if (t === '\x1b8') ({ row: this.row, col: this.col } = this.saved);
      else if (t === '\r') this.col = 0;
      else if (t === '\n') {
        this.row++;
        this.col = 0;
      } else if (t.startsWith('\x1b[')) {
        if (m[1] === '?') continue; // cursor shown/hidden, wrapping: nothing on screen
        const n = m[2] === '' ? undefined : Number(m[2]);
        const line = this.line();
        if (m[3] === 'G') this.col = (n ?? 1) - 1;
        else if (m[3] === 'K' && (n ?? 0) === 0) this.set(line.slice(0, this.col));
        else if (m[3] === 'K' && n === 1) this.set(' '.repeat(this.col) + line.slice(this.col));
        else if (m[3] === 'K' && n === 2) this.set('');
        else throw new Error(`the screen does not know ${JSON.stringify(t)}`);
      } else {
        const line = this.line().padEnd(this.col);
        this.set(line.slice(0, this.col) + t + line.slice(this.col + t.length));
        this.col += t.length;
      }
    }
  }

  /** The rows with text, trailing spaces trimmed. */
  text(): string[] {
    return this.rows.map((r) => (r ?? '').trimEnd()).filter((r) => r !== '');
  }

  private line(): string {
    while (this.rows.length <= this.row) this.rows.push('');
    return this.rows[this.row];
  }

  private set(line: string): void {
    this.line();
    this.rows[this.row] = line;
  }
}

/** A fake terminal stream for the progress module. */
function fakeTty(screen: Screen, isTTY = true) {
  const chunks: string[] = [];
  const stream = {
    isTTY,
    columns: 160,
    write(chunk: string | Uint8Array, ...rest: unknown[]): boolean {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      chunks.push(text);
      screen.write(text);
      const cb = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      cb?.();
      return true;
    },
  };
  return { stream: stream as unknown as NodeJS.WritableStream & { isTTY?: boolean }, chunks };
}

/** The bars drawn, in order: their text from each chunk written. */
const barsIn = (chunks: string[]) => chunks.filter((c) => c.startsWith('train ')).map((c) => c.trimEnd());
const isBar = (row: string) => row.startsWith('train ');

describe('TrainingProgress (fake terminal, fake clock)', () => {
  test('rates over a window of training time: an evaluation pause neither resets nor dilutes them', () => {
    const screen = new Screen();
    const { stream, chunks } = fakeTty(screen);
    let clock = 1000;
    const logs: string[] = [];
    const progress = new TrainingProgress({ log: (l) => logs.push(l), every: 0, showBar: true, total: 100, stream, now: () => clock });
    try {
      progress.begin(0, 40);
      for (let s = 1; s <= 20; s++) {
        clock += 10; // 100 steps/s, 8 samples a step
        progress.step(s, 0.5, 8);
      }
      expect(progress.rate().steps).toBeCloseTo(100, 6);
      expect(progress.rate().samples).toBeCloseTo(800, 6);
      // A 5 s evaluation between two training segments.
      progress.pause();
      clock += 5000;
      progress.begin(20, 40);
      clock += 10;
      progress.step(21, 0.25, 8);
      expect(progress.rate().steps).toBeCloseTo(100, 6);
      progress.line('after the evaluation');
    } finally {
      progress.stop();
    }
    // The bar drawn after the log line: the same run's, not a new one at 0 steps/s.
    const bars = barsIn(chunks);
    expect(bars[bars.length - 1]).toMatch(/^train \[=+-+\] 21\/100 steps \| ETA 1s \| loss 0\.25000 \| 100 steps\/s \| 800 samples\/s$/);
    expect(logs).toEqual(['after the evaluation']);
  });

  test('the window slides: a slower stretch of steps shows in the rate', () => {
    let clock = 0;
    const progress = new TrainingProgress({ log: () => undefined, every: 0, showBar: false, now: () => clock });
    progress.begin(0, Infinity);
    for (let s = 1; s <= 1000; s++) {
      clock += 10;
      progress.step(s, 1, 1);
    }
    expect(progress.rate().steps).toBeCloseTo(100, 6);
    for (let s = 1001; s <= 1600; s++) {
      clock += 40;
      progress.step(s, 1, 1);
    }
    // Only the last 10 s are counted: 25 steps/s, not the run's mean.
    expect(progress.rate().steps).toBeCloseTo(25, 6);
    progress.stop();
  });

  test('log lines go above the bar, which is drawn once below them (no frozen copies)', () => {
    const screen = new Screen();
    const { stream } = fakeTty(screen);
    let clock = 0;
    const log = (l: string) => screen.write(`${l}\n`);
    const progress = new TrainingProgress({ log, every: 5, showBar: true, total: 20, stream, now: () => clock });
    try {
      progress.begin(0, 20);
      for (let s = 1; s <= 12; s++) {
        clock += 20;
        progress.step(s, 1 / s, 4);
        if (s === 7) progress.line('saved model.ckpt-7');
      }
    } finally {
      progress.stop();
    }
    // What is printed next goes below the bar (the cursor is not left where the bar began).
    screen.write('next\n');
    const rows = screen.text();
    expect(rows.pop()).toBe('next');
    expect(rows.filter(isBar)).toHaveLength(1);
    expect(rows.slice(0, -1)).toEqual([
      'step 5: loss = 0.200000 (50.00 steps/s, 200 samples/s)',
      'saved model.ckpt-7',
      'step 10: loss = 0.100000 (50.00 steps/s, 200 samples/s)',
    ]);
    expect(rows[rows.length - 1]).toMatch(/^train \[=+-+\] 12\/20 steps \| ETA 0s \| loss 0\.08333 \| 50\.0 steps\/s \| 200 samples\/s$/);
  });

  test('not on a terminal: plain log lines, nothing else written', () => {
    const screen = new Screen();
    const { stream, chunks } = fakeTty(screen, false);
    const logs: string[] = [];
    const progress = new TrainingProgress({ log: (l) => logs.push(l), every: 2, showBar: true, total: 4, stream });
    progress.begin(0, 4);
    for (let s = 1; s <= 4; s++) progress.step(s, 1, 1);
    progress.line('saved');
    progress.stop();
    expect(chunks).toEqual([]);
    expect(logs.map((l) => l.replace(/\(.*\)/, '()'))).toEqual(['step 2: loss = 1.00000 ()', 'step 4: loss = 1.00000 ()', 'saved']);
  });

  test('ETA format', () => {
    expect(formatEta(0.4)).toBe('0s');
    expect(formatEta(59)).toBe('59s');
    expect(formatEta(185)).toBe('3m05s');
    expect(formatEta(3725)).toBe('1h02m');
    expect(formatEta(Infinity)).toBe('-');
  });
});

// A small model on the planted data.
function modelFn(features: Record<string, unknown>, labels: unknown, mode: hb.estimator.Mode) {
  const fc = hb.featureColumn;
  const dense = fc.DenseFeatures(Array.from({ length: numDense }, (_, i) => fc.numericColumn(`I${i + 1}`)))(features);
  const sparse = fc.DenseFeatures(tables.map((t) => fc.embeddingColumn(fc.categoricalColumnWithIdentity(t.name, t.vocabularySize), 4, { initializer: hb.initializers.truncatedNormal({ stddev: 0.1, seed: 3 }) })))(features);
  const logits = hb.layers.dense(hb.math.concat([hb.math.log(hb.math.addConstant(hb.nn.relu(dense), 1)), sparse], 1), 1, { kernelInitializer: hb.initializers.glorotUniform({ seed: 2 }) });
  const loss = hb.losses.sigmoidCrossEntropy(labels as hb.SymbolicTensor, logits);
  if (mode === hb.estimator.ModeKeys.EVAL) return hb.estimator.EstimatorSpec({ mode, loss, evalMetricOps: { auc: hb.metrics.auc(labels as hb.SymbolicTensor, hb.nn.sigmoid(logits)) } });
  return hb.estimator.EstimatorSpec({ mode, loss, trainOp: new hb.train.AdagradOptimizer({ learningRate: 0.1 }).minimize(loss) });
}

describe('Estimator progress bar on a terminal (stderr a fake TTY)', () => {
  let screen: Screen;
  let chunks: string[];
  let restore: () => void;
  const logs: string[] = [];
  const log = (l: string) => {
    logs.push(l);
    screen.write(`${l}\n`);
  };

  beforeEach(() => {
    screen = new Screen();
    chunks = [];
    logs.length = 0;
    const stderr = process.stderr as NodeJS.WriteStream & { isTTY: boolean };
    const saved = { isTTY: Object.getOwnPropertyDescriptor(stderr, 'isTTY'), columns: Object.getOwnPropertyDescriptor(stderr, 'columns') };
    const write = jest.spyOn(stderr, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      chunks.push(text);
      screen.write(text);
      (rest.find((r) => typeof r === 'function') as (() => void) | undefined)?.();
      return true;
    }) as typeof stderr.write);
    Object.defineProperty(stderr, 'isTTY', { value: true, configurable: true, writable: true });
    Object.defineProperty(stderr, 'columns', { value: 200, configurable: true, writable: true });
    restore = () => {
      write.mockRestore();
      for (const key of ['isTTY', 'columns'] as const) {
        const d = saved[key];
        if (d) Object.defineProperty(stderr, key, d);
        else delete (stderr as unknown as Record<string, unknown>)[key];
      }
    };
  });
  afterEach(() => restore());

  test('trainAndEvaluate: one bar counting to maxSteps from the restored step, evaluations above it, rates going on', async () => {
    const modelDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-progress-'));
    try {
      // An earlier run trained 10 steps (no bar).
      const first = new hb.estimator.Estimator({ modelFn, modelDir, config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, saveCheckpointsSteps: 10 }) });
      await first.train(dataset(20_000, TRAIN, 64), { maxSteps: 10 });
      expect(chunks).toEqual([]);

      const est = new hb.estimator.Estimator({ modelFn, modelDir, config: new hb.estimator.RunConfig({ log, logStepCountSteps: 10, saveCheckpointsSteps: 25, progressBar: true }) });
      const result = await hb.estimator.trainAndEvaluate(
        est,
        new hb.estimator.TrainSpec({ inputFn: dataset(20_000, TRAIN, 64), maxSteps: 60 }),
        new hb.estimator.EvalSpec({ inputFn: dataset(2048, EVAL, 256), steps: 2 }),
        { evalEveryNIter: 20 },
      );
      expect(result.globalStep).toBe(60);
    } finally {
      fs.rmSync(modelDir, { recursive: true, force: true });
    }
    expect(logs.filter((l) => l.startsWith('evaluation at step'))).toEqual([expect.stringMatching(/^evaluation at step 30: /), expect.stringMatching(/^evaluation at step 50: /), expect.stringMatching(/^evaluation at step 60: /)]);
    const bars = barsIn(chunks).map((b) => /^train \[[=-]+\] (\d+)\/(\d+) steps \| ETA (\S+) \| loss (\S+) \| (\S+) steps\/s \| (\S+) samples\/s$/.exec(b));
    expect(bars.length).toBeGreaterThan(3);
    for (const b of bars) expect(b).not.toBeNull();
    const parsed = bars.map((b) => ({ value: Number(b![1]), total: Number(b![2]), eta: b![3], stepsPerSec: b![5], samplesPerSec: b![6] }));
    // Every drawing is of the one bar: total maxSteps, from the restored step 10, never back.
    for (const p of parsed) expect(p.total).toBe(60);
    expect(parsed[0].value).toBe(10);
    expect(parsed[parsed.length - 1].value).toBe(60);
    for (let i = 1; i < parsed.length; i++) expect(parsed[i].value).toBeGreaterThanOrEqual(parsed[i - 1].value);
    // Once measured, the rate never starts again from 0 (after an evaluation neither).
    const measured = parsed.filter((p) => p.value > 10);
    expect(measured.some((p) => p.value > 30)).toBe(true);
    for (const p of measured) {
      expect(Number(p.stepsPerSec)).toBeGreaterThan(0);
      expect(Number(p.samplesPerSec)).toBeGreaterThan(0);
      expect(p.eta).toMatch(/^(\d+s|\d+m\d\ds|\d+h\d\dm)$/);
    }
    // The screen: the log lines in order, then the bar once, then what is printed next.
    screen.write('next\n');
    const rows = screen.text();
    expect(rows.pop()).toBe('next');
    expect(rows.filter(isBar)).toHaveLength(1);
    expect(rows[rows.length - 1]).toMatch(/^train \[=+\] 60\/60 steps/);
    expect(rows.slice(0, -1)).toEqual(logs);
  });

  test('train: one bar counting to the call\'s stop', async () => {
    const est = new hb.estimator.Estimator({ modelFn, config: new hb.estimator.RunConfig({ log, logStepCountSteps: 5, progressBar: true }) });
    await est.train(dataset(20_000, TRAIN, 64), { steps: 12 });
    const totals = barsIn(chunks).map((b) => /(\d+)\/(\d+) steps/.exec(b)![2]);
    expect(new Set(totals)).toEqual(new Set(['12']));
    screen.write('next\n');
    const rows = screen.text();
    expect(rows.pop()).toBe('next');
    expect(rows.filter(isBar)).toHaveLength(1);
    expect(rows[rows.length - 1]).toMatch(/^train \[=+\] 12\/12 steps/);
    expect(rows.slice(0, -1)).toEqual(logs);
    expect(logs.filter((l) => l.startsWith('step '))).toHaveLength(2);
  });
});
