// estimator.exportSavedModel: the PREDICT model written as a self-contained, versioned
// directory (lib/serving/export_format.ts) that hb.serving.loadModel runs without the
// modelFn. As TensorFlow's export_saved_model does, the variables come from the latest
// checkpoint in modelDir (saved first when training ran since), so a model trained by a job
// of several ranks exports whole from one process: the checkpoint's sharded tables are put
// together (readCheckpoint). Without a modelDir, the model's variables as they are now.
import { createHash, randomBytes } from 'crypto';
import { promises as fsp } from 'fs';
import * as path from 'path';
import type { Batch } from '../data/batch';
import { columnConfig } from '../feature_column/column_config';
import { LookupColumn } from '../feature_column/embedding';
import { compileGraph } from '../graph/compile';
import { Feed, Graph, SymbolicTensor } from '../graph/graph';
import { native, NativeTensorHandle, TypedArray } from '../native';
import { Ragged } from '../tensor/ragged';
import { StringColumn } from '../tensor/string_column';
import {
  EXPORT_FORMAT,
  ExportedFeed,
  ExportedGraph,
  ExportedParam,
  ExportedRecipe,
  ExportManifest,
  ExportTableDType,
  GRAPH_FILE,
  MANIFEST_FILE,
  STORED_ITEM_BYTES,
  VARIABLES_FILE,
} from '../serving/export_format';
import { toBFloat16, toFloat16 } from '../serving/half_float';
import { ServingInputSpec, ServingSignature } from '../serving/servable';
import { readCheckpoint } from './read_checkpoint';
import { packageVersion } from '../package_root';

export interface ExportOptions {
  /** A batch shaped like serving's requests (default: the first batch the model was built on). */
  sampleBatch?: Batch;
  /** Embedding tables stored as float16 or bfloat16 (half the bytes; loaded back as float32). */
  tableDtype?: ExportTableDType;
}

/** What the export needs of the Estimator. */
export interface ExportSource {
  readonly modelDir?: string;
  readonly world: { size: number };
  readonly globalStep: number;
  exportGraph(example: Batch): Promise<{ graph: Graph; predictions: Array<[string, SymbolicTensor]> }>;
  /** Saves a checkpoint when training ran since the last one (a no-op otherwise). */
  saveCheckpoint(): Promise<string | undefined>;
  /** A dynamic table's live rows, by the table's name (no modelDir). */
  liveDynamicRows(name: string): Promise<{ ids: BigInt64Array; values: Float32Array } | undefined>;
  /** The model's variables as they are now, by name (no modelDir). */
  liveVariable(name: string): { handle: NativeTensorHandle } | undefined;
  readonly exampleBatch?: Batch;
}

