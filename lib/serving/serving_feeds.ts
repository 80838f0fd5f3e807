// An export's feeds rebuilt from their recipes: each plan feed made from a raw feature
// batch by the same feature column transforms training ran (natively, over whole columns),
// and checked against the batch's rows, so requests merged into one run cannot shift each
// other's rows.
import type { Features } from '../data/batch';
import { CategoricalColumn, DenseColumn, FeatureColumn } from '../feature_column/column';
import { columnFromConfig } from '../feature_column/column_config';
import { readTensorFeatures } from '../feature_column/feature_input';
import { batchRows } from '../graph/compiled_step';
import { concatSplits, concatTypedArrays } from '../data/columns';
import { numericFeed } from '../graph/symbolic_features';
import { Ragged } from '../tensor/ragged';
import { dtypeOfTypedArray } from '../tensor/dtype';
import { ExportedFeed } from './export_format';
import { BadInputError } from './servable';

export type FeedValue = Float32Array | BigInt64Array | Int32Array;

/** One request's feeds, in the plan's order, and its rows. */
export interface PreparedRequest {
  rows: number;
  feeds: FeedValue[];
}

export class ServingFeeds {
  private readonly columns: Array<FeatureColumn | undefined>;
  /** Every raw feature key read, with a numeric feature's width (undefined: a column's). */
  private readonly keys = new Map<string, number | undefined>();
  /** For each lookup feed, which transform gives its ids: its column's config, raw or bucketed. */
  private readonly idsKey: string[];

  constructor(readonly specs: readonly ExportedFeed[]) {
    // One column object per distinct config: the ids, row splits and weights of a lookup
    // share one transform per request.
    const byConfig = new Map<string, FeatureColumn>();
    this.columns = specs.map((feed) => {
      if (feed.recipe.kind === 'numeric') return undefined;
      const key = JSON.stringify(feed.recipe.column);
      let column = byConfig.get(key);
      if (!column) {
        column = columnFromConfig(feed.recipe.column);
        if (feed.recipe.kind === 'column_ids' && feed.recipe.rawIds && typeof (column as CategoricalColumn).rawIds !== 'function') {
          throw new Error(`loadModel: feature column '${feed.recipe.name}' keys a dynamic table by raw ids, which column '${column.name}' does not give`);
        }
        byConfig.set(key, column);
      }
      return column;
    });
    this.idsKey = specs.map((spec) => (spec.recipe.kind === 'column_ids' ? `${spec.recipe.rawIds ? 'raw' : 'buckets'}:${JSON.stringify(spec.recipe.column)}` : ''));
    specs.forEach((spec, i) => {
      if (spec.recipe.kind === 'numeric') this.keys.set(spec.recipe.key, spec.recipe.width);
      else for (const k of (this.columns[i] as FeatureColumn).keys) if (!this.keys.has(k)) this.keys.set(k, undefined);
    });
  }

  /** The feeds of one request. Anything wrong with its features is a BadInputError naming them. */
  async prepare(features: Features): Promise<PreparedRequest> {
    if (features === null || typeof features !== 'object' || Array.isArray(features)) {
      throw new BadInputError('features must be an object of feature name -> values');
    }
    // Feeds already under way when a later one throws: their own failures are this
    // request's too, and must not surface as unhandled rejections (which end the process).
    const underWay: Array<Promise<FeedValue>> = [];
    try {
      const read = await readTensorFeatures(features);
      const rows = this.agreedRows(features);
      // By column and by which ids it gives: one column can feed a fixed table (its buckets)
      // and a dynamic one (its raw ids).
      const ragged = new Map<string, Ragged>();
      // Synchronous where the values are at hand (a request of one row is mostly this
      // bookkeeping); tensors and dense columns are awaited.
      const feeds: Array<FeedValue | Promise<FeedValue>> = this.specs.map((spec, i) => {
        const feed = this.feedOf(spec, i, features, read, rows, ragged);
        if (feed instanceof Promise) underWay.push(feed);
        return feed;
      });
      return { rows, feeds: underWay.length > 0 ? await Promise.all(feeds) : (feeds as FeedValue[]) };
    } catch (error) {
      for (const feed of underWay) feed.catch(() => undefined);
      throw error instanceof BadInputError ? error : new BadInputError((error as Error)?.message ?? String(error));
    }
  }

