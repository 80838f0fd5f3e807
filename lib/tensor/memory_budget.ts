// The memory a model's first build may take, per device: while a budget is set (the
// Estimator's first training build), each table's rows and slots are counted against the
// device's free memory before they are allocated, so a model that cannot fit stops
// before its largest tables are made, with what it needed, instead of failing (or
// swapping) in the middle of an allocation.
import { ScopedValue } from './scoped_value';
import { formatBytes } from './format_bytes';

interface DeviceBudget {
  free: number;
  used: number;
}

interface Budget {
  devices: Map<string, DeviceBudget>;
  freeOf: (device: string) => number | undefined;
}

// Follows the build through its awaits (and only it): another model built meanwhile is
// not counted against it.
const current = new ScopedValue<Budget>();

/** Runs `build` counting the tables it makes against `free(device)` (undefined: not counted). */
export function withMemoryBudget<T>(free: (device: string) => number | undefined, build: () => Promise<T>): Promise<T> {
  return current.run({ devices: new Map(), freeOf: free }, build);
}

/** Counts `bytes` of `what` on `device`; throws, before anything is allocated, when they do not fit. */
export function reserveMemory(device: string, bytes: number, what: string): void {
  const budget = current.get();
  if (!budget) return;
  let b = budget.devices.get(device);
  if (!b) {
    const free = budget.freeOf(device);
    if (free === undefined) return;
    budget.devices.set(device, (b = { free, used: 0 }));
  }
  if (b.used + bytes > b.free) {
    throw new Error(
      `${what} needs ${formatBytes(bytes)} on ${device}; with the tables made before it the model needs ${formatBytes(b.used + bytes)} there, ` +
        `more than the ${formatBytes(b.free)} free when training started, so training does not start. hb.estimator.memoryPlan(estimator, batch) ` +
        `(or npx hb-ts plan) lists every table; shard the tables over more ranks, use fewer buckets${device === 'cpu' ? '' : ", keep tables in host memory (embDevice: 'cpu')"}, or a dynamic table (embBackend: 'DYNAMIC')`,
    );
  }
  b.used += bytes;
}
