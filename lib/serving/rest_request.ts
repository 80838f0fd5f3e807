// TensorFlow Serving's REST JSON for one model, in and out: a predict request's body
// (row format `instances` or columnar `inputs`) to the raw feature batch a
// ServableModel takes, its outputs back to `predictions` / `outputs`, and the model's
// signature as the metadata API's signature_def. Pure functions: the HTTP server only
// reads bodies and writes what these return.
import type { FeatureInput, Features } from '../data/batch';
import type { ServingInputSpec, ServingSignature } from './servable';

/** The one signature an hb-ts export has (TF's default signature key). */
export const DEFAULT_SIGNATURE = 'serving_default';

/** The request's JSON cannot be read as a predict request for this model (HTTP 400). */
export class InvalidRequestError extends Error {
  readonly status = 400;
  constructor(message: string) {
    super(message);
    this.name = 'InvalidRequestError';
  }
}

/** Row format (`instances`, one object per example) or columnar (`inputs`, one list per feature). */
export type PredictFormat = 'row' | 'columnar';

export interface PredictRequest {
  format: PredictFormat;
  /** Examples in the request. */
  batchSize: number;
  /** One entry per signature input, in the forms lib/feature_column/feature_input.ts reads. */
  features: Features;
}

type Id = string | number | bigint;
/** Says where a value is, for errors: "instance 3" or "example 3 of inputs". */
type Where = (example: number) => string;

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const DECIMAL_INTEGER = /^-?\d+$/;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function hasOwn(object: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(object, key);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return `a string (${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)})`;
  return `${typeof value === 'number' ? 'the number' : `a ${typeof value}`} ${String(value)}`;
}

function featureNames(signature: ServingSignature): string {
  return signature.inputs.map((input) => `'${input.name}'`).join(', ');
}

/** A request body as JSON: an object, or a 400 saying why not. */
export function parseJsonBody(text: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new InvalidRequestError(`malformed JSON in the request body: ${(error as Error).message}`);
  }
  if (!isPlainObject(body)) throw new InvalidRequestError(`the request body must be a JSON object, got ${describe(body)}`);
  return body;
}

/** A numeric feature's values: `width` float32s per example, none missing. */
function numericBatch(values: readonly unknown[], spec: ServingInputSpec, where: Where): Float32Array {
  const width = spec.width ?? 1;
  const out = new Float32Array(values.length * width);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === undefined || value === null) {
      throw new InvalidRequestError(`${where(i)}: numeric feature '${spec.name}' is missing (it takes ${width === 1 ? 'a number' : `a list of ${width} numbers`})`);
    }
    if (typeof value === 'number' && width === 1) {
      out[i] = value;
    } else if (Array.isArray(value)) {
      if (value.length !== width) {
        throw new InvalidRequestError(`${where(i)}: numeric feature '${spec.name}' has ${value.length} values, it takes ${width}`);
      }
      for (let j = 0; j < width; j++) {
        if (typeof value[j] !== 'number') {
          throw new InvalidRequestError(`${where(i)}: numeric feature '${spec.name}' value ${j} is ${describe(value[j])}, not a number`);
        }
        out[i * width + j] = value[j] as number;
      }
    } else {
      throw new InvalidRequestError(`${where(i)}: numeric feature '${spec.name}' is ${describe(value)}; it takes ${width === 1 ? 'a number' : `a list of ${width} numbers`}`);
    }
  }
  return out;
}

/** One id of a categorical feature, as its dtype reads it (int64 beyond 2^53 comes as a decimal string). */
function idOf(value: unknown, spec: ServingInputSpec, at: () => string): Id {
  switch (spec.dtype) {
    case 'string':
      if (typeof value === 'string') return value;
      throw new InvalidRequestError(`${at()}: categorical feature '${spec.name}' takes strings, got ${describe(value)}`);
    case 'int32':
      if (typeof value === 'number' && Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX) return value;
      throw new InvalidRequestError(`${at()}: categorical feature '${spec.name}' takes int32 integers, got ${describe(value)}`);
    case 'int64':
      if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
      if (typeof value === 'number' && Number.isInteger(value)) {
        // JSON.parse has already rounded it: the id the client meant is lost.
        throw new InvalidRequestError(`${at()}: categorical feature '${spec.name}' value ${value} is beyond 2^53 and lost precision as a JSON number; send int64 ids that large as decimal strings`);
      }
      // At most 20 characters (an int64's digits and sign): BigInt of a longer string could stall the server.
      if (typeof value === 'string' && value.length <= 20 && DECIMAL_INTEGER.test(value)) {
        const id = BigInt(value);
        if (id >= INT64_MIN && id <= INT64_MAX) return id;
        throw new InvalidRequestError(`${at()}: categorical feature '${spec.name}' value ${value} is outside int64`);
      }
      throw new InvalidRequestError(`${at()}: categorical feature '${spec.name}' takes int64 integers (numbers or decimal strings), got ${describe(value)}`);
    default:
      // The signature, not the request, is wrong: the server's fault (500).
      throw new Error(`the model's signature gives categorical feature '${spec.name}' dtype '${spec.dtype}'; categorical features are string, int32 or int64`);
  }
}

