// The features and labels a modelFn sees: symbolic stand-ins shaped like the first
// batch. Numeric features become [batch] / [batch, n] placeholders when read; other
// features (strings, ragged ids) are only reachable through feature columns.
import type { Batch } from '../data/batch';
import { Tensor } from '../tensor/tensor';
import { BATCH, Graph, Shape, SymbolicTensor } from './graph';
import { placeholder } from './ops/sources';

const GRAPH_OF = Symbol('hb.symbolicFeatures');

/** A raw feature that is not numeric: pass it to feature columns (DenseFeatures). */
export class RawFeature {
  constructor(readonly key: string) {}
  toString(): string {
    return `RawFeature('${this.key}')`;
  }
}

export interface SymbolicFeatureSource {
  graph: Graph;
  example: Batch;
}

export function symbolicSource(features: unknown): SymbolicFeatureSource | undefined {
  if (features === null || typeof features !== 'object') return undefined;
  return (features as { [GRAPH_OF]?: SymbolicFeatureSource })[GRAPH_OF];
}

function numericShape(value: unknown): Shape | undefined {
  if (value instanceof Float32Array || value instanceof Float64Array || value instanceof Int32Array) return [BATCH];
  if (value instanceof Tensor && (value.rank === 1 || value.rank === 2) && value.dtype !== 'int64') return value.rank === 1 ? [BATCH] : [BATCH, value.shape[1]];
  return undefined;
}

export async function numericFeed(value: unknown, key: string, width: number): Promise<Float32Array> {
  let data: unknown = value;
  if (value instanceof Tensor) data = await value.data();
  if (data instanceof Float32Array) return data;
  if (data instanceof Float64Array || data instanceof Int32Array) return Float32Array.from(data);
  throw new TypeError(`feature '${key}': expected numbers (${width} per example) like the first batch, got ${value === undefined ? 'nothing' : (value as object).constructor?.name}`);
}

function placeholderFor(graph: Graph, key: string, value: unknown, read: (b: Batch) => unknown, isFeature: boolean): SymbolicTensor | RawFeature {
  const shape = numericShape(value);
  if (!shape) return new RawFeature(key);
  const width = shape.length === 2 ? shape[1] : 1;
  const recipe = isFeature ? { recipe: { kind: 'numeric' as const, key, width } } : {};
  return placeholder(graph, { name: key, dtype: 'float32', shape, build: (b) => numericFeed(read(b), key, width), ...recipe }, key);
}

/** features for modelFn: a getter per key of the example batch, made on first read. */
export function symbolicFeatures(graph: Graph, example: Batch): Record<string, SymbolicTensor | RawFeature> {
  const out: Record<string, SymbolicTensor | RawFeature> = {};
  const made = new Map<string, SymbolicTensor | RawFeature>();
  for (const key of Object.keys(example.features)) {
    Object.defineProperty(out, key, {
      enumerable: true,
      get: () => {
        let t = made.get(key);
        if (!t) {
          t = placeholderFor(graph, key, example.features[key], (b) => {
            const v = b.features[key];
            if (v === undefined) throw new Error(`feature '${key}' is missing from this batch (the first batch had it)`);
            return v;
          }, true);
          made.set(key, t);
        }
        return t;
      },
    });
  }
  Object.defineProperty(out, GRAPH_OF, { value: { graph, example }, enumerable: false });
  return out;
}

/**
 * What an op that needs labels says when the modelFn's labels are undefined: the input's
 * batches carry none, which for a dataset means its labelField was not set.
 */
export function labelsMissing(name: string): TypeError {
  return new TypeError(
    `${name}: labels is undefined: the input's batches have no labels (a dataset gives them when its labelField names a column, ` +
      "e.g. Dataset.fromParquet(files, { labelField: 'label' }); an inputFn gives { features, labels })",
  );
}

/** labels for modelFn: a placeholder (or a record of them) shaped like the example's. */
export function symbolicLabels(graph: Graph, example: Batch): SymbolicTensor | Record<string, SymbolicTensor> | undefined {
  const labels = example.labels;
  if (labels === undefined || labels === null) return undefined;
  const one = (value: unknown, key: string, read: (b: Batch) => unknown): SymbolicTensor => {
    const t = placeholderFor(graph, key, value, read, false);
    if (t instanceof RawFeature) throw new TypeError(`labels${key === 'labels' ? '' : `.${key}`} must be numbers (a Float32Array or a [batch, n] tensor)`);
    return t;
  };
  const missing = (what: string) => {
    throw new Error(`${what} is missing from this batch (the first batch had it)`);
  };
  if (numericShape(labels)) return one(labels, 'labels', (b) => b.labels ?? missing('labels'));
  if (typeof labels === 'object') {
    const out: Record<string, SymbolicTensor> = {};
    for (const key of Object.keys(labels as object)) {
      out[key] = one((labels as Record<string, unknown>)[key], key, (b) => (b.labels as Record<string, unknown> | undefined)?.[key] ?? missing(`labels.${key}`));
    }
    return out;
  }
  throw new TypeError('labels must be a Float32Array, a [batch, n] tensor or a record of them');
}