  /** One feed of a request: its values at hand, or a promise of them (tensors, dense columns). */
  private feedOf(spec: ExportedFeed, i: number, features: Features, read: Features, rows: number, ragged: Map<string, Ragged>): FeedValue | Promise<FeedValue> {
    const recipe = spec.recipe;
    if (recipe.kind === 'numeric') {
      const raw = (features as Record<string, unknown>)[recipe.key];
      if (!Object.prototype.hasOwnProperty.call(features, recipe.key) || raw === undefined) {
        throw new Error(`feature '${recipe.key}' is missing (it has ${Object.keys(features).map((k) => `'${k}'`).join(', ') || 'no features'})`);
      }
      const checked = (values: Float32Array) => {
        if (values.length !== rows * recipe.width) throw new Error(`feature '${recipe.key}': ${values.length} values for ${rows} examples of ${recipe.width}`);
        return values;
      };
      if (dtypeOfTypedArray(raw) === 'float32') return checked(raw as Float32Array);
      return Array.isArray(raw) ? checked(numbersOf(raw, recipe.key, recipe.width)) : numericFeed(raw, recipe.key, recipe.width).then(checked);
    }
    const column = this.columns[i] as FeatureColumn;
    if (recipe.kind === 'column_dense') {
      return (column as DenseColumn).denseValues(read).then(({ values, rows: got }) => {
        if (got !== rows) throw new Error(`feature column '${column.name}': ${got} examples, the batch has ${rows}`);
        return values;
      });
    }
    let ids = ragged.get(this.idsKey[i]);
    if (!ids) {
      // A dynamic table is keyed by the raw ids (a hash column's whole Fingerprint64).
      const categorical = column as CategoricalColumn;
      ids = recipe.rawIds ? (categorical.rawIds as (f: Features) => Ragged).call(categorical, read) : categorical.transform(read);
      ragged.set(this.idsKey[i], ids);
    }
    if (ids.nrows !== rows) throw new Error(`feature column '${recipe.name}': ${ids.nrows} examples, the batch has ${rows}`);
    if (recipe.part === 'ids') return ids.values as FeedValue;
    if (recipe.part === 'row_splits') return ids.rowSplits;
    if (!ids.weights) throw new Error(`feature column '${recipe.name}': no weights in this batch`);
    return ids.weights;
  }

  /**
   * The batch's number of examples, as every feature the model reads gives it; features
   * that disagree are named with their counts (blaming whichever was read first would
   * mislead).
   */
  private agreedRows(features: Features): number {
    let rows = -1;
    let disagree = false;
    const counts: Array<[string, number]> = [];
    for (const [key, width] of this.keys) {
      const value = (features as Record<string, unknown>)[key];
      if (value === undefined || value === null) continue; // the column says it is missing
      const n = rowsOf(key, value, width);
      if (n === undefined) continue; // not a batch at all: the column's transform names it
      counts.push([key, n]);
      if (rows < 0) rows = n;
      else if (n !== rows) disagree = true;
    }
    if (disagree) throw new BadInputError(`the features disagree on the number of examples: ${counts.map(([k, n]) => `'${k}' has ${n}`).join(', ')}`);
    return rows >= 0 ? rows : batchRows({ features });
  }

  /**
   * Requests merged into one batch, rows after rows: dense feeds and ids appended, each
   * request's row splits rebased on the ids before it (a pass over its rows, not its ids).
   */
  merge(requests: readonly PreparedRequest[]): PreparedRequest {
    if (requests.length === 1) return requests[0];
    const rows = requests.reduce((n, r) => n + r.rows, 0);
    const feeds = this.specs.map((spec, i): FeedValue => {
      const parts = requests.map((r) => r.feeds[i]);
      if (spec.recipe.kind === 'column_ids' && spec.recipe.part === 'row_splits') return concatSplits(parts as Int32Array[]);
      return concatTypedArrays(parts);
    });
    return { rows, feeds };
  }
}

/** A numeric feature given as plain numbers, or an array of `width` numbers per example. */
function numbersOf(values: unknown[], key: string, width: number): Float32Array {
  values.forEach((v, i) => {
    const got = Array.isArray(v) ? v.length : 1;
    if (got !== width) throw new RangeError(`feature '${key}': example ${i} has ${got} values; the model reads ${width}`);
  });
  const flat = values.flat();
  if (!flat.every((v) => typeof v === 'number')) throw new TypeError(`feature '${key}': expected numbers, got ${flat.map((v) => typeof v).find((t) => t !== 'number')}`);
  return Float32Array.from(flat as number[]);
}

/** Examples in one feature's value: a numeric feature's values over its width, else its rows. */
function rowsOf(key: string, value: unknown, width: number | undefined): number | undefined {
  if (width !== undefined && ArrayBuffer.isView(value)) {
    const n = (value as unknown as ArrayLike<number>).length;
    if (n % width !== 0) throw new BadInputError(`feature '${key}': ${n} values are not whole examples of ${width}`);
    return n / width;
  }
  if (Array.isArray(value)) return value.length;
  try {
    return batchRows({ features: { value } as Features });
  } catch {
    return undefined;
  }
}
