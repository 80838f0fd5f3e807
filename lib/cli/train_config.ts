// `hb-ts train [config.json]`: what to train and on what. Every setting has a default, so
// `hb-ts train` alone trains DLRM on generated Criteo-like data with a planted signal;
// `trainFiles` switches to the user's files (Criteo TSV or Parquet), described by
// `features`, for any of the ready-made models. SETTINGS is both the check and the help.
import * as fs from 'fs';
import * as path from 'path';
import { MAX_SYNTHETIC_DENSE } from '../data/synthetic_source';
import { closestKey } from '../option_keys';
import { shownValue } from '../shown_value';

export type ModelName = 'dlrm' | 'wideAndDeep' | 'deepFM' | 'dcn';
export type OptimizerName = 'adagrad' | 'adam' | 'sgd' | 'ftrl';
export type DataFormat = 'criteo-tsv' | 'parquet';

/** How one input column becomes a feature column. */
export type FeatureSpec =
  | { type: 'numeric'; normalizer?: 'log1p' | 'none'; default?: number }
  | (CategoricalSpecBase & { type: 'hashed'; hashBucketSize: number; dtype?: 'string' | 'int32' | 'int64' })
  | (CategoricalSpecBase & { type: 'vocabulary'; vocabulary?: Array<string | number>; vocabularyFile?: string; numOovBuckets?: number; defaultValue?: number; dtype?: 'string' | 'int32' | 'int64' })
  | (CategoricalSpecBase & { type: 'identity'; numBuckets?: number; defaultValue?: number });

export interface CategoricalSpecBase {
  /** This feature's embedding dimension (default: embeddingDim). */
  embeddingDim?: number;
  combiner?: 'sum' | 'mean' | 'sqrtn';
  /** Any of HybridBackend's emb* options (embBackend, embDevice, embSharded, ...). */
  [embOption: `emb${string}`]: unknown;
}

export interface TrainConfig {
  model: ModelName;
  // The user's data (without trainFiles: generated data).
  trainFiles?: string[];
  evalFiles?: string[];
  format?: DataFormat;
  labelField: string;
  features?: Record<string, FeatureSpec>;
  // Generated data.
  numDense: number;
  /** One table per categorical feature. */
  tables: Array<{ name: string; vocabularySize: number; hotness: number | [number, number]; alpha: number }>;
  trainSamples: number;
  evalSamples: number;
  // The model.
  embeddingDim: number;
  bottomMlp: number[];
  topMlp: number[];
  hiddenUnits: number[];
  crossLayers: number;
  // Training.
  batchSize: number;
  maxSteps?: number;
  epochs: number;
  evalEveryNIter?: number;
  evalSteps?: number;
  optimizer: OptimizerName;
  learningRate: number;
  wideOptimizer: OptimizerName;
  wideLearningRate: number;
  modelDir?: string;
  /** After training, the PREDICT model is exported here (hb-ts serve's directory). */
  exportDir?: string;
  seed: number;
  /** Where relative paths in the file are taken from (its folder; the working directory without a file). */
  baseDir: string;
}

export const defaultTrainConfig: TrainConfig = {
  model: 'dlrm',
  labelField: 'label',
  numDense: 13,
  tables: Array.from({ length: 26 }, (_, i) => ({ name: `C${i + 1}`, vocabularySize: 10_000, hotness: 1, alpha: 1.1 })),
  trainSamples: 1_000_000,
  evalSamples: 20_000,
  embeddingDim: 16,
  bottomMlp: [64, 16],
  topMlp: [64, 32],
  hiddenUnits: [256, 128],
  crossLayers: 2,
  batchSize: 1024,
  epochs: 1,
  evalEveryNIter: 250,
  optimizer: 'adagrad',
  learningRate: 0.1,
  wideOptimizer: 'ftrl',
  wideLearningRate: 0.1,
  seed: 1,
  baseDir: '.',
};

