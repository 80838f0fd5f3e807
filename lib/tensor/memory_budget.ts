// The memory a model's first build may take, per device: while a budget is set (the
// Estimator's first training build), each table's rows and slots are counted against the
// device's free memory before they are allocated, so a model that cannot fit stops
// before its largest tables are made, with what it needed, instead of failing (or
// swapping) in the middle of an allocation.
import { formatBytes } from './format_bytes';

interface DeviceBudget {
  free: number;
  used: number;
}

let budget: Map<string, DeviceBudget> | undefined;
let freeOf: ((device: string) => number | undefined) | undefined;

/** Runs `build` counting the tables it makes against `free(device)` (undefined: not counted). */
export async function withMemoryBudget<T>(free: (device: string) => number | undefined, build: () => Promise<T>): Promise<T> {
  const outer = [budget, freeOf] as const;
  budget = new Map();
  freeOf = free;
  try {
    return await build();
  } finally {
    [budget, freeOf] = outer;
  }
}

/** Counts `bytes` of `what` on `device`; throws, before anything is allocated, when they do not fit. */
export function reserveMemory(device: string, bytes: number, what: string): void {
  if (!budget || !freeOf) return;
  let b = budget.get(device);
  if (!b) {
    const free = freeOf(device);
    if (free === undefined) return;
    budget.set(device, (b = { free, used: 0 }));
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