export async function exportSavedModel(source: ExportSource, exportDirBase: string, options: ExportOptions = {}): Promise<string> {
  const fn = 'exportSavedModel';
  if (typeof exportDirBase !== 'string' || exportDirBase === '') throw new TypeError(`${fn}: exportDir must be a non-empty string`);
  const tableDtype = options.tableDtype ?? 'float32';
  if (!['float32', 'float16', 'bfloat16'].includes(tableDtype)) throw new TypeError(`${fn}: tableDtype must be 'float32', 'float16' or 'bfloat16', got ${JSON.stringify(tableDtype)}`);
  if (source.world.size > 1) {
    throw new Error(
      `${fn}: export from one process, not from each rank of a job: run the same modelFn with the job's modelDir in a plain \`node\` process ` +
        '(new Estimator({ modelFn, modelDir }).exportSavedModel(dir)); it reads the sharded checkpoint whole',
    );
  }
  const example = options.sampleBatch ?? source.exampleBatch;
  if (!example) throw new Error(`${fn}: no batch to shape the serving inputs by: train, evaluate or predict first, or pass { sampleBatch }`);

  const { graph, predictions } = await source.exportGraph(example);
  // Every feed as data first: what an export cannot hold is said before compiling.
  const recipes = new Map<Feed, ExportedRecipe>(graph.feeds.map((feed) => [feed, exportedRecipe(feed)]));
  const lookupColumns = graph.feeds.flatMap((feed) => (feed.recipe?.kind === 'column_ids' ? [feed.recipe.column as LookupColumn] : []));
  const tables = new Set(lookupColumns.map((c) => c.tableName));
  const dynamicTables = new Set(lookupColumns.filter((c) => c.keyedByRawIds).map((c) => c.tableName));
  const compiled = compileGraph(graph, predictions.map(([, t]) => t));
  const feeds: ExportedFeed[] = compiled.feeds.map((feed) => ({ name: feed.name, dtype: feed.dtype, recipe: recipes.get(feed) as ExportedRecipe }));
  if (compiled.optimizers.length > 0) throw new Error(`${fn}: the PREDICT model applies an optimizer; a modelFn trains only in TRAIN mode`);

  // Variables: from the latest checkpoint (saved now if training ran since), else as they are.
  let values: (name: string) => Promise<TypedArray | undefined>;
  let dynamicRows: (name: string) => Promise<{ ids: BigInt64Array; values: Float32Array } | undefined>;
  let globalStep = source.globalStep;
  let variablesSource = 'memory';
  if (source.modelDir) {
    await source.saveCheckpoint();
    // Only what the plan binds: a table's optimizer slots would double what is read.
    const bound = new Set(compiled.spec.params.map((p) => p.name));
    const only = (name: string) => bound.has(name) || [...dynamicTables].some((t) => name.startsWith(`${t}/`));
    const checkpoint = await readCheckpoint(source.modelDir, { only }).catch((error: Error) => {
      throw new Error(`${fn}: no checkpoint to export in ${source.modelDir}: ${error.message}`);
    });
    globalStep = checkpoint.globalStep;
    variablesSource = path.basename(checkpoint.path);
    values = async (name) => checkpoint.tensors.get(name)?.data;
    dynamicRows = async (name) => {
      const [rows, ids] = [checkpoint.tensors.get(name), checkpoint.tensors.get(`${name}/ids`)];
      return rows && ids ? { values: rows.data as Float32Array, ids: ids.data as BigInt64Array } : undefined;
    };
  } else {
    values = async (name) => {
      const v = source.liveVariable(name);
      return v ? ((await native.tensorData(v.handle)) as TypedArray) : undefined;
    };
    dynamicRows = (name) => source.liveDynamicRows(name);
  }

  // Parameters: every variable from the checkpoint (or the live model), every constant as
  // built; a dynamic table's live rows with their ids, its handle left for loadModel.
  const handleOf = new Map<string, string>();
  for (const node of graph.nodes) if (node.op === 'constant' && typeof node.attrs.dynamicTable === 'string') handleOf.set(node.name, node.attrs.dynamicTable);
  const params: ExportedParam[] = [];
  const chunks: Uint8Array[] = [];
  let offset = 0;
  // 8-byte aligned, so each part can be read as its typed array in place.
  const append = (bytes: Uint8Array): number => {
    const pad = (8 - (offset % 8)) % 8;
    if (pad) chunks.push(new Uint8Array(pad));
    offset += pad;
    const at = offset;
    chunks.push(bytes);
    offset += bytes.byteLength;
    return at;
  };
  const bytesOf = (data: TypedArray | Uint16Array) => new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const halved = (name: string, data: TypedArray): { data: TypedArray | Uint16Array; storedDtype?: 'float16' | 'bfloat16' } =>
    tables.has(name) && tableDtype !== 'float32' ? { data: tableDtype === 'float16' ? toFloat16(data as Float32Array) : toBFloat16(data as Float32Array), storedDtype: tableDtype } : { data };
  const where = variablesSource === 'memory' ? 'the model' : variablesSource;
  for (let i = 0; i < compiled.spec.params.length; i++) {
    const spec = compiled.spec.params[i];
    if (spec.dtype !== 'float32' && spec.dtype !== 'float64' && spec.dtype !== 'int32' && spec.dtype !== 'int64') {
      throw new Error(`${fn}: parameter '${spec.name}' is ${spec.dtype}; an export holds float32, float64, int32 and int64 values`);
    }
    const handleTable = handleOf.get(spec.name);
    if (handleTable !== undefined) {
      params.push({ name: spec.name, dtype: spec.dtype, storedDtype: spec.dtype, shape: [...spec.shape], offset: 0, bytes: 0, dynamic: { role: 'handle', table: handleTable } });
      continue;
    }
    if (dynamicTables.has(spec.name)) {
      const rows = await dynamicRows(spec.name);
      if (!rows) throw new Error(`${fn}: dynamic table '${spec.name}' is not in ${where}: was the model trained with this modelFn?`);
      const dim = spec.shape[1];
      if (rows.values.length !== rows.ids.length * dim) throw new Error(`${fn}: dynamic table '${spec.name}' has ${rows.ids.length} ids but ${rows.values.length} values of width ${dim} in ${where}`);
      const { data, storedDtype } = halved(spec.name, rows.values);
      const at = append(bytesOf(data));
      const idsOffset = append(bytesOf(rows.ids));
      params.push({ name: spec.name, dtype: spec.dtype, storedDtype: storedDtype ?? spec.dtype, shape: [rows.ids.length, dim], offset: at, bytes: data.byteLength, dynamic: { role: 'rows', table: spec.name, idsOffset } });
      continue;
    }
    const isVariable = graph.store.variables.has(spec.name);
    const raw = isVariable ? await values(spec.name) : ((await native.tensorData(compiled.params[i])) as TypedArray);
    if (raw === undefined) throw new Error(`${fn}: variable '${spec.name}' is not in ${where}: was the model trained with this modelFn?`);
    const count = spec.shape.reduce((a, b) => a * b, 1);
    if (raw.length !== count) throw new Error(`${fn}: variable '${spec.name}' holds ${raw.length} values in ${where}, the model's is [${spec.shape}]`);
    const { data, storedDtype } = halved(spec.name, raw);
    params.push({ name: spec.name, dtype: spec.dtype, storedDtype: storedDtype ?? spec.dtype, shape: [...spec.shape], offset: append(bytesOf(data)), bytes: data.byteLength });
  }

  const outputs = predictions.map(([name, t], i) => {
    if (t.dtype !== 'float32') throw new Error(`${fn}: prediction '${name}' is ${t.dtype}; predictions are float32`);
    if (t.shape[0] !== -1 || t.shape.slice(1).some((d) => d < 0)) throw new Error(`${fn}: prediction '${name}' must be [batch] or [batch, n], got [${t.shape}]`);
    return { name, value: compiled.fetch[i], width: t.shape.slice(1).reduce((a, b) => a * b, 1) };
  });
  const exported: ExportedGraph = { plan: compiled.spec, feeds, outputs, params };
  const signature: ServingSignature = {
    inputs: signatureInputs(feeds, example),
    outputs: outputs.map((o) => ({ name: o.name, dtype: 'float32', width: o.width })),
  };
  const graphBytes = Buffer.from(JSON.stringify(exported), 'utf8');
  return writeVersion(exportDirBase, {
    graphBytes,
    variables: chunks,
    manifest: (version, files) => ({
      format: EXPORT_FORMAT,
      hbTsVersion: packageVersion(),
      version,
      createdAt: new Date(version * 1000).toISOString(),
      globalStep,
      source: variablesSource,
      tableDtype,
      signature,
      files,
    }),
  });
}

