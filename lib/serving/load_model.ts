// hb.serving.loadModel: an export directory (lib/serving/export_format.ts) made into a
// native plan on a device, with its feature columns rebuilt from their configs. No
// training state is loaded (no slots, no optimizer, no modelFn): the plan, its parameters
// and the columns that make its feeds from raw features.
import { createHash } from 'crypto';
import { promises as fsp } from 'fs';
import * as path from 'path';
import type { Features } from '../data/batch';
import { currentDevice } from '../backend';
import { KERNEL_REGISTRY_VERSION, native, NativePlan, NativeTensorHandle, TypedArray } from '../native';
import { checkOptionKeys } from '../option_keys';
import { EXPORT_FORMAT, ExportedFeed, ExportedGraph, ExportedParam, ExportedRecipe, ExportManifest, GRAPH_FILE, MANIFEST_FILE, STORED_ITEM_BYTES, VARIABLES_FILE } from './export_format';
import { fromBFloat16, fromFloat16 } from './half_float';
import { MicroBatcher, MicroBatchOptions } from './micro_batcher';
import { ServableModel, ServingSignature } from './servable';
import { PreparedRequest, ServingFeeds } from './serving_feeds';

export interface LoadModelOptions extends MicroBatchOptions {
  /** Where the plan runs: 'cpu', 'cuda', 'cuda:N' (default: the current device). */
  device?: string;
}

/**
 * Loads `dir`: a version directory (holding manifest.json), or an export base directory,
 * whose highest complete version is loaded (TF Serving's "latest" policy).
 */
export async function loadModel(dir: string, options: LoadModelOptions = {}): Promise<ServableModel> {
  checkOptionKeys(options, ['device', 'maxBatch', 'maxWaitMicros'] satisfies ReadonlyArray<keyof LoadModelOptions>, 'loadModel');
  if (typeof dir !== 'string' || dir === '') throw new TypeError('loadModel: dir must be an export directory');
  const versionDir = await resolveVersionDir(dir);
  const manifest = await readManifest(versionDir);
  const graphBytes = await readVerified(versionDir, GRAPH_FILE, manifest);
  const graph = parseGraph(graphBytes, versionDir);
  const variables = await readVerified(versionDir, VARIABLES_FILE, manifest);
  const device = native.resolveDevice(options.device ?? currentDevice(), 'loadModel: options.device');
  const tables = new Map<string, DynamicTableLoaded>();
  try {
    // Dynamic tables first: their rows and handles are bound where the plan names them.
    for (const p of graph.params) if (p.dynamic?.role === 'rows') tables.set(p.name, await dynamicTable(p, variables, versionDir));
    const spec = { ...graph.plan, device, params: graph.plan.params.map((p) => ({ ...p })), values: graph.plan.values.map((v) => ({ ...v })) };
    const params = graph.params.map((p, i) => {
      if (!p.dynamic) return paramTensor(p, variables, device, versionDir);
      const table = tables.get(p.dynamic.table);
      if (!table) throw new Error(`loadModel: ${versionDir}: parameter '${p.name}' names dynamic table '${p.dynamic.table}', which the export does not hold`);
      if (p.dynamic.role === 'handle') return table.handle;
      // The pool holds as many rows as the native table reserved: the plan reads it so.
      spec.params[i].shape = [...(table.values.shape as number[])];
      for (const v of spec.values) if (v.kind === 'param' && v.index === i) v.shape = [...spec.params[i].shape];
      return table.values;
    });
    let plan: NativePlan;
    try {
      plan = native.planCreate(spec, params);
    } catch (error) {
      throw new Error(`loadModel: ${versionDir}: its plan does not load on ${device}: ${(error as Error).message}`);
    }
    return new LoadedModel(versionDir, manifest, graph, plan, params, [...tables.values()].map((t) => t.id), options);
  } catch (error) {
    for (const t of tables.values()) native.dynamicTableRelease(t.id);
    throw error;
  }
}

interface DynamicTableLoaded {
  id: number;
  handle: NativeTensorHandle;
  values: NativeTensorHandle;
}

