// hb.estimator.memoryPlan: what a model's training will hold in memory, per device and per
// table, worked out before anything is allocated: the model is built once as a plan (its
// variables and optimizer slots made with their shapes only, lib/tensor/variable.ts), and
// its tables, dense variables and slots are counted at their configured sizes, with the
// exchange buffers of a step of the sample batch's size and the devices' free memory
// beside them. A fixed table that cannot fit refuses training before it starts.
import * as fs from 'fs';
import * as os from 'os';
import type { Batch } from '../data/batch';
import { isPlannedTable } from '../embedding/planned_table';
import { DynamicEmbeddingTable } from '../embedding/dynamic_table';
import { EmbeddingTable } from '../embedding/embedding_table';
import { native } from '../native';
import { Ragged } from '../tensor/ragged';
import { formatBytes } from '../tensor/format_bytes';
import { StringColumn } from '../tensor/string_column';

export interface TablePlan {
  name: string;
  kind: 'fixed' | 'dynamic';
  placement: 'local' | 'sharded' | 'replicated';
  device: string;
  dim: number;
  /** Rows this rank holds (a fixed table's shard), or a dynamic table's rows now (it grows). */
  rows: number;
  /** The optimizer slots beside the rows, by name. */
  slots: string[];
  /** The rows' values. */
  paramBytes: number;
  slotBytes: number;
  /** A dynamic table's index and per-row bookkeeping (0 for a fixed table). */
  hashBytes: number;
  /** A dynamic table: bytes each new row adds (values, slots, index, bookkeeping). */
  bytesPerNewRow?: number;
  /** A dynamic table's cap (embMaxRows; 0: none). */
  maxRows?: number;
  /** A sharded table's ids and rows sent and received in one step (forward and backward). */
  exchangeBytes: number;
}

export interface DevicePlan {
  device: string;
  paramBytes: number;
  slotBytes: number;
  hashBytes: number;
  exchangeBytes: number;
  totalBytes: number;
  /** Free memory now (host: MemAvailable; CUDA: cudaMemGetInfo); undefined when unknown. */
  freeBytes?: number;
}

export interface MemoryPlan {
  worldSize: number;
  rank: number;
  /** Examples in the sample batch: the step the exchange buffers are sized for. */
  batchSize: number;
  tables: TablePlan[];
  dense: { variables: number; paramBytes: number; slotBytes: number; device: string };
  devices: DevicePlan[];
  /** What will not fit (a fixed table's device short of memory), one line each; empty when all fits. */
  problems: string[];
}

// A dynamic table's bookkeeping: an index entry (id, row, count, last seen and its used
// byte at a load of 0.7) and five int64 per row (native/embedding/dynamic_table.h).
const DYNAMIC_INDEX_BYTES_PER_ROW = Math.ceil(33 / 0.7);
const DYNAMIC_META_BYTES_PER_ROW = 5 * 8;
const WIRE_BYTES: Record<string, number> = { float32: 4, float16: 2, bfloat16: 2 };

/** MemAvailable of /proc/meminfo (what Linux can give without swapping), else os.freemem(). */
export function hostFreeBytes(): number {
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return os.freemem();
}

/**
 * A device's free memory now (undefined when it cannot be asked). The host's is shared by
 * the ranks hb-ts launch started on it (LOCAL_WORLD_SIZE): each is given its share.
 */
export function freeBytesOf(device: string): number | undefined {
  if (device === 'cpu') {
    const local = Number(process.env.LOCAL_WORLD_SIZE);
    return Math.floor(hostFreeBytes() / (Number.isSafeInteger(local) && local > 1 ? local : 1));
  }
  try {
    return native.cudaMemoryInfo(device).free;
  } catch {
    return undefined;
  }
}

/** Ids of the sample batch's feature `key` per example (1 when the feature is not there by that name). */
function idsPerExample(sample: Batch, key: string, batchSize: number): number {
  const f = (sample.features as Record<string, unknown>)[key];
  if (f instanceof Ragged) return f.values.length / Math.max(1, batchSize);
  if (f instanceof StringColumn) return 1;
  if (ArrayBuffer.isView(f) || Array.isArray(f)) {
    const flat = Array.isArray(f) ? f.flat().length : (f as unknown as { length: number }).length;
    return flat / Math.max(1, batchSize);
  }
  return 1;
}

