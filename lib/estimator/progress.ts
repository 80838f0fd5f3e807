// Training progress: one bar on a terminal (cli-progress) for a whole train or
// trainAndEvaluate call, and plain log lines every logStepCountSteps steps either way.
// The bar counts to the run's last step (maxSteps) from the step it resumed at; log lines
// (evaluations, saves, step lines) are printed above it, the bar's line cleared first and
// the bar drawn again below them, so no frozen copies of it are left behind. Steps/s and
// samples/s are measured over a sliding window of training time: the pauses between
// training segments (evaluations) are left out, so the rate goes on after one.
import { performance } from 'perf_hooks';
import { clearLine, cursorTo } from 'readline';
import { SingleBar } from 'cli-progress';

/** Rates over the last WINDOW_MS of training time, at most WINDOW_STEPS steps. */
const WINDOW_MS = 10_000;
const WINDOW_STEPS = 1024;

export interface TrainingProgressInit {
  /** Where log lines go (config.log on rank 0). */
  log: (line: string) => void;
  /** A step log line every N steps; 0: none. */
  every: number;
  /** Whether a bar is wanted (RunConfig.progressBar, rank 0); drawn only on a terminal. */
  showBar: boolean;
  /** The step the bar counts to (maxSteps); undefined: not known (no bar, a step count). */
  total?: number;
  /** Instead, the first training segment's stop when finite (one train call). */
  totalFromSegment?: boolean;
  /** The bar's stream; default process.stderr. */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** A millisecond clock; default performance.now. */
  now?: () => number;
}

/** Seconds as 45s, 3m05s or 1h02m. */
export function formatEta(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '-';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function formatRate(rate: number): string {
  return rate >= 100 ? String(Math.round(rate)) : rate >= 10 ? rate.toFixed(1) : rate.toFixed(2);
}

export class TrainingProgress {
  private readonly log: (line: string) => void;
  private readonly every: number;
  private readonly showBar: boolean;
  private readonly totalFromSegment: boolean;
  private readonly stream: NodeJS.WritableStream & { isTTY?: boolean };
  private readonly now: () => number;
  private total?: number;
  private bar?: SingleBar;
  private value = 0;
  /** When the last step ended (or training resumed); undefined while paused. */
  private lastTick?: number;
  /** The window: per step, its milliseconds and samples (a ring of WINDOW_STEPS). */
  private readonly ms = new Float64Array(WINDOW_STEPS);
  private readonly samples = new Float64Array(WINDOW_STEPS);
  private head = 0;
  private count = 0;
  private sumMs = 0;
  private sumSamples = 0;
  private payload: Record<string, string | number> = { loss: '-', stepsPerSec: '-', samplesPerSec: '-', remaining: '-' };

  constructor(init: TrainingProgressInit) {
    this.log = init.log;
    this.every = init.every;
    this.showBar = init.showBar;
    this.total = init.total;
    this.totalFromSegment = init.totalFromSegment ?? false;
    this.stream = init.stream ?? process.stderr;
    this.now = init.now ?? (() => performance.now());
  }

  /** Whether a bar is on the terminal now. */
  get drawing(): boolean {
    return this.bar !== undefined;
  }

  /** Steps/s and samples/s over the window (0 before any step). */
  rate(): { steps: number; samples: number } {
    if (this.count === 0 || this.sumMs <= 0) return { steps: 0, samples: 0 };
    return { steps: (this.count * 1000) / this.sumMs, samples: (this.sumSamples * 1000) / this.sumMs };
  }

  /**
   * A training segment starts at `globalStep` and stops at `stopAt` at the latest: the
   * bar is started on the first, and the clock goes on (what passed since pause() is not
   * counted).
   */
  begin(globalStep: number, stopAt: number): void {
    this.value = globalStep;
    this.lastTick = this.now();
    if (this.bar || !this.showBar || this.stream.isTTY !== true) return;
    if (this.totalFromSegment && Number.isFinite(stopAt)) this.total = stopAt;
    const counted = this.total !== undefined;
    this.bar = new SingleBar({
      format: counted
        ? 'train [{bar}] {value}/{total} steps | ETA {remaining} | loss {loss} | {stepsPerSec} steps/s | {samplesPerSec} samples/s'
        : 'train {value} steps | loss {loss} | {stepsPerSec} steps/s | {samplesPerSec} samples/s',
      stream: this.stream,
      barsize: 30,
      // Left to the terminal: the cursor (a stopped process must not leave it hidden) and
      // line wrapping (log lines above the bar may be long); the bar is cut to its width.
      hideCursor: false,
      linewrap: true,
      // Drawn again after each log line, even when nothing in it changed.
      forceRedraw: true,
    });
    this.bar.start(this.total ?? 0, globalStep, this.payload);
  }

  step(globalStep: number, loss: number, samples: number): void {
    const now = this.now();
    if (this.lastTick !== undefined) this.record(now - this.lastTick, samples);
    this.lastTick = now;
    this.value = globalStep;
    const rate = this.rate();
    const measured = this.count > 0 && this.sumMs > 0;
    this.payload = {
      loss: loss.toFixed(5),
      stepsPerSec: measured ? formatRate(rate.steps) : '-',
      samplesPerSec: measured ? Math.round(rate.samples) : '-',
      remaining: measured && this.total !== undefined ? formatEta(Math.max(0, this.total - globalStep) / rate.steps) : '-',
    };
    this.bar?.update(globalStep, this.payload);
    if (this.every > 0 && globalStep % this.every === 0) {
      this.line(`step ${globalStep}: loss = ${loss.toPrecision(6)} (${rate.steps.toFixed(2)} steps/s, ${Math.round(rate.samples)} samples/s)`);
    }
  }

  /** A log line, above the bar when there is one. */
  line(text: string): void {
    if (!this.bar) {
      this.log(text);
      return;
    }
    // Clear the bar's line, print the line where it was, and draw the bar on the next one
    // (its position saved again: stop() returns the cursor there).
    cursorTo(this.stream, 0);
    clearLine(this.stream, 0);
    try {
      this.log(text);
    } finally {
      this.stream.write('\x1B7');
      this.bar.render();
    }
  }

  /** A training segment ended: the time until the next begin() is not training. */
  pause(): void {
    this.lastTick = undefined;
  }

  /** The run ended: the bar's last state stays on the terminal. */
  stop(): void {
    this.pause();
    this.bar?.stop();
    this.bar = undefined;
  }

  private record(ms: number, samples: number): void {
    const at = (this.head + this.count) % WINDOW_STEPS;
    if (this.count === WINDOW_STEPS) this.dropOldest();
    this.ms[at] = ms;
    this.samples[at] = samples;
    this.count++;
    this.sumMs += ms;
    this.sumSamples += samples;
    while (this.count > 1 && this.sumMs - this.ms[this.head] >= WINDOW_MS) this.dropOldest();
  }

  private dropOldest(): void {
    this.sumMs -= this.ms[this.head];
    this.sumSamples -= this.samples[this.head];
    this.head = (this.head + 1) % WINDOW_STEPS;
    this.count--;
  }
}