/** A native dynamic table holding the exported rows: read-only while serving (nothing is admitted). */
async function dynamicTable(p: ExportedParam, variables: Buffer, dir: string): Promise<DynamicTableLoaded> {
  const [rows, dim] = p.shape;
  const values = hostValues(p, variables, dir) as Float32Array;
  const idsOffset = p.dynamic?.idsOffset;
  if (!Number.isSafeInteger(idsOffset) || (idsOffset as number) < 0 || (idsOffset as number) + rows * 8 > variables.byteLength) {
    throw new Error(`loadModel: ${dir}: the ids of dynamic table '${p.name}' do not fit in ${VARIABLES_FILE}`);
  }
  const idBytes = new Uint8Array(rows * 8);
  idBytes.set(variables.subarray(idsOffset as number, (idsOffset as number) + rows * 8));
  const ids = new BigInt64Array(idBytes.buffer);
  const made = native.dynamicTableCreate({ name: p.name, dim, init: { kind: 'constant', value: 0 }, capacityRows: Math.max(rows, 1), admitMinCount: 1, evictAfterSteps: 0, maxRows: 0 });
  const idsT = native.tensorFromTypedArray(ids, [rows], 'cpu');
  const valuesT = native.tensorFromTypedArray(values, [rows, dim], 'cpu');
  // Training's bookkeeping (last seen, counts) means nothing to a table that only reads.
  const metaT = native.tensorFromTypedArray(new BigInt64Array(rows * 3), [rows, 3], 'cpu');
  try {
    await native.dynamicTableRestore(made.id, { ids: idsT, values: valuesT, meta: metaT }, true, 1, 0);
  } catch (error) {
    native.dynamicTableRelease(made.id);
    throw new Error(`loadModel: ${dir}: dynamic table '${p.name}' does not load: ${(error as Error).message}`);
  } finally {
    idsT.dispose();
    valuesT.dispose();
    metaT.dispose();
  }
  return { id: made.id, handle: made.handle, values: made.values };
}

class LoadedModel implements ServableModel {
  readonly version: number;
  /** Asked for on every HTTP request: one frozen copy. */
  private readonly frozenSignature: ServingSignature;
  private readonly feeds: ServingFeeds;
  private readonly batcher: MicroBatcher<PreparedRequest, Record<string, Float32Array>>;
  private closed = false;
  private inFlight = 0;
  private drained?: () => void;

  constructor(
    readonly directory: string,
    private readonly manifest: ExportManifest,
    private readonly graph: ExportedGraph,
    private plan: NativePlan | undefined,
    // Held for the plan's life: the plan reads them.
    private params: NativeTensorHandle[],
    /** The native dynamic tables the plan reads, released on close. */
    private dynamicTables: number[],
    options: MicroBatchOptions,
  ) {
    this.version = manifest.version;
    this.frozenSignature = deepFreeze(JSON.parse(JSON.stringify(manifest.signature)) as ServingSignature);
    this.feeds = new ServingFeeds(graph.feeds);
    this.batcher = new MicroBatcher((requests) => this.run(requests), options);
  }

  signature(): ServingSignature {
    return this.frozenSignature;
  }

  /** Native calls so far, and the rows of the most recent ones (how requests were merged). */
  get batchStats(): { calls: number; recentRows: readonly number[] } {
    return { calls: this.batcher.runs, recentRows: this.batcher.recentRunSizes };
  }

  async predict(features: Features): Promise<Record<string, Float32Array>> {
    if (this.closed) throw new Error(`model ${this.directory} is closed`);
    this.inFlight++;
    try {
      const prepared = await this.feeds.prepare(features);
      if (prepared.rows === 0) return Object.fromEntries(this.graph.outputs.map((o) => [o.name, new Float32Array(0)]));
      return await this.batcher.submit(prepared, prepared.rows);
    } finally {
      if (--this.inFlight === 0) this.drained?.();
    }
  }