function weightOf(value: unknown, spec: ServingInputSpec, at: () => string): number {
  if (typeof value === 'number') return value;
  throw new InvalidRequestError(`${at()}: weight feature '${spec.name}' takes numbers, got ${describe(value)}`);
}

/**
 * A categorical or weights feature, one entry per example: a value, or null when missing.
 * An example with several values (a list) makes every example a list (a value -> [value],
 * missing -> []), since feature columns read a batch as all values or all lists.
 * Weights missing from a batch of single values are 0: their ids are missing too (a missing
 * id drops its weight), and a weight is needed to keep the two features' rows aligned.
 */
function valuesBatch(values: readonly unknown[], spec: ServingInputSpec, where: Where): FeatureInput {
  const read = spec.kind === 'weights' ? weightOf : idOf;
  let anyList = false;
  const entries = values.map((value, i): Id | Id[] | null => {
    if (value === undefined || value === null) return null;
    if (Array.isArray(value)) {
      anyList = true;
      return value.map((item, j) => read(item, spec, () => `${where(i)}: value ${j}`));
    }
    return read(value, spec, () => where(i));
  });
  if (anyList) return entries.map((entry): Id[] => (entry === null ? [] : Array.isArray(entry) ? entry : [entry]));
  // No lists here (anyList is false).
  const scalars = entries as Array<Id | null>;
  return spec.kind === 'weights' ? scalars.map((entry) => entry ?? 0) : scalars;
}

/** One signature input's values for the batch, converted as its kind reads them. */
function featureBatch(values: readonly unknown[], spec: ServingInputSpec, where: Where): FeatureInput {
  switch (spec.kind) {
    case 'numeric':
      return numericBatch(values, spec, where);
    case 'categorical':
    case 'weights':
      return valuesBatch(values, spec, where);
    default:
      throw new Error(`the model's signature gives feature '${(spec as ServingInputSpec).name}' kind '${(spec as ServingInputSpec).kind}'`);
  }
}

function checkBatchSize(batchSize: number, maxBatch: number, what: string): void {
  if (batchSize === 0) throw new InvalidRequestError(`${what} is empty: a predict request needs at least one example`);
  if (batchSize > maxBatch) throw new InvalidRequestError(`${what} has ${batchSize} examples; this server takes at most ${maxBatch} per request`);
}

function rowFeatures(instances: unknown, signature: ServingSignature, maxBatch: number): Features {
  if (!Array.isArray(instances)) throw new InvalidRequestError(`'instances' must be a list with one entry per example, got ${describe(instances)}`);
  checkBatchSize(instances.length, maxBatch, "'instances'");
  // TF's shorthand: with a single input an instance may be that input's value itself.
  const single = signature.inputs.length === 1 ? signature.inputs[0].name : undefined;
  const known = new Set(signature.inputs.map((input) => input.name));
  const rows = instances.map((instance, i) => {
    if (isPlainObject(instance)) {
      for (const key of Object.keys(instance)) {
        if (!known.has(key)) throw new InvalidRequestError(`instance ${i}: unknown feature '${key}' (the model reads ${featureNames(signature)})`);
      }
      return instance;
    }
    if (single !== undefined) return { [single]: instance };
    throw new InvalidRequestError(`instance ${i} must be an object of feature name -> value, got ${describe(instance)}`);
  });
  checkWeightsPaired((name, i) => (hasOwn(rows[i], name) ? rows[i][name] : undefined), rows.length, signature, (i) => `instance ${i}`);
  const features: Record<string, FeatureInput> = {};
  for (const spec of signature.inputs) {
    const values = rows.map((row) => (hasOwn(row, spec.name) ? row[spec.name] : undefined));
    features[spec.name] = featureBatch(values, spec, (i) => `instance ${i}`);
  }
  return features;
}

