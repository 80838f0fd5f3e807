// Issue 14: one rule for error classes, TensorFlow's. A TypeError when the argument is not
// the kind of thing the parameter takes (JS type, class, typed-array kind, dtype); an
// Error (a RangeError for numbers out of range) when it is, but its value is wrong.
// Errors made by the addon come from another realm inside jest, so these compare
// `name` (and `code`), never `instanceof`.
import * as hb from '../lib';
import { native } from '../lib/native';

const fc = hb.featureColumn;

type Caught = Error & { code?: string };

async function errorOf(run: () => unknown): Promise<Caught> {
  try {
    await run();
  } catch (error) {
    return error as Caught;
  }
  throw new Error('expected an error');
}

async function expectClass(run: () => unknown, name: 'TypeError' | 'Error' | 'RangeError', message: RegExp): Promise<Caught> {
  const error = await errorOf(run);
  expect(error.message).toMatch(message);
  expect(error.name).toBe(name);
  return error;
}

const synthetic = (options: Record<string, unknown>) => () =>
  hb.data.Dataset.synthetic({ numDense: 1, tables: [{ name: 'C1', vocabularySize: 10 }], numSamples: 8, ...options } as never);

describe('TypeError: the argument is not the kind of thing the parameter takes', () => {
  test('a string where tensor values go', async () => {
    await expectClass(() => hb.tensor('x' as never), 'TypeError', /tensor: values must be a typed array/);
  });

  test('IndexedSlices indices as a Float32Array', async () => {
    const values = hb.tensor(new Float32Array(4), [2, 2]);
    await expectClass(() => new hb.IndexedSlices(values, new Float32Array([0, 1]) as never), 'TypeError', /IndexedSlices: indices must be a BigInt64Array or Int32Array, got float32/);
  });

  test('a dtype that does not match the values', async () => {
    await expectClass(() => hb.tensor(new Float32Array(2), undefined, 'int32'), 'TypeError', /dtype 'int32' does not match the float32 values/);
  });

  test('a fraction where an integer dtype goes', async () => {
    await expectClass(() => hb.tensor([1.5], undefined, 'int32'), 'TypeError', /\[0\] = 1.5 is not an int32/);
  });

  test('a number where a feature key goes', async () => {
    await expectClass(() => fc.categoricalColumnWithIdentity(5 as never, 3), 'TypeError', /key must be a non-empty string/);
  });

  test('a number as the combiner', async () => {
    const col = fc.categoricalColumnWithIdentity('a', 3);
    await expectClass(() => fc.embeddingColumn(col, 2, { combiner: 5 as never }), 'TypeError', /combiner must be 'sum', 'mean' or 'sqrtn', got 5/);
  });

  test('an unsupported embDtype (a dtype fault)', async () => {
    const col = fc.categoricalColumnWithIdentity('a', 3);
    await expectClass(() => fc.embeddingColumn(col, 2, { embDtype: 'int32' as never }), 'TypeError', /embDtype must be float32, float16, bfloat16/);
  });

  test('a string where a count goes', async () => {
    await expectClass(synthetic({ numSamples: '8' }), 'TypeError', /numSamples must be a non-negative integer/);
    await expectClass(() => new hb.train.AdamOptimizer({ learningRate: '0.1' as never }), 'TypeError', /learningRate must be a finite number >= 0, got "0\.1" \(a string\)/);
    await expectClass(() => new hb.estimator.RunConfig({ saveCheckpointsSteps: '5' as never }), 'TypeError', /saveCheckpointsSteps must be an integer >= 0, got "5" \(a string\)/);
    await expectClass(() => hb.initializers.truncatedNormal({ stddev: [1] as never }), 'TypeError', /stddev must be a finite number, got \[1\] \(an array\)/);
  });

  test('a concrete tensor where a symbolic one goes, outside a modelFn too', async () => {
    await expectClass(() => hb.math.exp(hb.tensor([1]) as never), 'TypeError', /symbolic ops run inside a modelFn/);
  });

  test('native: a tensor of another dtype assigned to a variable', async () => {
    const v = hb.variable([1, 2]);
    const error = await expectClass(() => v.assign(hb.tensor(new Int32Array([1, 2]))), 'TypeError', /assign: value is int32/);
    expect(error.code).toBe('HB_ERR_TYPE');
  });

  test('native: values that cannot be hashed', async () => {
    expect((await expectClass(() => hb.strings.fingerprint64([{}] as never), 'TypeError', /values\[0\] must be a string, an integer or a bigint/)).code).toBe('HB_ERR_TYPE');
    expect((await expectClass(() => hb.strings.fingerprint64(['a', 1.5]), 'TypeError', /values\[1\] = 1.5 is not an integer/)).code).toBe('HB_ERR_TYPE');
  });
});

