// DenseFeatures: the dense columns of a batch side by side, [batch, sum of dimensions],
// columns sorted by name as TF's DenseFeatures layer does.
import { native } from '../native';
import { Tensor, tensor } from '../tensor/tensor';
import { DenseColumn, isCategoricalColumn, isDenseColumn } from './column';
import { Features, readTensorFeatures } from './feature_input';
import { SymbolicTensor } from '../graph/graph';
import { concat } from '../graph/ops/array';
import { symbolicSource } from '../graph/symbolic_features';
import { symbolicColumns } from './symbolic_column';
import { shownValue } from '../shown_value';
import { checkOptionKeys } from '../option_keys';

export interface DenseFeaturesOptions {
  /** HybridBackend's coalescing groups for the embedding lookups; default: each column's embNumGroups. */
  numGroups?: number;
  /** Default true: one [batch, sum of dims] tensor; false: one tensor per column, in sorted order. */
  enableConcat?: boolean;
}

export interface DenseFeaturesLayer<Out> {
  /** On a concrete batch: a promise of the values. On a modelFn's symbolic features: a symbolic tensor. */
  (features: Features): Promise<Out>;
  (features: Record<string, unknown>): SymbolicTensor;
  /** The columns in output order (sorted by name). */
  readonly columns: readonly DenseColumn[];
  readonly numGroups: number;
  readonly enableConcat: boolean;
  /** Width of the concatenated output. */
  readonly dimension: number;
}

function checkColumns(columns: unknown): DenseColumn[] {
  if (!Array.isArray(columns)) throw new TypeError('DenseFeatures: columns must be a non-empty array of dense columns');
  if (columns.length === 0) throw new Error('DenseFeatures: columns must be a non-empty array of dense columns');
  columns.forEach((c, i) => {
    if (!isDenseColumn(c)) {
      const what = isCategoricalColumn(c) ? `categorical column '${c.name}'` : `columns[${i}]`;
      throw new TypeError(`DenseFeatures: ${what} is not a dense column; wrap categorical columns with embeddingColumn or indicatorColumn`);
    }
  });
  const sorted = (columns as DenseColumn[]).slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].name === sorted[i - 1].name) throw new Error(`DenseFeatures: duplicate feature column name '${sorted[i].name}'`);
  }
  return sorted;
}

/**
 * DenseFeatures(columns)(features): on a concrete batch, a promise of the
 * [batch, sum of dimensions] float32 tensor (host memory), or of one tensor per column
 * with enableConcat: false. Tensor features are read first; the lookups of embedding
 * columns run concurrently on their tables' devices.
 */
export function DenseFeatures(columns: readonly DenseColumn[], options?: DenseFeaturesOptions & { enableConcat?: true }): DenseFeaturesLayer<Tensor>;
export function DenseFeatures(columns: readonly DenseColumn[], options: DenseFeaturesOptions & { enableConcat: false }): DenseFeaturesLayer<Tensor[]>;
export function DenseFeatures(columns: readonly DenseColumn[], options: DenseFeaturesOptions = {}): DenseFeaturesLayer<Tensor | Tensor[]> {
  checkOptionKeys(options, ['numGroups', 'enableConcat'], 'DenseFeatures');
  const sorted = checkColumns(columns);
  const enableConcat = options.enableConcat ?? true;
  if (typeof enableConcat !== 'boolean') throw new TypeError('DenseFeatures: enableConcat must be a boolean');
  const groupDefault = Math.max(1, ...sorted.map((c) => (c as { options?: { embNumGroups?: number } }).options?.embNumGroups ?? 1));
  const numGroups = options.numGroups ?? groupDefault;
  if (!Number.isSafeInteger(numGroups) || numGroups < 1) {
    const message = `DenseFeatures: numGroups must be an integer >= 1, got ${shownValue(numGroups)}`;
    throw typeof numGroups === 'number' ? new RangeError(message) : new TypeError(message);
  }

  const eager = async (features: Features): Promise<Tensor | Tensor[]> => {
    const read = await readTensorFeatures(features);
    const parts = await Promise.all(sorted.map((c) => c.denseValues(read)));
    const rows = parts[0].rows;
    parts.forEach((p, i) => {
      if (p.rows !== rows) {
        throw new RangeError(`DenseFeatures: column '${sorted[i].name}' gives ${p.rows} rows but column '${sorted[0].name}' gives ${rows}`);
      }
    });
    if (!enableConcat) return parts.map((p, i) => tensor(p.values, [rows, sorted[i].dimension]));
    const widths = sorted.map((c) => c.dimension);
    const out = native.featureConcatRows(parts.map((p) => p.values), widths, rows);
    return tensor(out, [rows, widths.reduce((a, b) => a + b, 0)]);
  };
  // Inside a modelFn the features are symbolic: the layer adds the columns' feeds,
  // lookups and the concat to the graph and returns a symbolic tensor at once.
  const layer = (features: Features): Promise<Tensor | Tensor[]> | SymbolicTensor | SymbolicTensor[] => {
    const source = symbolicSource(features);
    if (!source) return eager(features);
    const parts = symbolicColumns(sorted, source, numGroups);
    return enableConcat ? concat(parts, 1, 'dense_features/concat') : parts;
  };
  return Object.assign(layer, {
    columns: sorted,
    numGroups,
    enableConcat,
    dimension: sorted.reduce((a, c) => a + c.dimension, 0),
  }) as DenseFeaturesLayer<Tensor | Tensor[]>;
}
