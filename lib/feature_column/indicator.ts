// indicator_column: multi-hot [batch, numBuckets]; an id seen twice counts 2, and a
// weighted column's weights are summed (TF's scatter_nd). Ids outside the buckets
// add nothing, as TF's one_hot / sparse_slice drop them.
import { native } from '../native';
import { CategoricalColumn, checkCategorical, DenseColumn } from './column';
import { Features } from './feature_input';

export class IndicatorColumn implements DenseColumn {
  readonly keys: readonly string[];
  constructor(readonly categoricalColumn: CategoricalColumn) {
    this.keys = categoricalColumn.keys;
  }

  get name(): string {
    return `${this.categoricalColumn.name}_indicator`;
  }

  get dimension(): number {
    return this.categoricalColumn.numBuckets;
  }

  /** The [rows, numBuckets] multi-hot values. */
  transform(features: Features): Float32Array {
    const ids = this.categoricalColumn.transform(features);
    return native.featureIndicator(`feature column '${this.name}'`, ids.values as BigInt64Array, ids.rowSplits, ids.weights, this.dimension);
  }

  async denseValues(features: Features): Promise<{ values: Float32Array; rows: number }> {
    const values = this.transform(features);
    return { values, rows: values.length / this.dimension };
  }
}

export function indicatorColumn(categoricalColumn: CategoricalColumn): IndicatorColumn {
  const column = checkCategorical(categoricalColumn, 'indicatorColumn', 'categoricalColumn');
  if (!Number.isFinite(column.numBuckets)) throw new Error(`indicatorColumn: column '${column.name}' has no numBuckets (its ids are unbounded)`);
  return new IndicatorColumn(column);
}
