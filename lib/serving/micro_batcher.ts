// Concurrent predictions merged into one native call: requests that arrive while a run is
// in flight (or within maxWaitMicros of the first, when idle) go into the next run, up to
// maxBatch rows, as TF Serving's batching does (max_batch_size, batch_timeout_micros).
// One run at a time: a plan's temporaries belong to the run using them.

export interface MicroBatchOptions {
  /** Rows per native call at most (a request bigger than this runs alone). Default 1024. */
  maxBatch?: number;
  /** How long an idle batcher waits for more requests before running the first (whole milliseconds in effect). Default 0. */
  maxWaitMicros?: number;
}

const RECENT_RUNS = 1024;

interface Pending<R, O> {
  request: R;
  rows: number;
  resolve: (out: O) => void;
  reject: (error: unknown) => void;
}

export class MicroBatcher<R, O> {
  private readonly queue: Array<Pending<R, O>> = [];
  private running = false;
  private timer?: NodeJS.Timeout;
  private idleWaiters: Array<() => void> = [];
  readonly maxBatch: number;
  readonly maxWaitMicros: number;
  /** Native calls made, and the rows of the most recent ones (at most RECENT_RUNS), for metrics and tests. */
  runs = 0;
  readonly recentRunSizes: number[] = [];

  constructor(
    /** Runs the merged requests and gives each its own output, in order. */
    private readonly runBatch: (requests: R[]) => Promise<O[]>,
    options: MicroBatchOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 1024;
    this.maxWaitMicros = options.maxWaitMicros ?? 0;
    if (!Number.isSafeInteger(this.maxBatch) || this.maxBatch < 1) throw new RangeError(`micro-batching: maxBatch must be an integer >= 1, got ${String(options.maxBatch)}`);
    if (!Number.isFinite(this.maxWaitMicros) || this.maxWaitMicros < 0) throw new RangeError(`micro-batching: maxWaitMicros must be >= 0, got ${String(options.maxWaitMicros)}`);
  }

  submit(request: R, rows: number): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ request, rows, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once nothing is queued or running. */
  idle(): Promise<void> {
    if (!this.running && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(): void {
    if (this.running || this.queue.length === 0) return;
    const queuedRows = this.queue.reduce((n, p) => n + p.rows, 0);
    if (this.timer) {
      // A full batch does not wait for the rest of the timer.
      if (queuedRows < this.maxBatch) return;
      clearTimeout(this.timer);
      this.timer = undefined;
    } else if (this.maxWaitMicros > 0 && queuedRows < this.maxBatch) {
      // Node's timers count whole milliseconds: a wait under 1 ms is 1 ms.
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.runNext();
      }, this.maxWaitMicros / 1000);
      return;
    }
    void this.runNext();
  }

  private async runNext(): Promise<void> {
    if (this.running || this.queue.length === 0) return;
    this.running = true;
    // The first request always goes; others join while the batch has room.
    const batch: Array<Pending<R, O>> = [this.queue.shift() as Pending<R, O>];
    let rows = batch[0].rows;
    while (this.queue.length > 0 && rows + this.queue[0].rows <= this.maxBatch) {
      const next = this.queue.shift() as Pending<R, O>;
      rows += next.rows;
      batch.push(next);
    }
    this.runs++;
    this.recentRunSizes.push(rows);
    if (this.recentRunSizes.length > RECENT_RUNS) this.recentRunSizes.shift();
    try {
      const outputs = await this.runBatch(batch.map((p) => p.request));
      batch.forEach((p, i) => p.resolve(outputs[i]));
    } catch (error) {
      if (batch.length === 1) batch[0].reject(error);
      // One request's values can fail the merged run: each then runs alone, so only its
      // own caller sees the error.
      else {
        for (const p of batch) await this.runBatch([p.request]).then(([out]) => p.resolve(out), p.reject);
      }
    } finally {
      this.running = false;
      if (this.queue.length > 0) {
        // Whatever queued meanwhile runs now: it has waited one run already.
        void this.runNext();
      } else {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        waiters.forEach((w) => w());
      }
    }
  }
}