function exportedRecipe(feed: Feed): ExportedRecipe {
  const recipe = feed.recipe;
  if (!recipe) throw new Error(`exportSavedModel: the PREDICT model reads '${feed.name}', which is not a feature (labels are not read when predicting)`);
  let out: ExportedRecipe;
  if (recipe.kind === 'numeric') {
    out = { kind: 'numeric', key: recipe.key, width: recipe.width };
  } else if (recipe.kind === 'column_ids') {
    const column = recipe.column as LookupColumn;
    if (column.options.embSegmentRank !== 0) throw new Error(`exportSavedModel: feature column '${column.name}' uses embSegmentRank, which an export cannot hold yet`);
    out = { kind: 'column_ids', part: recipe.part, column: columnConfig(column.categoricalColumn), rawIds: column.keyedByRawIds, name: column.name };
  } else {
    out = { kind: 'column_dense', column: columnConfig(recipe.column as never) };
  }
  return out;
}

/**
 * Whether a raw feature of the sample batch holds strings or integers: a crossed column
 * hashes both, differently, so serving must be told which training saw.
 */
function sampleDtype(value: unknown): 'string' | 'int64' {
  if (value instanceof StringColumn || (value !== null && typeof value === 'object' && (value as { values?: unknown }).values instanceof StringColumn)) return 'string';
  if (Array.isArray(value)) return typeof value.flat(2).find((v) => v !== null && v !== undefined) === 'string' ? 'string' : 'int64';
  return ArrayBuffer.isView(value) || value instanceof Ragged ? 'int64' : 'string';
}