describe('Error: the right kind of argument with a wrong value', () => {
  test("an unknown combiner name ('max': TF's ValueError)", async () => {
    const col = fc.categoricalColumnWithIdentity('a', 3);
    await expectClass(() => fc.embeddingColumn(col, 2, { combiner: 'max' as never }), 'Error', /combiner must be 'sum', 'mean' or 'sqrtn', got "max"/);
  });

  test('a negative count is a RangeError', async () => {
    await expectClass(synthetic({ numSamples: -1 }), 'RangeError', /numSamples must be a non-negative integer/);
    await expectClass(() => new hb.train.AdamOptimizer({ beta1: 1 }), 'RangeError', /beta1 must be in \[0, 1\)/);
  });

  test('native: a shape that does not fit the values', async () => {
    const error = await expectClass(() => hb.tensor([1, 2, 3], [2, 2]), 'Error', /shape \[2, 2\] holds 4 values but values has 3/);
    expect(error.code).toBe('HB_ERR_INVALID_ARGUMENT');
  });

  test('native: a shape dimension that is a number but no count', async () => {
    await expectClass(() => hb.tensor([1, 2], [2.5]), 'Error', /shape\[0\] must be a non-negative integer/);
  });

  test('an unknown option key', async () => {
    const col = fc.categoricalColumnWithIdentity('a', 3);
    await expectClass(() => fc.embeddingColumn(col, 2, { embDevcie: 'cpu' } as never), 'Error', /unknown embedding option 'embDevcie'/);
  });

  test('an empty array where a non-empty one goes', async () => {
    await expectClass(() => fc.sharedEmbeddingColumns([], 2), 'Error', /categoricalColumns must be a non-empty array/);
  });

  test('a feature missing from the batch', async () => {
    await expectClass(() => fc.categoricalColumnWithIdentity('a', 3).transform({ b: [1] }), 'Error', /feature 'a' is missing from the batch/);
  });

  test('a categorical column crossing cannot use', async () => {
    const hashed = fc.categoricalColumnWithHashBucket('h', 10);
    await expectClass(() => fc.crossedColumn(['a', hashed], 10), 'Error', /is a categoricalColumnWithHashBucket, which is not supported for crossing/);
  });

  test('a loss on an input without labels says labelField was not set', async () => {
    const modelFn = ((features: Record<string, unknown>, labels: unknown, mode: hb.estimator.Mode) => {
      const logits = hb.layers.dense(fc.DenseFeatures([fc.numericColumn('x')])(features) as hb.SymbolicTensor, 1);
      return hb.estimator.EstimatorSpec({ mode, loss: hb.losses.sigmoidCrossEntropy(labels as hb.SymbolicTensor, logits) });
    }) as hb.estimator.ModelFn;
    const estimator = new hb.estimator.Estimator({ modelFn, config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false }) });
    const inputFn = () => [{ features: { x: Float32Array.of(1, 2) } }];
    await expectClass(() => estimator.train(inputFn as never, { maxSteps: 1 }), 'TypeError', /labels is undefined: the input's batches have no labels.*labelField/);
  });

  test('two embedding columns of one categorical column with different dimensions are refused, not silently one table', async () => {
    const user = fc.categoricalColumnWithIdentity('user', 10);
    const wide = fc.embeddingColumn(user, 1);
    const deep = fc.embeddingColumn(user, 4);
    const modelFn = ((features: Record<string, unknown>, labels: unknown, mode: hb.estimator.Mode) => {
      const x = hb.math.concat([fc.DenseFeatures([wide])(features) as hb.SymbolicTensor, fc.DenseFeatures([deep])(features) as hb.SymbolicTensor], 1);
      const loss = hb.losses.sigmoidCrossEntropy(labels as hb.SymbolicTensor, hb.layers.dense(x, 1));
      return hb.estimator.EstimatorSpec({ mode, loss, trainOp: new hb.train.AdagradOptimizer({ learningRate: 0.1 }).minimize(loss) });
    }) as hb.estimator.ModelFn;
    const estimator = new hb.estimator.Estimator({ modelFn, config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false }) });
    const inputFn = () => [{ features: { user: BigInt64Array.of(1n, 2n) }, labels: Float32Array.of(0, 1) }];
    await expectClass(() => estimator.train(inputFn, { maxSteps: 1 }), 'Error', /two embedding tables are named 'user_embedding\/embedding_weights' in one model, \[10,1\] and \[10,4\]/);
  });

  test('an unknown name among allowed strings', async () => {
    await expectClass(() => hb.metrics.auc([1, 0], [0.5, 0.5], { curve: 'XY' as never }), 'Error', /curve must be 'ROC' or 'PR', got "XY"/);
  });

  test('an unknown combiner in the lookup, in the facade and in the addon', async () => {
    const params = hb.variable([[1, 2], [3, 4]], { name: 'error_classes_table' });
    const ids = hb.ragged([[0], [1]]);
    await expectClass(() => hb.nn.embeddingLookupSparse(params, ids, { combiner: 'max' as never }), 'Error', /combiner must be 'sum', 'mean' or 'sqrtn'/);
    const lookup = (combiner: unknown) => () => native.embeddingLookupSparse(params.handle, 't', ids.values, ids.rowSplits, null, combiner as never, 0);
    expect((await expectClass(lookup('max'), 'Error', /t\): combiner must be 'sum', 'mean' or 'sqrtn'/)).code).toBe('HB_ERR_INVALID_ARGUMENT');
    expect((await expectClass(lookup(1), 'TypeError', /t\): combiner must be 'sum', 'mean' or 'sqrtn'/)).code).toBe('HB_ERR_TYPE');
  });

  test('native: numBuckets of 0', async () => {
    const error = await expectClass(() => hb.strings.toHashBucketFast(['a'], 0), 'Error', /numBuckets must be a positive integer/);
    expect(error.code).toBe('HB_ERR_INVALID_ARGUMENT');
  });
});
