// hb.estimator.readCheckpoint: a checkpoint read whole in this one process, whatever wrote
// it (one process, or a job of any size whose tables were sharded): every variable, table
// and slot with its whole shape, for export and inspection. (loadCheckpoint reads one
// checkpoint file as it was written.)
import { promises as fsp } from 'fs';
import * as path from 'path';
import { native } from '../native';
import { CheckpointSource, DELTA_BASE_KEY, latestCheckpointSource, openCheckpoint } from '../io/checkpoint_source';
import { CheckpointDType, hostZeros } from '../io/checkpoint_file';

export interface LoadedModelCheckpoint {
  /** The file read: a single checkpoint file, or a job's layout. */
  path: string;
  globalStep: number;
  /** How many ranks wrote it. */
  worldSize: number;
  metadata: Record<string, string>;
  /** Every tensor, whole, by its name (`C1_embedding/embedding_weights`, `dense/kernel/Adagrad`, ...). */
  tensors: Map<string, { name: string; dtype: CheckpointDType; shape: number[]; data: SavedValues }>;
}

type SavedValues = Float32Array | Float64Array | Int32Array | BigInt64Array;


/**
 * Reads the newest usable checkpoint of a model directory (or the checkpoint file or
 * layout given), verified, with sharded tables put together; `only`: the tensors to read
 * (a delta's dynamic tables need all of theirs to merge).
 */
export async function readCheckpoint(dirOrFile: string, options: { only?: (name: string) => boolean } = {}): Promise<LoadedModelCheckpoint> {
  if (typeof dirOrFile !== 'string' || dirOrFile === '') throw new TypeError('readCheckpoint: give a model directory or a checkpoint file');
  const stat = await fsp.stat(dirOrFile).catch(() => undefined);
  if (!stat) throw new Error(`readCheckpoint: ${dirOrFile} does not exist`);
  let source: CheckpointSource;
  if (stat.isDirectory()) {
    const latest = await latestCheckpointSource(dirOrFile);
    if (!latest) throw new Error(`readCheckpoint: ${dirOrFile} holds no checkpoint`);
    source = latest.source;
  } else {
    source = await openCheckpoint(dirOrFile);
  }
  const tensors = await readAll(source, options.only);
  const baseFile = source.metadata[DELTA_BASE_KEY];
  if (baseFile === undefined) return { path: source.path, globalStep: source.globalStep, worldSize: source.worldSize, metadata: source.metadata, tensors };
  // A delta checkpoint: its base read whole, then the delta's tensors over it (a dynamic
  // table's rows merged by id, every other tensor as the delta has it).
  if (path.basename(baseFile) !== baseFile) throw new Error(`readCheckpoint: ${source.path} names its base as '${baseFile}', not a file name`);
  const base = await openCheckpoint(path.join(path.dirname(source.path), baseFile));
  if (base.metadata[DELTA_BASE_KEY] !== undefined) throw new Error(`readCheckpoint: the base ${base.path} of ${source.path} is a delta itself`);
  const merged = await readAll(base, options.only);
  const tables = [...tensors.keys()].filter((n) => n.endsWith(REMOVED)).map((n) => n.slice(0, -REMOVED.length));
  for (const [name, t] of tensors) if (!tables.some((table) => ownedBy(name, table))) merged.set(name, t);
  for (const table of tables) mergeDynamicTable(merged, tensors, table, source.path);
  const { [DELTA_BASE_KEY]: _base, ...metadata } = source.metadata;
  return { path: source.path, globalStep: source.globalStep, worldSize: source.worldSize, metadata, tensors: merged };
}

const REMOVED = '/removed_ids';

function ownedBy(name: string, table: string): boolean {
  return name === table || name.startsWith(`${table}/`);
}

type Tensors = LoadedModelCheckpoint['tensors'];

/**
 * Puts a delta's rows of dynamic table `table` over its base's (both in `into` and
 * `delta`): base rows the delta changed or removed go, the delta's come in, all in id
 * order; the same for its pending ids. A JS pass over the rows: export, not training.
 */
function mergeDynamicTable(into: Tensors, delta: Tensors, table: string, file: string): void {
  const get = (from: Tensors, suffix: string) => {
    const t = from.get(`${table}${suffix}`);
    if (!t) throw new Error(`readCheckpoint: ${file} or its base has no '${table}${suffix}'`);
    return t;
  };
  const removed = new Set<bigint>(get(delta, REMOVED).data as BigInt64Array);
  const mergeRows = (idsSuffix: string, aligned: (name: string, rows: number) => boolean) => {
    const baseIds = get(into, idsSuffix).data as BigInt64Array;
    const deltaIds = get(delta, idsSuffix).data as BigInt64Array;
    const replaced = new Set<bigint>([...removed, ...(delta.get(`${table}/ids`)!.data as BigInt64Array), ...deltaIds]);
    // (id, from delta?, row) for every row kept, in id order.
    const order: Array<[bigint, boolean, number]> = [];
    baseIds.forEach((id, row) => {
      if (!replaced.has(id)) order.push([id, false, row]);
    });
    deltaIds.forEach((id, row) => order.push([id, true, row]));
    order.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    for (const [name, d] of delta) {
      if (!ownedBy(name, table) || !aligned(name, deltaIds.length) || d.shape[0] !== deltaIds.length) continue;
      const b = into.get(name);
      if (!b || b.shape[0] !== baseIds.length) throw new Error(`readCheckpoint: '${name}' of ${file} has no base of ${baseIds.length} rows to merge with`);
      const width = d.shape.slice(1).reduce((x, y) => x * y, 1);
      const Out = d.data.constructor as new (n: number) => typeof d.data;
      const out = new Out(order.length * width);
      order.forEach(([, fromDelta, row], k) => {
        const src = fromDelta ? d.data : b.data;
        (out as Float32Array).set((src as Float32Array).subarray(row * width, (row + 1) * width), k * width);
      });
      into.set(name, { name, dtype: d.dtype, shape: [order.length, ...d.shape.slice(1)], data: out });
    }
  };
  const special = new Set([`${table}/pending_ids`, `${table}/pending_meta`, `${table}${REMOVED}`]);
  mergeRows('/ids', (name) => !special.has(name));
  mergeRows('/pending_ids', (name) => name === `${table}/pending_ids` || name === `${table}/pending_meta`);
  into.delete(`${table}${REMOVED}`);
}

/** Every tensor of `source` (or those `only` keeps: an export needs no optimizer slots). */
async function readAll(source: CheckpointSource, only?: (name: string) => boolean): Promise<Tensors> {
  const tensors: Tensors = new Map();
  for (const [name, info] of source.entries) {
    if (only && !only(name)) continue;
    const handle = hostZeros(info.dtype, info.shape);
    try {
      await source.read(name, handle);
      const data = (await native.tensorData(handle)) as SavedValues;
      tensors.set(name, { name, dtype: info.dtype, shape: info.shape, data });
    } finally {
      handle.dispose();
    }
  }
  return tensors;
}