/** The raw features serving takes: each key once, with what the columns reading it expect. */
function signatureInputs(feeds: ExportedFeed[], example: Batch): ServingInputSpec[] {
  const inputs = new Map<string, ServingInputSpec>();
  const add = (spec: ServingInputSpec) => {
    if (!inputs.has(spec.name)) inputs.set(spec.name, spec);
  };
  // Over the configs of lib/feature_column/column_config.ts, nested ones included.
  const visit = (config: Record<string, unknown>) => {
    if (config.type === 'NumericColumn') {
      const shape = (config.shape as number[] | undefined) ?? [1];
      add({ name: config.key as string, kind: 'numeric', dtype: 'float32', width: shape.reduce((a, b) => a * b, 1) });
    } else if (typeof config.key === 'string') {
      const dtype = typeof config.dtype === 'string' ? config.dtype : 'int64'; // identity columns take integers
      add({ name: config.key, kind: 'categorical', dtype: dtype as ServingInputSpec['dtype'] });
    }
    if (config.type === 'CrossedColumn' && Array.isArray(config.keys)) {
      for (const k of config.keys) if (typeof k === 'string') add({ name: k, kind: 'categorical', dtype: sampleDtype(example.features[k]) });
    }
    if (typeof config.weightFeatureKey === 'string') {
      const of = (config.categoricalColumn as { key?: unknown } | undefined)?.key;
      add({ name: config.weightFeatureKey, kind: 'weights', dtype: 'float32', ...(typeof of === 'string' ? { weightsOf: of } : {}) });
    }
    for (const value of Object.values(config)) {
      if (Array.isArray(value)) value.forEach((v) => v !== null && typeof v === 'object' && visit(v as Record<string, unknown>));
      else if (value !== null && typeof value === 'object' && typeof (value as { type?: unknown }).type === 'string') visit(value as Record<string, unknown>);
    }
  };
  for (const feed of feeds) {
    const r = feed.recipe;
    if (r.kind === 'numeric') add({ name: r.key, kind: 'numeric', dtype: 'float32', width: r.width });
    else visit(r.column as Record<string, unknown>);
  }
  return [...inputs.values()];
}

async function writeFileDurably(file: string, parts: Uint8Array[]): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  const fh = await fsp.open(file, 'w');
  let bytes = 0;
  try {
    for (const part of parts) {
      hash.update(part);
      let written = 0;
      while (written < part.byteLength) {
        const { bytesWritten } = await fh.write(part, written, part.byteLength - written);
        written += bytesWritten;
      }
      bytes += part.byteLength;
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
  return { sha256: hash.digest('hex'), bytes };
}

async function syncDirectory(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r').catch(() => undefined);
  if (!fh) return;
  try {
    await fh.sync().catch(() => undefined); // not every platform syncs a directory
  } finally {
    await fh.close();
  }
}

/**
 * Writes a version directory atomically: files into `.tmp-<version>-<random>`, each
 * fsynced, then renamed to `<version>`, a later second if that exists (two exports in one
 * second), and the parent fsynced.
 */
async function writeVersion(
  base: string,
  content: { graphBytes: Uint8Array; variables: Uint8Array[]; manifest: (version: number, files: ExportManifest['files']) => ExportManifest },
): Promise<string> {
  await fsp.mkdir(base, { recursive: true });
  let version = Math.floor(Date.now() / 1000);
  const tmp = path.join(base, `.tmp-${version}-${randomBytes(6).toString('hex')}`);
  await fsp.mkdir(tmp);
  try {
    const files: ExportManifest['files'] = {};
    files[GRAPH_FILE] = await writeFileDurably(path.join(tmp, GRAPH_FILE), [content.graphBytes]);
    files[VARIABLES_FILE] = await writeFileDurably(path.join(tmp, VARIABLES_FILE), content.variables);
    for (;;) {
      const target = path.join(base, String(version));
      if (await fsp.stat(target).then(() => true, () => false)) {
        version++;
        continue;
      }
      await writeFileDurably(path.join(tmp, MANIFEST_FILE), [Buffer.from(JSON.stringify(content.manifest(version, files), null, 2), 'utf8')]);
      await syncDirectory(tmp);
      try {
        await fsp.rename(tmp, target);
      } catch (error) {
        // Another export took this version meanwhile: the next second.
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
        version++;
        continue;
      }
      await syncDirectory(base);
      return target;
    }
  } catch (error) {
    await fsp.rm(tmp, { recursive: true, force: true });
    throw error;
  }
}
