// TF Serving's REST JSON to and from a model's raw feature batch (lib/serving/rest_request.ts):
// row and columnar requests, each input kind's forms (numbers, lists, ids, int64 strings,
// missing values, list promotion, weights), every rejected request naming what is wrong,
// predictions and outputs in TF Serving's shapes, and the metadata signature_def.
import {
  float32Json,
  InvalidRequestError,
  parseJsonBody,
  parsePredictRequest,
  predictResponse,
  signatureDefJson,
} from '../lib/serving/rest_request';
import type { ServingSignature } from '../lib/serving/servable';

const signature: ServingSignature = {
  inputs: [
    { name: 'price', kind: 'numeric', dtype: 'float32', width: 1 },
    { name: 'dense', kind: 'numeric', dtype: 'float32', width: 3 },
    { name: 'city', kind: 'categorical', dtype: 'string' },
    { name: 'item', kind: 'categorical', dtype: 'int64' },
    { name: 'slot', kind: 'categorical', dtype: 'int32' },
    { name: 'item_weight', kind: 'weights', dtype: 'float32' },
  ],
  outputs: [{ name: 'probability', dtype: 'float32', width: 1 }],
};

const rowOf = (overrides: Record<string, unknown> = {}) => ({ price: 1, dense: [1, 2, 3], ...overrides });

function rejection(run: () => unknown): InvalidRequestError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    return error as InvalidRequestError;
  }
  throw new Error('expected an InvalidRequestError, nothing was thrown');
}

describe('parseJsonBody', () => {
  test('an object passes; malformed JSON and non-objects are 400s saying so', () => {
    expect(parseJsonBody('{"instances": []}')).toEqual({ instances: [] });
    expect(rejection(() => parseJsonBody('{"instances": [')).message).toMatch(/^malformed JSON in the request body: /);
    expect(rejection(() => parseJsonBody('[1, 2]')).message).toBe('the request body must be a JSON object, got a list');
    expect(rejection(() => parseJsonBody('null')).message).toBe('the request body must be a JSON object, got null');
    expect(rejection(() => parseJsonBody('')).status).toBe(400);
  });
});