/** Every setting, in the order `hb-ts train --help` lists them. */
export const SETTINGS: ReadonlyArray<{ key: Exclude<keyof TrainConfig, 'baseDir'>; help: string }> = [
  { key: 'model', help: "'dlrm' (default), 'wideAndDeep', 'deepFM' or 'dcn' (DCN-v2)" },
  { key: 'trainFiles', help: 'glob or list of globs of training files, relative to the config file; without it: generated Criteo-like data' },
  { key: 'evalFiles', help: 'glob(s) of evaluation files (default: none, training only)' },
  { key: 'format', help: "'criteo-tsv' or 'parquet' (default: parquet when every file ends in .parquet)" },
  { key: 'labelField', help: "the label column (default 'label'; Criteo TSV's first field)" },
  {
    key: 'features',
    help:
      '{ column: spec } for the files: {"type":"numeric","normalizer":"log1p"|"none","default":0}, ' +
      '{"type":"hashed","hashBucketSize":N}, {"type":"vocabulary","vocabulary":[...]|"vocabularyFile":"path","numOovBuckets":N}, ' +
      '{"type":"identity","numBuckets":N} (no numBuckets: a dynamic table); categorical specs also take embeddingDim, combiner and ' +
      'any emb* option. Default for criteo-tsv: I1..I13 numeric log1p, C1..C26 hashed into 100000 buckets',
  },
  { key: 'numDense', help: 'generated data: dense features I1..In (default 13)' },
  { key: 'tables', help: 'generated data: [{ name, vocabularySize, hotness, alpha }] (default 26 tables of 10000)' },
  { key: 'trainSamples', help: 'generated data: training rows (default 1000000)' },
  { key: 'evalSamples', help: 'generated data: evaluation rows (default 20000)' },
  { key: 'embeddingDim', help: 'embedding dimension (default 16)' },
  { key: 'bottomMlp', help: 'dlrm: bottom MLP sizes, ending at embeddingDim (default [64, 16])' },
  { key: 'topMlp', help: 'dlrm: top MLP sizes (default [64, 32])' },
  { key: 'hiddenUnits', help: 'wideAndDeep, deepFM, dcn: the deep MLP sizes (default [256, 128])' },
  { key: 'crossLayers', help: 'dcn: cross layers (default 2)' },
  { key: 'batchSize', help: "examples per step (each rank's under --nproc-per-node; default 1024)" },
  { key: 'maxSteps', help: 'stop at this global step (default: generated data: trainSamples / batchSize; files: after epochs)' },
  { key: 'epochs', help: 'files: passes over trainFiles (default 1)' },
  { key: 'evalEveryNIter', help: 'evaluate every N steps (default 250)' },
  { key: 'evalSteps', help: 'evaluation batches per evaluation (default: all of evalFiles / evalSamples)' },
  { key: 'optimizer', help: "'adagrad' (default), 'adam' (lazy), 'sgd' or 'ftrl'" },
  { key: 'learningRate', help: 'default 0.1' },
  { key: 'wideOptimizer', help: "wideAndDeep, deepFM: the linear part's optimizer (default 'ftrl', as TF's DNNLinearCombinedClassifier)" },
  { key: 'wideLearningRate', help: 'default 0.1' },
  { key: 'modelDir', help: 'checkpoints (resumed when present), relative to the config file' },
  { key: 'exportDir', help: 'after training, the model is exported here as a new version for `hb-ts serve` (relative to the config file; needs modelDir under --nproc-per-node)' },
  { key: 'seed', help: 'initial values, and the generated data (default 1)' },
];

const KNOWN = SETTINGS.map((s) => s.key as string);
const MODELS: readonly ModelName[] = ['dlrm', 'wideAndDeep', 'deepFM', 'dcn'];
const OPTIMIZERS: readonly OptimizerName[] = ['adagrad', 'adam', 'sgd', 'ftrl'];
const FEATURE_KEYS: Record<FeatureSpec['type'], readonly string[]> = {
  numeric: ['type', 'normalizer', 'default'],
  hashed: ['type', 'hashBucketSize', 'dtype', 'embeddingDim', 'combiner'],
  vocabulary: ['type', 'vocabulary', 'vocabularyFile', 'numOovBuckets', 'defaultValue', 'dtype', 'embeddingDim', 'combiner'],
  identity: ['type', 'numBuckets', 'defaultValue', 'embeddingDim', 'combiner'],
};

/** The help text of the settings, one per line. */
export function settingsHelp(): string {
  const width = Math.max(...SETTINGS.map((s) => s.key.length));
  return SETTINGS.map((s) => `  ${s.key.padEnd(width)}  ${s.help}`).join('\n');
}

