// Options objects refuse keys they do not know, saying which was likely meant: from
// plain JavaScript a misspelt key would otherwise be ignored and a default used.
import * as hb from '../lib';

describe('unknown option keys', () => {
  test.each([
    ['RunConfig', () => new hb.estimator.RunConfig({ saveCheckpointSteps: 5 } as never), "RunConfig: unknown option 'saveCheckpointSteps' (did you mean 'saveCheckpointsSteps'?)"],
    ['TrainSpec', () => new hb.estimator.TrainSpec({ inputFn: () => [], max_steps: 3 } as never), "TrainSpec: unknown option 'max_steps' (did you mean 'maxSteps'?)"],
    ['EvalSpec', () => new hb.estimator.EvalSpec({ inputFn: () => [], step: 3 } as never), "EvalSpec: unknown option 'step' (did you mean 'steps'?)"],
    ['Estimator', () => new hb.estimator.Estimator({ modelFn: () => undefined, model_dir: '/tmp/x' } as never), "Estimator: unknown option 'model_dir' (did you mean 'modelDir'?)"],
    ['fromParquet', () => hb.data.Dataset.fromParquet('x.parquet', { labelFeild: 'y' } as never), "Dataset.fromParquet: unknown option 'labelFeild' (did you mean 'labelField'?)"],
    ['fromCriteoTsv', () => hb.data.Dataset.fromCriteoTsv('x.tsv', { skipCorupted: true } as never), "Dataset.fromCriteoTsv: unknown option 'skipCorupted' (did you mean 'skipCorrupted'?)"],
    ['synthetic', () => hb.data.Dataset.synthetic({ tables: [], numSamples: 1, num_dense: 3 } as never), "Dataset.synthetic: unknown option 'num_dense' (did you mean 'numDense'?)"],
    ['AdamOptimizer', () => new hb.train.AdamOptimizer({ learning_rate: 0.1 } as never), "AdamOptimizer: unknown option 'learning_rate' (did you mean 'learningRate'?)"],
    ['FtrlOptimizer', () => new hb.train.FtrlOptimizer({ learningRate: 0.1, l1: 0.1 } as never), "FtrlOptimizer: unknown option 'l1'"],
    ['numericColumn', () => hb.featureColumn.numericColumn('a', { shap: [2] } as never), "numericColumn: unknown option 'shap' (did you mean 'shape'?)"],
    ['categoricalColumnWithVocabularyList', () => hb.featureColumn.categoricalColumnWithVocabularyList('a', ['x'], { numOovBucket: 1 } as never), "unknown option 'numOovBucket' (did you mean 'numOovBuckets'?)"],
    ['variable', () => hb.variable([1], { nam: 'v' } as never), "variable: unknown option 'nam' (did you mean 'name'?)"],
    ['truncatedNormal', () => hb.initializers.truncatedNormal({ stdev: 1 } as never), "initializers.truncatedNormal: unknown option 'stdev' (did you mean 'stddev'?)"],
    ['randomUniform', () => hb.initializers.randomUniform({ max_val: 1 } as never), "initializers.randomUniform: unknown option 'max_val' (did you mean 'maxval'?)"],
    ['metrics.auc', () => hb.metrics.auc([1, 0], [0.5, 0.5], { num_thresholds: 10 } as never), "metrics.auc: unknown option 'num_thresholds' (did you mean 'numThresholds'?)"],
    ['embeddingColumn', () => hb.featureColumn.embeddingColumn(hb.featureColumn.categoricalColumnWithIdentity('a', 3), 2, { combinr: 'sum' } as never), "embeddingColumn: unknown embedding option 'combinr' (did you mean 'combiner'?); it takes 'combiner', 'initializer'"],
  ])('%s', (_, make, message) => {
    expect(make).toThrow(message);
  });

  test('the message lists every option, and keys nothing is close to get no guess', () => {
    expect(() => new hb.train.AdagradOptimizer({ learningRate: 0.1, foo: 1 } as never)).toThrow(
      "AdagradOptimizer: unknown option 'foo'; it takes 'learningRate', 'initialAccumulatorValue', 'name'",
    );
  });

  test('embeddingLookupSparse (a promise that rejects)', async () => {
    await expect(hb.nn.embeddingLookupSparse(hb.variable([[1]]), hb.ragged([[0]]), { combinr: 'sum' } as never)).rejects.toThrow("embeddingLookupSparse: unknown option 'combinr' (did you mean 'combiner'?)");
  });

  test('distribute.init', async () => {
    await expect(hb.distribute.init({ timeout: 5 } as never)).rejects.toThrow("distribute.init: unknown option 'timeout' (did you mean 'timeoutMs'?)");
  });
});