function batchSizeOf(sample: Batch): number {
  const labels = sample.labels as unknown;
  if (ArrayBuffer.isView(labels)) return (labels as unknown as { length: number }).length;
  for (const f of Object.values(sample.features as Record<string, unknown>)) {
    if (f instanceof Ragged) return f.nrows;
    if (f instanceof StringColumn) return f.length;
    if (Array.isArray(f) || ArrayBuffer.isView(f)) return (f as { length: number }).length;
  }
  return 0;
}

export { formatBytes };

/**
 * The plan of the model `planned` (ModelBuilder.plan's store) for a step of `sample`,
 * under a world of `worldSize` ranks (this one `rank`).
 */
export function planOf(
  store: { variables: ReadonlyMap<string, { shape: readonly number[]; device: string; slotOwner?: unknown; name: string }>; slots: ReadonlyMap<string, { shape: readonly number[]; name: string }> },
  sample: Batch,
  world: { size: number; rank: number },
  denseDevice: string,
): MemoryPlan {
  const batchSize = batchSizeOf(sample);
  const tables: TablePlan[] = [];
  const tableSlots = new Set<string>();
  let denseParams = 0;
  let denseVariables = 0;
  for (const v of store.variables.values()) {
    const owner = v.slotOwner;
    // A planned model's table (its stand-in), or a built model's own.
    const table = isPlannedTable(owner) ? (owner.table as EmbeddingTable) : owner instanceof EmbeddingTable ? owner : undefined;
    if (!table) {
      denseVariables++;
      denseParams += v.shape.reduce((a, b) => a * b, 1) * 4;
      continue;
    }
    const dim = table.spec.dim;
    const slots = isPlannedTable(owner) ? [...owner.plannedSlots.values()] : [...table.slots.values()];
    slots.forEach((s) => tableSlots.add(s.name));
    const slotRowBytes = slots.reduce((n, s) => n + (s.shape.length === 1 ? 4 : dim * 4), 0);
    // The exchange of a sharded table: the step's ids out and back as int64, the rows
    // back and their gradients out in the wire dtype.
    const key = table.name.replace(/_embedding\/embedding_weights$/, '').replace(/\/embedding_weights$/, '');
    const ids = Math.ceil(batchSize * idsPerExample(sample, key, batchSize));
    // Counted in float32, the widest wire dtype (embWireDtype float16 halves the rows' part).
    const wire = WIRE_BYTES.float32;
    const exchangeBytes = table.placement.kind === 'sharded' ? ids * (2 * 8 + 2 * dim * wire) : 0;
    if (table instanceof DynamicEmbeddingTable) {
      const rows = table.isMade ? table.stats().rows : 0;
      const perRow = dim * 4 + slotRowBytes + DYNAMIC_INDEX_BYTES_PER_ROW + DYNAMIC_META_BYTES_PER_ROW;
      tables.push({
        name: table.name,
        kind: 'dynamic',
        placement: table.placement.kind,
        device: v.device,
        dim,
        rows,
        slots: slots.map((s) => s.name),
        paramBytes: rows * dim * 4,
        slotBytes: rows * slotRowBytes,
        hashBytes: rows * (DYNAMIC_INDEX_BYTES_PER_ROW + DYNAMIC_META_BYTES_PER_ROW),
        bytesPerNewRow: perRow,
        maxRows: table.dynamicOptions.maxRows,
        exchangeBytes,
      });
      continue;
    }
    const rows = table.localRows;
    tables.push({
      name: table.name,
      kind: 'fixed',
      placement: table.placement.kind,
      device: v.device,
      dim,
      rows,
      slots: slots.map((s) => s.name),
      paramBytes: rows * dim * 4,
      slotBytes: rows * slotRowBytes,
      hashBytes: 0,
      exchangeBytes,
    });
  }
  let denseSlots = 0;
  for (const s of store.slots.values()) if (!tableSlots.has(s.name)) denseSlots += s.shape.reduce((a, b) => a * b, 1) * 4;
  const byDevice = new Map<string, DevicePlan>();
  const deviceOf = (device: string) => {
    let d = byDevice.get(device);
    if (!d) byDevice.set(device, (d = { device, paramBytes: 0, slotBytes: 0, hashBytes: 0, exchangeBytes: 0, totalBytes: 0 }));
    return d;
  };
  for (const t of tables) {
    const d = deviceOf(t.device);
    d.paramBytes += t.paramBytes;
    d.slotBytes += t.slotBytes;
    // A dynamic table's index and bookkeeping are host structures wherever its rows are.
    deviceOf(t.kind === 'dynamic' ? 'cpu' : t.device).hashBytes += t.hashBytes;
    // The exchange runs through host memory (native/exec's collectives).
    deviceOf('cpu').exchangeBytes += t.exchangeBytes;
  }
  const dense = deviceOf(denseDevice);
  dense.paramBytes += denseParams;
  dense.slotBytes += denseSlots;
  const problems: string[] = [];
  for (const d of byDevice.values()) {
    d.totalBytes = d.paramBytes + d.slotBytes + d.hashBytes + d.exchangeBytes;
    d.freeBytes = freeBytesOf(d.device);
    if (d.freeBytes !== undefined && d.totalBytes > d.freeBytes) {
      const fixed = tables.filter((t) => t.device === d.device && t.kind === 'fixed').sort((a, b) => b.paramBytes + b.slotBytes - (a.paramBytes + a.slotBytes));
      const largest = fixed.slice(0, 3).map((t) => `'${t.name}' ${formatBytes(t.paramBytes + t.slotBytes)}`);
      problems.push(
        `${d.device} needs ${formatBytes(d.totalBytes)} but has ${formatBytes(d.freeBytes)} free` +
          (largest.length ? ` (largest tables: ${largest.join(', ')})` : '') +
          `: shard the tables over more ranks (hb-ts launch)${d.device === 'cpu' ? '' : ", keep them in host memory (embDevice: 'cpu')"}, use fewer buckets, or a dynamic table (embBackend: 'DYNAMIC')`,
      );
    }
  }
  return {
    worldSize: world.size,
    rank: world.rank,
    batchSize,
    tables,
    dense: { variables: denseVariables, paramBytes: denseParams, slotBytes: denseSlots, device: denseDevice },
    devices: [...byDevice.values()],
    problems,
  };
}