export function readTrainConfig(file?: string, command = 'train'): TrainConfig {
  if (!file) return { ...defaultTrainConfig, baseDir: process.cwd() };
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(`hb-ts ${command}: cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`hb-ts ${command}: ${file} is not JSON: ${(error as Error).message}`);
  }
  const where = `hb-ts ${command}: ${file}`;
  // As for arguments: a JSON value of the wrong type is a TypeError, a wrong value of the
  // right type an Error.
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new TypeError(`${where} must hold a JSON object`);
  const given = parsed as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (KNOWN.includes(key)) continue;
    const meant = closestKey(key, KNOWN);
    throw new Error(`${where}: unknown setting '${key}'${meant ? ` (did you mean '${meant}'?)` : ''}; see hb-ts train --help for every setting`);
  }
  const check = new SettingChecker(where, given);
  const config: TrainConfig = { ...defaultTrainConfig, baseDir: path.dirname(path.resolve(file)) };
  config.model = check.oneOf('model', MODELS) ?? config.model;
  config.trainFiles = check.globs('trainFiles');
  config.evalFiles = check.globs('evalFiles');
  config.format = check.oneOf('format', ['criteo-tsv', 'parquet'] as const);
  config.labelField = check.string('labelField') ?? config.labelField;
  config.features = check.features('features');
  config.numDense = check.integer('numDense', 0, MAX_SYNTHETIC_DENSE) ?? config.numDense;
  if (given.tables !== undefined) config.tables = checkTables(given.tables, where);
  // Generated data is numbered by row: train and eval rows together stay exact integers.
  for (const key of ['trainSamples', 'evalSamples'] as const) config[key] = check.integer(key, 1, 2 ** 50) ?? config[key];
  for (const key of ['embeddingDim', 'batchSize', 'epochs', 'crossLayers'] as const) config[key] = check.integer(key, 1) ?? config[key];
  for (const key of ['bottomMlp', 'topMlp', 'hiddenUnits'] as const) config[key] = check.sizes(key) ?? config[key];
  config.maxSteps = check.integer('maxSteps', 0);
  config.evalEveryNIter = check.integer('evalEveryNIter', 1) ?? config.evalEveryNIter;
  config.evalSteps = check.integer('evalSteps', 1);
  config.optimizer = check.oneOf('optimizer', OPTIMIZERS) ?? config.optimizer;
  config.wideOptimizer = check.oneOf('wideOptimizer', OPTIMIZERS) ?? config.wideOptimizer;
  config.learningRate = check.positive('learningRate') ?? config.learningRate;
  config.wideLearningRate = check.positive('wideLearningRate') ?? config.wideLearningRate;
  const modelDir = check.string('modelDir');
  config.modelDir = modelDir === undefined ? undefined : path.resolve(config.baseDir, modelDir);
  const exportDir = check.string('exportDir');
  config.exportDir = exportDir === undefined ? undefined : path.resolve(config.baseDir, exportDir);
  config.seed = check.integer('seed', 0) ?? config.seed;
  if (config.trainFiles === undefined) {
    for (const key of ['evalFiles', 'format', 'features', 'epochs'] as const) {
      if (given[key] !== undefined) throw new Error(`${where}: ${key} is a setting for files, but trainFiles is not set (without it hb-ts train uses generated data)`);
    }
  } else {
    for (const key of ['numDense', 'tables', 'trainSamples', 'evalSamples'] as const) {
      if (given[key] !== undefined) throw new Error(`${where}: ${key} is a setting for generated data, but trainFiles is set (the files' columns are described by features)`);
    }
  }
  if (config.model === 'dlrm' && config.bottomMlp[config.bottomMlp.length - 1] !== config.embeddingDim) {
    throw new Error(`${where}: bottomMlp must end at embeddingDim (${config.embeddingDim}) for dlrm, got [${config.bottomMlp}]`);
  }
  return config;
}

/** Generated data's tables, each { name, vocabularySize, hotness, alpha } checked. */
function checkTables(value: unknown, where: string): TrainConfig['tables'] {
  const shape = 'a non-empty array of { name, vocabularySize, hotness, alpha }';
  if (!Array.isArray(value) || value.length === 0) {
    const message = `${where}: tables must be ${shape}, got ${shownValue(value)}`;
    throw Array.isArray(value) ? new Error(message) : new TypeError(message);
  }
  return value.map((t: unknown, i) => {
    const at = `${where}: tables[${i}]`;
    if (t === null || typeof t !== 'object' || Array.isArray(t)) throw new TypeError(`${at} must be { name, vocabularySize, hotness, alpha }, got ${shownValue(t)}`);
    const { name, vocabularySize, hotness = 1, alpha = 1.1, ...rest } = t as Record<string, unknown>;
    const extra = Object.keys(rest);
    if (extra.length > 0) throw new Error(`${at}: unknown key '${extra[0]}'; a table takes name, vocabularySize, hotness, alpha`);
    if (typeof name !== 'string' || name === '') throw new TypeError(`${at}.name must be a non-empty string, got ${shownValue(name)}`);
    if (!Number.isSafeInteger(vocabularySize) || (vocabularySize as number) < 1) {
      const message = `${at}.vocabularySize must be an integer >= 1, got ${shownValue(vocabularySize)}`;
      throw typeof vocabularySize === 'number' ? new Error(message) : new TypeError(message);
    }
    const hotOk = (h: unknown) => Number.isSafeInteger(h) && (h as number) >= 1;
    if (!(hotOk(hotness) || (Array.isArray(hotness) && hotness.length === 2 && hotness.every(hotOk) && hotness[0] <= hotness[1]))) {
      throw new Error(`${at}.hotness must be an integer >= 1 or [min, max], got ${shownValue(hotness)}`);
    }
    if (typeof alpha !== 'number' || !Number.isFinite(alpha) || alpha < 0) throw new Error(`${at}.alpha must be a number >= 0, got ${shownValue(alpha)}`);
    return { name, vocabularySize: vocabularySize as number, hotness: hotness as number | [number, number], alpha };
  });
}