describe('parsePredictRequest: row format', () => {
  test('numeric features become float32 blocks of batch * width', () => {
    const request = parsePredictRequest({ instances: [rowOf({ price: 2.5 }), rowOf({ price: [4], dense: [4, 5, 6] })] }, signature, 10);
    expect(request.format).toBe('row');
    expect(request.batchSize).toBe(2);
    expect(request.features.price).toEqual(new Float32Array([2.5, 4]));
    expect(request.features.dense).toEqual(new Float32Array([1, 2, 3, 4, 5, 6]));
  });

  test('categorical values: one per example, null when missing or null', () => {
    const request = parsePredictRequest(
      { instances: [rowOf({ city: 'paris', item: 7, slot: 1 }), rowOf({ city: null }), rowOf({ city: 'rome', item: '9007199254740993', slot: -2 })] },
      signature,
      10,
    );
    expect(request.features.city).toEqual(['paris', null, 'rome']);
    // int64 beyond 2^53 comes as a decimal string and stays exact, as a bigint.
    expect(request.features.item).toEqual([7, null, 9007199254740993n]);
    expect(request.features.slot).toEqual([1, null, -2]);
    // Weights absent from every example: one 0 per example, aligned with missing ids.
    expect(request.features.item_weight).toEqual([0, 0, 0]);
  });

  test('one example with a list makes every example a list: a value -> [value], missing -> []', () => {
    const request = parsePredictRequest(
      {
        instances: [
          rowOf({ city: ['paris', 'lyon'], item: [1, '2'], item_weight: [0.5, 2] }),
          rowOf({ city: 'rome', item: 3, item_weight: 1 }),
          rowOf({ city: [], item: null }),
        ],
      },
      signature,
      10,
    );
    expect(request.features.city).toEqual([['paris', 'lyon'], ['rome'], []]);
    expect(request.features.item).toEqual([[1, 2n], [3], []]);
    expect(request.features.item_weight).toEqual([[0.5, 2], [1], []]);
    // A feature with no lists keeps one value per example.
    expect(request.features.slot).toEqual([null, null, null]);
  });

  test('a model of one input takes instances that are the value itself', () => {
    const one: ServingSignature = { inputs: [{ name: 'x', kind: 'numeric', dtype: 'float32', width: 2 }], outputs: signature.outputs };
    expect(parsePredictRequest({ instances: [[1, 2], [3, 4]] }, one, 10).features.x).toEqual(new Float32Array([1, 2, 3, 4]));
    expect(parsePredictRequest({ instances: [{ x: [1, 2] }] }, one, 10).features.x).toEqual(new Float32Array([1, 2]));
  });

  test('every malformed request is rejected, naming the feature and the example', () => {
    const cases: Array<[unknown, RegExp | string]> = [
      [{ instances: [rowOf(), { dense: [1, 2, 3] }] }, "instance 1: numeric feature 'price' is missing (it takes a number)"],
      [{ instances: [rowOf({ price: null })] }, "instance 0: numeric feature 'price' is missing (it takes a number)"],
      [{ instances: [rowOf({ price: '3' })] }, `instance 0: numeric feature 'price' is a string ("3"); it takes a number`],
      [{ instances: [rowOf({ dense: [1, 2] })] }, "instance 0: numeric feature 'dense' has 2 values, it takes 3"],
      [{ instances: [rowOf({ dense: 1 })] }, "instance 0: numeric feature 'dense' is the number 1; it takes a list of 3 numbers"],
      [{ instances: [rowOf({ dense: [1, true, 3] })] }, "instance 0: numeric feature 'dense' value 1 is a boolean true, not a number"],
      [{ instances: [rowOf({ city: 5 })] }, "instance 0: categorical feature 'city' takes strings, got the number 5"],
      [{ instances: [rowOf({ city: ['a', ['b']] })] }, "instance 0: value 1: categorical feature 'city' takes strings, got a list"],
      [{ instances: [rowOf({ slot: 2 ** 31 })] }, "instance 0: categorical feature 'slot' takes int32 integers, got the number 2147483648"],
      [{ instances: [rowOf({ slot: 1.5 })] }, "instance 0: categorical feature 'slot' takes int32 integers, got the number 1.5"],
      [{ instances: [rowOf({ item: 2 ** 60 })] }, /^instance 0: categorical feature 'item' value 1152921504606847000 is beyond 2\^53 .* as decimal strings$/],
      [{ instances: [rowOf({ item: '9223372036854775808' })] }, "instance 0: categorical feature 'item' value 9223372036854775808 is outside int64"],
      [{ instances: [rowOf({ item: 'abc' })] }, `instance 0: categorical feature 'item' takes int64 integers (numbers or decimal strings), got a string ("abc")`],
      [{ instances: [rowOf({ item_weight: 'heavy' })] }, `instance 0: weight feature 'item_weight' takes numbers, got a string ("heavy")`],
      [{ instances: [rowOf({ colour: 'red' })] }, "instance 0: unknown feature 'colour' (the model reads 'price', 'dense', 'city', 'item', 'slot', 'item_weight')"],
      [{ instances: [rowOf(), 3] }, 'instance 1 must be an object of feature name -> value, got the number 3'],
      [{ instances: {} }, "'instances' must be a list with one entry per example, got an object"],
      [{ instances: [] }, "'instances' is empty: a predict request needs at least one example"],
      [{ instances: [rowOf(), rowOf(), rowOf(), rowOf()] }, "'instances' has 4 examples; this server takes at most 3 per request"],
      [{ instances: [rowOf()], inputs: {} }, "the request body has both 'instances' and 'inputs'; give one of them"],
      [{}, "the request body has neither 'instances' (row format) nor 'inputs' (columnar format)"],
      [{ instance: [rowOf()] }, /^unknown key 'instance' in the request body/],
      [{ signature_name: 'predict', instances: [rowOf()] }, `signature_name a string ("predict") is not one of this model's; it has 'serving_default' only`],
      // A decimal string longer than any int64 is refused before it is parsed.
      [{ instances: [rowOf({ item: '1'.repeat(5000) })] }, /^instance 0: categorical feature 'item' takes int64 integers \(numbers or decimal strings\), got a string/],
    ];
    for (const [body, message] of cases) {
      const error = rejection(() => parsePredictRequest(body as Record<string, unknown>, signature, 3));
      if (typeof message === 'string') expect(error.message).toBe(message);
      else expect(error.message).toMatch(message);
      expect(error.status).toBe(400);
    }
  });

  test('ids without their weights are refused (they would be read with weight 0), in both formats', () => {
    const paired: ServingSignature = { ...signature, inputs: signature.inputs.map((i) => (i.name === 'item_weight' ? { ...i, weightsOf: 'item' } : i)) };
    const refused = (body: unknown) => rejection(() => parsePredictRequest(body as Record<string, unknown>, paired, 3)).message;
    expect(refused({ instances: [rowOf({ item: 3, item_weight: 0.5 }), rowOf({ item: 4 })] })).toBe("instance 1: weight feature 'item_weight' is missing while 'item' has values");
    expect(refused({ inputs: { price: [1], dense: [[1, 2, 3]], item: [[3, 4]] } })).toBe("inputs: example 0: weight feature 'item_weight' is missing while 'item' has values");
    // An example without ids may leave its weights out.
    expect(() => parsePredictRequest({ instances: [rowOf({ item: 3, item_weight: 0.5 }), rowOf()] }, paired, 3)).not.toThrow();
    expect(() => parsePredictRequest({ instances: [rowOf({ item: [], item_weight: [] }), rowOf({ item: [] })] }, paired, 3)).not.toThrow();
  });

  test("signature_name 'serving_default' is accepted", () => {
    expect(parsePredictRequest({ signature_name: 'serving_default', instances: [rowOf()] }, signature, 3).batchSize).toBe(1);
  });
});

