// `hb-ts train config.json` with `trainFiles`: the user's Criteo TSV or Parquet files,
// their columns as the config's `features` describe them, one of the ready-made models.
import fg from 'fast-glob';
import * as path from 'path';
import { Dataset } from '../data/dataset';
import type { Batch } from '../data/batch';
import * as fc from '../feature_column';
import { CRITEO_CATEGORICAL_FIELDS, CRITEO_INTEGER_FIELDS } from '../data/criteo_tsv_reader';
import type { ModelFn } from '../estimator/estimator';
import { CategoricalInput, ModelInputs } from '../models/model_inputs';
import { dcnModelFn, deepFMModelFn, dlrmModelFn, wideAndDeepModelFn } from '../models';
import { AdagradOptimizer, AdamOptimizer, FtrlOptimizer, GradientDescentOptimizer } from '../train/optimizers';
import type { Optimizer } from '../train/optimizer';
import type { DataFormat, FeatureSpec, OptimizerName, TrainConfig } from './train_config';

/** The files `globs` name, relative to `baseDir`, in a stable order; none is an error naming the setting. */
export function filesOf(globs: string[], baseDir: string, setting: string, where: string): string[] {
  const files: string[] = [];
  for (const glob of globs) {
    const matched = fg.sync(glob, { cwd: baseDir, absolute: true, onlyFiles: true }).sort();
    if (matched.length === 0) throw new Error(`${where}: ${setting}: no file matches '${glob}' (relative to ${baseDir})`);
    files.push(...matched);
  }
  // Globs that overlap name a file once: an epoch reads each file once.
  return [...new Set(files)];
}

export function formatOf(config: TrainConfig, files: string[]): DataFormat {
  return config.format ?? (files.every((f) => f.endsWith('.parquet')) ? 'parquet' : 'criteo-tsv');
}

/** Criteo's layout when the config describes no features: counts through log(1 + x), categories hashed. */
export function defaultFeatures(format: DataFormat, where: string): Record<string, FeatureSpec> {
  if (format === 'parquet') throw new Error(`${where}: features must be given for Parquet files (which columns, and how each becomes a feature)`);
  return Object.fromEntries([
    ...CRITEO_INTEGER_FIELDS.map((name) => [name, { type: 'numeric', normalizer: 'log1p' }] as const),
    ...CRITEO_CATEGORICAL_FIELDS.map((name) => [name, { type: 'hashed', hashBucketSize: 100_000 }] as const),
  ]);
}

/** The feature columns of `features`, split as the models take them. */
export function modelInputsOf(features: Record<string, FeatureSpec>, config: TrainConfig, where: string): ModelInputs {
  const numeric: fc.NumericColumn[] = [];
  const categorical: CategoricalInput[] = [];
  let transform: 'log1p' | 'none' | undefined;
  for (const [name, spec] of Object.entries(features)) {
    const at = `${where}: features.${name}`;
    try {
      if (spec.type === 'numeric') {
        const normalizer = spec.normalizer ?? 'none';
        // One transform for the numeric block, applied in the graph (no per-value JS).
        if (transform !== undefined && transform !== normalizer) throw new Error(`every numeric feature must use the same normalizer (${transform} and ${normalizer} given)`);
        transform = normalizer;
        numeric.push(fc.numericColumn(name, spec.default === undefined ? {} : { defaultValue: spec.default }));
        continue;
      }
      const { type: _type, embeddingDim, combiner, ...rest } = spec as FeatureSpec & { embeddingDim?: number; combiner?: 'sum' | 'mean' | 'sqrtn' };
      const emb = Object.fromEntries(Object.entries(rest).filter(([k]) => k.startsWith('emb')));
      let column: fc.CategoricalColumn;
      if (spec.type === 'hashed') column = fc.categoricalColumnWithHashBucket(name, spec.hashBucketSize, spec.dtype ?? 'string');
      else if (spec.type === 'identity') column = fc.categoricalColumnWithIdentity(name, spec.numBuckets, spec.defaultValue);
      else {
        const options = { numOovBuckets: spec.numOovBuckets, defaultValue: spec.defaultValue, dtype: spec.dtype };
        for (const k of Object.keys(options) as Array<keyof typeof options>) if (options[k] === undefined) delete options[k];
        if ((spec.vocabulary === undefined) === (spec.vocabularyFile === undefined)) throw new Error('a vocabulary feature takes vocabulary or vocabularyFile (one of them)');
        column = spec.vocabulary !== undefined
          ? fc.categoricalColumnWithVocabularyList(name, spec.vocabulary, options)
          : fc.categoricalColumnWithVocabularyFile(name, path.resolve(config.baseDir, spec.vocabularyFile!), options);
      }
      categorical.push({ column, dimension: embeddingDim, embedding: { ...(combiner ? { combiner } : {}), ...emb } });
    } catch (error) {
      throw new Error(`${at}: ${(error as Error).message}`);
    }
  }
  if (categorical.length === 0) throw new Error(`${where}: features has no categorical feature; the models embed at least one`);
  return { numeric, categorical, embeddingDim: config.embeddingDim, numericTransform: transform === 'log1p' ? 'log1p' : undefined };
}

export function optimizerOf(name: OptimizerName, learningRate: number): () => Optimizer {
  switch (name) {
    case 'adam':
      // Sparse tables update only the rows seen (and a dynamic table needs it).
      return () => new AdamOptimizer({ learningRate, lazy: true });
    case 'sgd':
      return () => new GradientDescentOptimizer({ learningRate });
    case 'ftrl':
      return () => new FtrlOptimizer({ learningRate });
    default:
      return () => new AdagradOptimizer({ learningRate });
  }
}

export function modelFnOf(config: TrainConfig, inputs: ModelInputs): ModelFn {
  const training = { makeOptimizer: optimizerOf(config.optimizer, config.learningRate), seed: config.seed };
  const wide = { ...training, makeWideOptimizer: optimizerOf(config.wideOptimizer, config.wideLearningRate) };
  switch (config.model) {
    case 'wideAndDeep':
      return wideAndDeepModelFn({ inputs, hiddenUnits: config.hiddenUnits, ...wide });
    case 'deepFM':
      return deepFMModelFn({ inputs, hiddenUnits: config.hiddenUnits, ...wide });
    case 'dcn':
      return dcnModelFn({ inputs, crossLayers: config.crossLayers, hiddenUnits: config.hiddenUnits, ...training });
    default:
      return dlrmModelFn({ inputs, bottomMlp: config.bottomMlp, topMlp: config.topMlp, ...training });
  }
}

/** An inputFn over `files`, `epochs` passes (each rank reads its share under a job). */
export function filesInput(files: string[], format: DataFormat, features: Record<string, FeatureSpec>, config: TrainConfig, epochs: number): () => AsyncIterable<Batch> {
  const open = () =>
    format === 'parquet'
      ? Dataset.fromParquet(files, { labelField: config.labelField, fields: Object.keys(features) })
      : Dataset.fromCriteoTsv(files, { labelField: config.labelField });
  return () =>
    (async function* () {
      for (let epoch = 0; epoch < epochs; epoch++) yield* open().batch(config.batchSize).prefetch(2);
    })();
}