  private async run(requests: PreparedRequest[]): Promise<Array<Record<string, Float32Array>>> {
    const merged = this.feeds.merge(requests);
    const fetch = this.graph.outputs.map((o) => o.value);
    const { outputs } = await native.planRun(this.plan as NativePlan, merged.rows, merged.feeds, [], fetch);
    // Each request gets its own rows of every output.
    let row = 0;
    return requests.map((r) => {
      const out: Record<string, Float32Array> = {};
      this.graph.outputs.forEach((o, i) => {
        out[o.name] = (outputs[i] as Float32Array).slice(row * o.width, (row + r.rows) * o.width);
      });
      row += r.rows;
      return out;
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.inFlight > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    await this.batcher.idle();
    this.plan = undefined;
    for (const p of this.params) p.dispose();
    this.params = [];
    for (const id of this.dynamicTables) native.dynamicTableRelease(id);
    this.dynamicTables = [];
  }
}

async function resolveVersionDir(dir: string): Promise<string> {
  const stat = await fsp.stat(dir).catch(() => undefined);
  if (!stat?.isDirectory()) throw new Error(`loadModel: ${dir} is not a directory`);
  if (await fsp.stat(path.join(dir, MANIFEST_FILE)).then(() => true, () => false)) return dir;
  const versions = (await fsp.readdir(dir)).filter((n) => /^\d+$/.test(n)).map(Number).sort((a, b) => b - a);
  // As the server: a version is complete once its manifest is there.
  for (const v of versions) {
    const candidate = path.join(dir, String(v));
    if (await fsp.stat(path.join(candidate, MANIFEST_FILE)).then(() => true, () => false)) return candidate;
  }
  throw new Error(`loadModel: ${dir} holds no export (no manifest.json, no complete version directory)`);
}

async function readManifest(dir: string): Promise<ExportManifest> {
  const file = path.join(dir, MANIFEST_FILE);
  let manifest: ExportManifest;
  try {
    manifest = JSON.parse(await fsp.readFile(file, 'utf8')) as ExportManifest;
  } catch (error) {
    throw new Error(`loadModel: ${file} cannot be read as JSON: ${(error as Error).message}`);
  }
  if (manifest === null || typeof manifest !== 'object') throw new Error(`loadModel: ${file} is not an export manifest`);
  if (manifest.format !== EXPORT_FORMAT) throw new Error(`loadModel: ${file} is format ${JSON.stringify(manifest.format)}; this hb-ts reads ${EXPORT_FORMAT}`);
  if (!Number.isSafeInteger(manifest.version) || typeof manifest.files !== 'object' || manifest.files === null || typeof manifest.signature !== 'object') {
    throw new Error(`loadModel: ${file} lacks its version, files or signature`);
  }
  return manifest;
}

/** A file of the export, checked against the manifest's size and SHA-256. */
async function readVerified(dir: string, name: string, manifest: ExportManifest): Promise<Buffer> {
  const expected = manifest.files[name];
  if (!expected || typeof expected.sha256 !== 'string') throw new Error(`loadModel: ${dir}/${MANIFEST_FILE} does not list ${name}`);
  const file = path.join(dir, name);
  const bytes = await fsp.readFile(file).catch((error: Error) => {
    throw new Error(`loadModel: cannot read ${file}: ${error.message}`);
  });
  if (bytes.byteLength !== expected.bytes) throw new Error(`loadModel: ${file} has ${bytes.byteLength} bytes, its manifest says ${expected.bytes}: the export is damaged`);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  if (sha256 !== expected.sha256) throw new Error(`loadModel: ${file} does not match its SHA-256 in the manifest: the export is damaged`);
  return bytes;
}

function parseGraph(bytes: Buffer, dir: string): ExportedGraph {
  let graph: ExportedGraph;
  try {
    graph = JSON.parse(bytes.toString('utf8')) as ExportedGraph;
  } catch (error) {
    throw new Error(`loadModel: ${dir}/${GRAPH_FILE} cannot be read as JSON: ${(error as Error).message}`);
  }
  if (graph === null || typeof graph !== 'object' || !graph.plan || !Array.isArray(graph.feeds) || !Array.isArray(graph.outputs) || !Array.isArray(graph.params)) {
    throw new Error(`loadModel: ${dir}/${GRAPH_FILE} is not an exported graph`);
  }
  if (graph.plan.version !== KERNEL_REGISTRY_VERSION) {
    throw new Error(`loadModel: ${dir} was exported for kernel registry ${graph.plan.version}; this hb-ts has ${KERNEL_REGISTRY_VERSION}: export it again with this version`);
  }
  const plan = graph.plan as { params?: unknown; values?: unknown };
  const objects = (list: unknown) => Array.isArray(list) && list.every((item) => item !== null && typeof item === 'object' && !Array.isArray(item));
  // The plan's own checks are native (planCreate); these are the parts read here first.
  if (!objects(plan.params) || !objects(plan.values)) throw new Error(`loadModel: ${dir}/${GRAPH_FILE}: its plan has no list of params and values`);
  graph.feeds.forEach((feed, i) => checkFeed(feed, i, dir));
  graph.outputs.forEach((o, i) => {
    if (o === null || typeof o !== 'object' || typeof o.name !== 'string' || !Number.isSafeInteger(o.value) || o.value < 0 || !Number.isSafeInteger(o.width) || o.width < 0) {
      throw new Error(`loadModel: ${dir}/${GRAPH_FILE}: output ${i} is not a name, a plan value and a width (${shortJson(o)})`);
    }
  });
  if (graph.params.length !== graph.plan.params.length) throw new Error(`loadModel: ${dir}/${GRAPH_FILE} lists ${graph.params.length} parameters for a plan of ${graph.plan.params.length}`);
  graph.params.forEach((p, i) => {
    // Bound by position: a parameter must be the one the plan names there.
    if (p === null || typeof p !== 'object' || p.name !== graph.plan.params[i].name || p.dtype !== graph.plan.params[i].dtype) {
      throw new Error(`loadModel: ${dir}/${GRAPH_FILE}: parameter ${i} is '${p?.name}' (${p?.dtype}) where the plan binds '${graph.plan.params[i].name}' (${graph.plan.params[i].dtype})`);
    }
    if (!Array.isArray(p.shape) || !p.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new Error(`loadModel: ${dir}/${GRAPH_FILE}: parameter '${p.name}' has shape ${JSON.stringify(p.shape)}`);
    if (p.dynamic) {
      const planShape: unknown = graph.plan.params[i].shape;
      const dim = Array.isArray(planShape) ? planShape[1] : undefined;
      if (p.dynamic.role === 'rows' && (p.dtype !== 'float32' || p.shape.length !== 2 || p.shape[1] !== dim)) {
        throw new Error(`loadModel: ${dir}/${GRAPH_FILE}: dynamic table '${p.name}' holds [${p.shape}] ${p.dtype} rows; the plan reads float32 rows of ${dim}`);
      }
      if (p.dynamic.role !== 'rows' && p.dynamic.role !== 'handle') throw new Error(`loadModel: ${dir}/${GRAPH_FILE}: parameter '${p.name}' has dynamic role ${JSON.stringify(p.dynamic.role)}`);
    }
  });
  return graph;
}

const FEED_DTYPES = new Set(['float32', 'int32', 'int64']);
const ID_PARTS = new Set(['ids', 'row_splits', 'weights']);

/** A feed's recipe as exportSavedModel writes it; its column config is checked when the column is rebuilt. */
function checkFeed(feed: ExportedFeed, i: number, dir: string): void {
  const bad = (what: string) => new Error(`loadModel: ${dir}/${GRAPH_FILE}: feed ${i} ${what} (${shortJson(feed)})`);
  if (feed === null || typeof feed !== 'object' || typeof feed.name !== 'string' || !FEED_DTYPES.has(feed.dtype)) throw bad('is not a name and a dtype');
  const recipe = feed.recipe as ExportedRecipe | null;
  if (recipe === null || typeof recipe !== 'object') throw bad('has no recipe');
  if (recipe.kind === 'numeric') {
    if (typeof recipe.key !== 'string' || !Number.isSafeInteger(recipe.width) || recipe.width < 0) throw bad('is a numeric feed without a key and a width');
  } else if (recipe.kind === 'column_ids') {
    if (!ID_PARTS.has(recipe.part) || typeof recipe.name !== 'string' || typeof recipe.rawIds !== 'boolean' || recipe.column === null || typeof recipe.column !== 'object') {
      throw bad("is a lookup feed without its part, column, name and 'rawIds'");
    }
  } else if (recipe.kind === 'column_dense') {
    if (recipe.column === null || typeof recipe.column !== 'object') throw bad('is a dense column feed without its column');
  } else {
    throw bad(`has recipe kind ${JSON.stringify((recipe as { kind?: unknown }).kind)}`);
  }
}

/** A value of a damaged file, shortened for a message. */
function shortJson(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

const ARRAYS = { float32: Float32Array, float64: Float64Array, int32: Int32Array, int64: BigInt64Array, float16: Uint16Array, bfloat16: Uint16Array } as const;

function paramTensor(p: ExportedParam, variables: Buffer, device: string, dir: string): NativeTensorHandle {
  return native.tensorFromTypedArray(hostValues(p, variables, dir), p.shape, device);
}

/** A parameter's values as the plan holds them (half-size tables widened to float32). */
function hostValues(p: ExportedParam, variables: Buffer, dir: string): TypedArray {
  const count = p.shape.reduce((a, b) => a * b, 1);
  const itemBytes = STORED_ITEM_BYTES[p.storedDtype];
  if (itemBytes === undefined || !Number.isSafeInteger(p.offset) || p.offset < 0 || p.bytes !== count * itemBytes || p.offset + p.bytes > variables.byteLength) {
    throw new Error(`loadModel: ${dir}: parameter '${p.name}' ([${p.shape}] ${p.storedDtype} at ${p.offset}) does not fit in ${VARIABLES_FILE} (${variables.byteLength} bytes)`);
  }
  // A copy into an aligned buffer of its own: the file's buffer need not be aligned.
  const bytes = new Uint8Array(p.bytes);
  bytes.set(variables.subarray(p.offset, p.offset + p.bytes));
  let values: TypedArray | Uint16Array = new ARRAYS[p.storedDtype](bytes.buffer, 0, count);
  if (p.storedDtype === 'float16') values = fromFloat16(values as Uint16Array);
  else if (p.storedDtype === 'bfloat16') values = fromBFloat16(values as Uint16Array);
  return values as TypedArray;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