describe('parsePredictRequest: columnar format', () => {
  test('one list per feature; absent categorical features are missing in every example', () => {
    const request = parsePredictRequest({ inputs: { price: [1, 2], dense: [[1, 2, 3], [4, 5, 6]], item: [['5'], 6] } }, signature, 10);
    expect(request).toMatchObject({ format: 'columnar', batchSize: 2 });
    expect(request.features.price).toEqual(new Float32Array([1, 2]));
    expect(request.features.dense).toEqual(new Float32Array([1, 2, 3, 4, 5, 6]));
    expect(request.features.item).toEqual([[5n], [6]]);
    expect(request.features.city).toEqual([null, null]);
  });

  test('a model of one input takes the bare list', () => {
    const one: ServingSignature = { inputs: [{ name: 'tags', kind: 'categorical', dtype: 'string' }], outputs: signature.outputs };
    expect(parsePredictRequest({ inputs: ['a', ['b', 'c']] }, one, 10).features.tags).toEqual([['a'], ['b', 'c']]);
  });

  test('rejections name the feature', () => {
    const cases: Array<[unknown, string]> = [
      [{ inputs: { price: [1, 2], dense: [[1, 2, 3]] } }, "inputs: feature 'dense' has 1 examples but feature 'price' has 2"],
      [{ inputs: { price: 1, dense: [[1, 2, 3]] } }, "inputs: feature 'price' must be a list with one entry per example, got the number 1"],
      [{ inputs: { dense: [[1, 2, 3]] } }, "inputs: numeric feature 'price' is missing"],
      [{ inputs: { price: [1], dense: [[1, 2, 3]], extra: [1] } }, "inputs: unknown feature 'extra' (the model reads 'price', 'dense', 'city', 'item', 'slot', 'item_weight')"],
      [{ inputs: { price: [1], dense: [[1, 2, 3]], city: [7] } }, "inputs: example 0: categorical feature 'city' takes strings, got the number 7"],
      [{ inputs: {} }, "'inputs' has no features (the model reads 'price', 'dense', 'city', 'item', 'slot', 'item_weight')"],
      [{ inputs: [1, 2] }, "'inputs' must be an object of feature name -> list of values per example, got a list"],
      [{ inputs: { price: [1, 2, 3, 4], dense: [[1, 2, 3], [1, 2, 3], [1, 2, 3], [1, 2, 3]] } }, "'inputs' has 4 examples; this server takes at most 3 per request"],
    ];
    for (const [body, message] of cases) expect(rejection(() => parsePredictRequest(body as Record<string, unknown>, signature, 3)).message).toBe(message);
  });
});