/**
 * An example with ids needs its weights: a missing weight would be read as 0 and drop
 * its ids silently. (An example without ids may leave its weights out.)
 */
function checkWeightsPaired(valueOf: (name: string, example: number) => unknown, batchSize: number, signature: ServingSignature, where: Where): void {
  for (const spec of signature.inputs) {
    if (spec.kind !== 'weights' || spec.weightsOf === undefined) continue;
    for (let i = 0; i < batchSize; i++) {
      const ids = valueOf(spec.weightsOf, i);
      const weights = valueOf(spec.name, i);
      const hasIds = ids !== undefined && ids !== null && !(Array.isArray(ids) && ids.length === 0);
      if (hasIds && (weights === undefined || weights === null)) {
        throw new InvalidRequestError(`${where(i)}: weight feature '${spec.name}' is missing while '${spec.weightsOf}' has values`);
      }
    }
  }
}

function columnarFeatures(inputs: unknown, signature: ServingSignature, maxBatch: number): { features: Features; batchSize: number } {
  // TF's shorthand: with a single input, `inputs` may be that input's list itself.
  const byName = !isPlainObject(inputs) && signature.inputs.length === 1 ? { [signature.inputs[0].name]: inputs } : inputs;
  if (!isPlainObject(byName)) throw new InvalidRequestError(`'inputs' must be an object of feature name -> list of values per example, got ${describe(inputs)}`);
  const known = new Set(signature.inputs.map((input) => input.name));
  let batchSize: number | undefined;
  let sizedBy = '';
  for (const [key, values] of Object.entries(byName)) {
    if (!known.has(key)) throw new InvalidRequestError(`inputs: unknown feature '${key}' (the model reads ${featureNames(signature)})`);
    if (!Array.isArray(values)) throw new InvalidRequestError(`inputs: feature '${key}' must be a list with one entry per example, got ${describe(values)}`);
    if (batchSize === undefined) {
      batchSize = values.length;
      sizedBy = key;
    } else if (values.length !== batchSize) {
      throw new InvalidRequestError(`inputs: feature '${key}' has ${values.length} examples but feature '${sizedBy}' has ${batchSize}`);
    }
  }
  if (batchSize === undefined) throw new InvalidRequestError(`'inputs' has no features (the model reads ${featureNames(signature)})`);
  checkBatchSize(batchSize, maxBatch, "'inputs'");
  checkWeightsPaired((name, i) => (hasOwn(byName, name) ? (byName[name] as unknown[])[i] : undefined), batchSize, signature, (i) => `inputs: example ${i}`);
  const features: Record<string, FeatureInput> = {};
  for (const spec of signature.inputs) {
    if (!hasOwn(byName, spec.name) && spec.kind === 'numeric') {
      throw new InvalidRequestError(`inputs: numeric feature '${spec.name}' is missing`);
    }
    // An absent categorical or weights feature is missing in every example.
    const values = hasOwn(byName, spec.name) ? (byName[spec.name] as unknown[]) : new Array<undefined>(batchSize).fill(undefined);
    features[spec.name] = featureBatch(values, spec, (i) => `inputs: example ${i}`);
  }
  return { features, batchSize };
}

/**
 * A predict request's body (parsed JSON) as the model's raw feature batch. `maxBatch`
 * bounds the examples of one request.
 */
export function parsePredictRequest(body: Readonly<Record<string, unknown>>, signature: ServingSignature, maxBatch: number): PredictRequest {
  for (const key of Object.keys(body)) {
    if (key !== 'instances' && key !== 'inputs' && key !== 'signature_name') {
      throw new InvalidRequestError(`unknown key '${key}' in the request body (a predict request has 'instances' or 'inputs', and optionally 'signature_name')`);
    }
  }
  if (hasOwn(body, 'signature_name') && body.signature_name !== DEFAULT_SIGNATURE) {
    throw new InvalidRequestError(`signature_name ${describe(body.signature_name)} is not one of this model's; it has '${DEFAULT_SIGNATURE}' only`);
  }
  const hasInstances = hasOwn(body, 'instances');
  const hasInputs = hasOwn(body, 'inputs');
  if (hasInstances && hasInputs) throw new InvalidRequestError(`the request body has both 'instances' and 'inputs'; give one of them`);
  if (hasInstances) {
    const features = rowFeatures(body.instances, signature, maxBatch);
    return { format: 'row', batchSize: (body.instances as unknown[]).length, features };
  }
  if (hasInputs) return { format: 'columnar', ...columnarFeatures(body.inputs, signature, maxBatch) };
  throw new InvalidRequestError(`the request body has neither 'instances' (row format) nor 'inputs' (columnar format)`);
}