/** The plan as lines for a terminal: per device, then per table. */
export function formatMemoryPlan(plan: MemoryPlan): string {
  const lines: string[] = [];
  const where = plan.worldSize > 1 ? ` (rank ${plan.rank} of ${plan.worldSize})` : '';
  lines.push(`memory plan${where}, a step of ${plan.batchSize} examples:`);
  for (const d of plan.devices) {
    const free = d.freeBytes === undefined ? 'free unknown' : `${formatBytes(d.freeBytes)} free`;
    lines.push(
      `  ${d.device}: ${formatBytes(d.totalBytes)} (parameters ${formatBytes(d.paramBytes)}, slots ${formatBytes(d.slotBytes)}, ` +
        `hash ${formatBytes(d.hashBytes)}, exchange ${formatBytes(d.exchangeBytes)}), ${free}${d.freeBytes !== undefined && d.totalBytes > d.freeBytes ? ' -- DOES NOT FIT' : ''}`,
    );
  }
  for (const t of plan.tables) {
    const size = t.kind === 'dynamic' ? `${t.rows} rows now, ${t.bytesPerNewRow} B per new row${t.maxRows ? `, at most ${t.maxRows} rows` : ''}` : `${t.rows} x ${t.dim}`;
    const exchange = t.exchangeBytes ? `, exchange ${formatBytes(t.exchangeBytes)}/step` : '';
    lines.push(`  table '${t.name}' (${t.kind}, ${t.placement}, ${t.device}): ${size}, parameters ${formatBytes(t.paramBytes)}, slots [${t.slots.join(', ')}] ${formatBytes(t.slotBytes)}${t.hashBytes ? `, hash ${formatBytes(t.hashBytes)}` : ''}${exchange}`);
  }
  lines.push(`  dense: ${plan.dense.variables} variables on ${plan.dense.device}, parameters ${formatBytes(plan.dense.paramBytes)}, slots ${formatBytes(plan.dense.slotBytes)}`);
  for (const p of plan.problems) lines.push(`  does not fit: ${p}`);
  return lines.join('\n');
}