describe('predictResponse', () => {
  const two: ServingSignature = {
    inputs: [],
    outputs: [
      { name: 'score', dtype: 'float32', width: 1 },
      { name: 'embedding', dtype: 'float32', width: 2 },
    ],
  };
  const outputs = { score: new Float32Array([0.1, 0.2]), embedding: new Float32Array([1, 2, 3, 4]) };

  test('row format: one object of outputs per example; width 1 as a number, wider as a list', () => {
    expect(predictResponse(outputs, two, { format: 'row', batchSize: 2 })).toEqual({
      predictions: [
        { score: 0.1, embedding: [1, 2] },
        { score: 0.2, embedding: [3, 4] },
      ],
    });
  });

  test('columnar format: one list per output', () => {
    expect(predictResponse(outputs, two, { format: 'columnar', batchSize: 2 })).toEqual({ outputs: { score: [0.1, 0.2], embedding: [[1, 2], [3, 4]] } });
  });

  test('one output: its values bare, in both formats', () => {
    const one: ServingSignature = { inputs: [], outputs: [{ name: 'score', dtype: 'float32', width: 1 }] };
    expect(predictResponse({ score: outputs.score }, one, { format: 'row', batchSize: 2 })).toEqual({ predictions: [0.1, 0.2] });
    expect(predictResponse({ score: outputs.score }, one, { format: 'columnar', batchSize: 2 })).toEqual({ outputs: [0.1, 0.2] });
  });

  test('an output the model did not give, or of the wrong size, is the server fault (not a 400)', () => {
    expect(() => predictResponse({ score: outputs.score }, two, { format: 'row', batchSize: 2 })).toThrow("the model gave no output 'embedding' (its signature lists it)");
    let error: unknown;
    try {
      predictResponse({ ...outputs, embedding: new Float32Array(3) }, two, { format: 'row', batchSize: 2 });
    } catch (e) {
      error = e;
    }
    expect(error).not.toBeInstanceOf(InvalidRequestError);
    expect((error as Error).message).toBe("the model's output 'embedding' has 3 values for 2 examples of width 2");
  });
});

describe('float32Json', () => {
  test('the shortest decimal that is the same float32', () => {
    for (const x of [0.1, 0.2, 1 / 3, 1e-7, 123456.789, 3.4e38, -2.5, 0, 16777217, 1.1754944e-38]) {
      const f = Math.fround(x);
      const printed = float32Json(f);
      expect(Math.fround(printed)).toBe(f);
      expect(String(printed).replace(/^-|e.*$|\./g, '').replace(/^0+/, '').length).toBeLessThanOrEqual(9);
    }
    expect(float32Json(Math.fround(0.1))).toBe(0.1);
    expect(float32Json(Math.fround(1 / 3))).toBe(0.33333334);
    expect(JSON.stringify([float32Json(NaN), float32Json(Infinity)])).toBe('[null,null]');
  });
});

describe('signatureDefJson', () => {
  test("TF Serving's signature_def: dtypes, [batch, width] numerics, [batch, n] categoricals", () => {
    const def = signatureDefJson(signature) as { signature_def: Record<string, { inputs: Record<string, unknown>; outputs: Record<string, unknown>; method_name: string }> };
    const serving = def.signature_def.serving_default;
    expect(serving.method_name).toBe('tensorflow/serving/predict');
    expect(Object.keys(serving.inputs)).toEqual(['price', 'dense', 'city', 'item', 'slot', 'item_weight']);
    expect(serving.inputs.dense).toEqual({
      dtype: 'DT_FLOAT',
      tensor_shape: { dim: [{ size: '-1', name: '' }, { size: '3', name: '' }], unknown_rank: false },
      name: 'dense',
    });
    expect(serving.inputs.item).toMatchObject({ dtype: 'DT_INT64', tensor_shape: { dim: [{ size: '-1' }, { size: '-1' }] } });
    expect(serving.inputs.city).toMatchObject({ dtype: 'DT_STRING' });
    expect(serving.inputs.slot).toMatchObject({ dtype: 'DT_INT32' });
    expect(serving.outputs.probability).toMatchObject({ dtype: 'DT_FLOAT', tensor_shape: { dim: [{ size: '-1' }, { size: '1' }] } });
  });
});

describe('what feature columns read', () => {
  test("every converted categorical, weights and numeric batch is one of feature_input's forms", () => {
    // Loaded here: feature_input needs the addon; the conversions above do not.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { numericValuesOf, rawIdsOf } = require('../lib/feature_column/feature_input') as typeof import('../lib/feature_column/feature_input');
    const request = parsePredictRequest(
      { instances: [rowOf({ city: ['paris', 'lyon'], item: '9007199254740993' }), rowOf({ city: 'rome', item: 3 }), rowOf({ city: null })] },
      signature,
      10,
    );
    const city = rawIdsOf(request.features.city, 'city_column', 'city');
    expect(city).toMatchObject({ kind: 'strings', dense: false, rowSplits: new Int32Array([0, 2, 3, 3]) });
    const item = rawIdsOf(request.features.item, 'item_column', 'item');
    expect(item).toMatchObject({ kind: 'ints', dense: true, values: new BigInt64Array([9007199254740993n, 3n, 0n]), valid: new Uint8Array([1, 1, 0]) });
    expect(numericValuesOf(request.features.dense, 3, 'dense_column', 'dense')).toEqual(new Float32Array([1, 2, 3, 1, 2, 3, 1, 2, 3]));
  });
});