/**
 * A float32 as the shortest decimal that reads back as the same float32 (what TF Serving
 * prints): 0.1f is 0.1, not 0.10000000149011612. Non-finite values become JSON null.
 */
export function float32Json(value: number): number {
  if (!Number.isFinite(value)) return value;
  // Six digits cover most float32s; nine always do.
  for (let digits = 6; digits < 9; digits++) {
    const shorter = Number(value.toPrecision(digits));
    if (Math.fround(shorter) === value) return shorter;
  }
  return Number(value.toPrecision(9));
}

function outputValue(values: Float32Array, width: number, example: number): number | number[] {
  if (width === 1) return float32Json(values[example]);
  const row = new Array<number>(width);
  for (let j = 0; j < width; j++) row[j] = float32Json(values[example * width + j]);
  return row;
}

/**
 * predict's outputs as TF Serving answers them: row format `{predictions: [...]}`, one
 * entry per example (the output's value with one output, else an object of outputs);
 * columnar `{outputs: ...}` (the output's list with one output, else an object of lists).
 * A value is a number for a width-1 output, else a list of `width` numbers.
 */
export function predictResponse(
  outputs: Readonly<Record<string, Float32Array>>,
  signature: ServingSignature,
  request: Pick<PredictRequest, 'format' | 'batchSize'>,
): { predictions: unknown[] } | { outputs: unknown } {
  const { batchSize } = request;
  for (const spec of signature.outputs) {
    const values = outputs[spec.name];
    if (values === undefined) throw new Error(`the model gave no output '${spec.name}' (its signature lists it)`);
    if (values.length !== batchSize * spec.width) {
      throw new Error(`the model's output '${spec.name}' has ${values.length} values for ${batchSize} examples of width ${spec.width}`);
    }
  }
  const single = signature.outputs.length === 1 ? signature.outputs[0] : undefined;
  const examples = Array.from({ length: batchSize }, (_, i) => i);
  if (request.format === 'row') {
    if (single) return { predictions: examples.map((i) => outputValue(outputs[single.name], single.width, i)) };
    return {
      predictions: examples.map((i) => {
        const prediction: Record<string, number | number[]> = {};
        for (const spec of signature.outputs) prediction[spec.name] = outputValue(outputs[spec.name], spec.width, i);
        return prediction;
      }),
    };
  }
  if (single) return { outputs: examples.map((i) => outputValue(outputs[single.name], single.width, i)) };
  const columns: Record<string, Array<number | number[]>> = {};
  for (const spec of signature.outputs) columns[spec.name] = examples.map((i) => outputValue(outputs[spec.name], spec.width, i));
  return { outputs: columns };
}

const TF_DTYPES: Record<ServingInputSpec['dtype'], string> = { float32: 'DT_FLOAT', string: 'DT_STRING', int32: 'DT_INT32', int64: 'DT_INT64' };

/** A TensorInfo as TF Serving's metadata JSON writes one (int64 sizes as strings, -1 unknown). */
function tensorInfo(name: string, dtype: ServingInputSpec['dtype'], dims: number[]): object {
  return {
    dtype: TF_DTYPES[dtype],
    tensor_shape: { dim: dims.map((size) => ({ size: String(size), name: '' })), unknown_rank: false },
    name,
  };
}

/**
 * The metadata API's `signature_def` for a signature: numeric inputs and outputs are
 * [batch, width]; categorical and weights inputs [batch, values per example].
 */
export function signatureDefJson(signature: ServingSignature): object {
  const inputs: Record<string, object> = {};
  for (const spec of signature.inputs) {
    inputs[spec.name] = tensorInfo(spec.name, spec.dtype, spec.kind === 'numeric' ? [-1, spec.width ?? 1] : [-1, -1]);
  }
  const outputs: Record<string, object> = {};
  for (const spec of signature.outputs) outputs[spec.name] = tensorInfo(spec.name, spec.dtype, [-1, spec.width]);
  return { signature_def: { [DEFAULT_SIGNATURE]: { inputs, outputs, method_name: 'tensorflow/serving/predict' } } };
}
