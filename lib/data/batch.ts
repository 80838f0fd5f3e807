// The one batch type: what a dataset yields, what an inputFn returns and what feature
// columns read. Types only, so anything may import it without pulling code in (or
// closing an import cycle).
import type { Ragged } from '../tensor/ragged';
import type { StringColumn } from '../tensor/string_column';
import type { Tensor } from '../tensor/tensor';
import type { ListColumn } from './list_column';

export type NumericColumn = Float32Array | Float64Array | Int32Array | BigInt64Array;

/** What hb.data datasets produce for one field: one entry per row. */
export type Column = NumericColumn | StringColumn | Ragged | ListColumn;

/** Multi-valued string features: row i is values[rowSplits[i] .. rowSplits[i + 1]). */
export interface RaggedStrings {
  values: StringColumn;
  rowSplits: Int32Array;
}

/**
 * One feature of a batch: a dataset's Column, or
 * values a user builds by hand. A ListColumn of strings is read as RaggedStrings.
 */
export type FeatureInput =
  | NumericColumn
  | StringColumn
  | Ragged
  | ListColumn
  | RaggedStrings
  | Tensor
  | ReadonlyArray<string | number | bigint | null | undefined>
  | ReadonlyArray<ReadonlyArray<string | number | bigint>>;

export type Features = Readonly<Record<string, FeatureInput>>;

/**
 * One element of a dataset or an inputFn: features by name and the label(s), all with the
 * same number of rows. `labels` is the labelField column, or one column per name when
 * labelField is a list; absent without labelField. Datasets yield DatasetBatch<F, L>, a
 * Batch<Column> (so a Batch) whose feature map and labels are typed.
 */
export interface Batch<F extends FeatureInput = FeatureInput> {
  features: Readonly<Record<string, F>>;
  labels?: F | Readonly<Record<string, F>>;
}

/** A dataset's features: its columns by name. */
export type ColumnMap = Readonly<Record<string, Column>>;

/** A dataset's labels: the labelField column, one column per name, or none. */
export type DatasetLabels = Column | Readonly<Record<string, Column>> | undefined;

/**
 * One batch of an hb.data.Dataset<F, L>: a Batch whose features are the map F (what each
 * named column is, where the dataset knows it: Dataset.synthetic's I1..In are Float32Arrays
 * and its tables hb.Ragged) and whose labels are L (a Float32Array for a single
 * labelField, a record for several, undefined without labelField).
 */
export interface DatasetBatch<F extends ColumnMap = ColumnMap, L extends DatasetLabels = DatasetLabels> extends Batch<Column> {
  features: F;
  labels: L;
}