/** Reads one setting at a time, each error naming the file and the setting. */
class SettingChecker {
  constructor(
    private readonly where: string,
    private readonly given: Record<string, unknown>,
  ) {}

  private fail(key: string, expected: string, value: unknown, wrongType: boolean): never {
    const message = `${this.where}: ${key} must be ${expected}, got ${shownValue(value)}`;
    throw wrongType ? new TypeError(message) : new Error(message);
  }

  oneOf<T extends string>(key: string, allowed: readonly T[]): T | undefined {
    const v = this.given[key];
    if (v === undefined) return undefined;
    if (!allowed.includes(v as T)) this.fail(key, allowed.map((a) => `'${a}'`).join(', '), v, typeof v !== 'string');
    return v as T;
  }

  string(key: string): string | undefined {
    const v = this.given[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v === '') this.fail(key, 'a non-empty string', v, typeof v !== 'string');
    return v;
  }

  integer(key: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
    const v = this.given[key];
    if (v === undefined) return undefined;
    if (!Number.isSafeInteger(v) || (v as number) < min || (v as number) > max) {
      this.fail(key, max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer in [${min}, ${max}]`, v, typeof v !== 'number');
    }
    return v as number;
  }

  positive(key: string): number | undefined {
    const v = this.given[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) this.fail(key, 'a number > 0', v, typeof v !== 'number');
    return v;
  }

  sizes(key: string): number[] | undefined {
    const v = this.given[key];
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.length === 0 || !v.every((u) => Number.isSafeInteger(u) && u >= 1)) this.fail(key, 'a non-empty array of integers >= 1', v, !Array.isArray(v));
    return v as number[];
  }

  globs(key: string): string[] | undefined {
    const v = this.given[key];
    if (v === undefined) return undefined;
    const list = typeof v === 'string' ? [v] : v;
    if (!Array.isArray(list) || list.length === 0 || !list.every((g) => typeof g === 'string' && g !== '')) this.fail(key, 'a glob or a non-empty array of globs', v, !Array.isArray(list));
    return list as string[];
  }

  features(key: string): Record<string, FeatureSpec> | undefined {
    const v = this.given[key];
    if (v === undefined) return undefined;
    if (v === null || typeof v !== 'object' || Array.isArray(v) || Object.keys(v).length === 0) this.fail(key, '{ column: spec } with at least one column', v, true);
    for (const [column, spec] of Object.entries(v as Record<string, unknown>)) {
      const at = `${key}.${column}`;
      if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) this.fail(at, 'a spec object ({ "type": ... })', spec, true);
      const type = (spec as { type?: unknown }).type as FeatureSpec['type'];
      if (typeof type !== 'string' || !Object.hasOwn(FEATURE_KEYS, type)) this.fail(`${at}.type`, "'numeric', 'hashed', 'vocabulary' or 'identity'", type, typeof type !== 'string');
      const known = FEATURE_KEYS[type];
      const normalizer = (spec as { normalizer?: unknown }).normalizer;
      if (type === 'numeric' && normalizer !== undefined && normalizer !== 'log1p' && normalizer !== 'none') this.fail(`${at}.normalizer`, "'log1p' or 'none'", normalizer, typeof normalizer !== 'string');
      for (const option of Object.keys(spec as object)) {
        // emb* options are checked by embeddingColumn, with its names and values.
        if (known.includes(option) || (type !== 'numeric' && option.startsWith('emb') && option !== 'embeddingDim')) continue;
        const meant = closestKey(option, known);
        throw new Error(`${this.where}: ${at}: unknown option '${option}'${meant ? ` (did you mean '${meant}'?)` : ''}; a ${type} feature takes ${known.map((k) => `'${k}'`).join(', ')}${type === 'numeric' ? '' : ' and emb* options'}`);
      }
    }
    return v as Record<string, FeatureSpec>;
  }
}
