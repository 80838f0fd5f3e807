// A value that follows one async call and everything it awaits (AsyncLocalStorage.run),
// and costs the rest of the process nothing once no such call is running. Node keeps its
// promise hooks on while any AsyncLocalStorage is enabled, and a run() enables one for
// good: after the Estimator's first build every promise in the process paid for the
// hooks (a loop of bare awaits: 131 -> 342 ns each; a batch-1 serving predict spent
// ~30 us of its ~250 us in them, on a 2-vCPU EPYC VM). Disabled again when the last run
// ends; the next run enables it anew. So a continuation that outlives its run (nothing
// here keeps one) sees its value only while another run of the same value is going.
// (From Node 24 AsyncLocalStorage needs no promise hooks; this then only costs a count.)
import { AsyncLocalStorage } from 'async_hooks';

export class ScopedValue<T> {
  private readonly storage = new AsyncLocalStorage<T>();
  private running = 0;

  /** Runs `body` with `value` seen by get() in it and in what it awaits, until it settles. */
  run<R>(value: T, body: () => Promise<R>): Promise<R> {
    this.running++;
    let result: Promise<R>;
    try {
      result = this.storage.run(value, body);
    } catch (error) {
      this.ended();
      throw error;
    }
    return Promise.resolve(result).finally(() => this.ended());
  }

  /** The value of the run this code is part of, if any. */
  get(): T | undefined {
    return this.storage.getStore();
  }

  private ended(): void {
    // Nothing runs with a value now: anything still carrying one outlived its run.
    if (--this.running === 0) this.storage.disable();
  }
}
