// The row-wise cuts the pipeline makes on a batch's columns, in JS: slices (views, with
// rebased splits) and typed-array concatenation. Batches across blocks are concatenated
// natively (row_gather.ts).
import { StringColumn } from '../tensor/string_column';
import { Ragged } from '../tensor/ragged';
import type { Batch, Column, NumericColumn } from './batch';
import { ListColumn } from './list_column';

export function columnLength(column: Column): number {
  if (column instanceof Ragged || column instanceof ListColumn) return column.nrows;
  return column.length;
}

function rebasedSplits(splits: Int32Array, start: number, end: number): Int32Array {
  const out = new Int32Array(end - start + 1);
  const base = splits[start];
  for (let i = 0; i <= end - start; i++) out[i] = splits[start + i] - base;
  return out;
}

/** Rows [start, end) of a string column; the bytes stay a view of the column's buffer. */
function sliceStrings(column: StringColumn, start: number, end: number): StringColumn {
  const source = column.offsets;
  const base = source[start];
  const offsets = start === 0 ? source.subarray(0, end + 1) : new Int32Array(end - start + 1);
  if (start !== 0) for (let i = 0, n = end - start; i <= n; i++) offsets[i] = source[start + i] - base;
  return new StringColumn(column.bytes.subarray(base, source[end]), offsets, column.valid?.subarray(start, end));
}

function sliceValues<T extends NumericColumn | StringColumn>(values: T, start: number, end: number): T {
  return (values instanceof StringColumn ? sliceStrings(values, start, end) : values.subarray(start, end)) as T;
}

/** Rows [start, end). Numeric columns are views (no copy). */
export function sliceColumn(column: Column, start: number, end: number): Column {
  if (column instanceof Ragged) {
    const s = column.rowSplits[start];
    const e = column.rowSplits[end];
    return new Ragged(column.values.subarray(s, e), rebasedSplits(column.rowSplits, start, end), column.weights?.subarray(s, e));
  }
  if (column instanceof ListColumn) {
    const s = column.rowSplits[start];
    const e = column.rowSplits[end];
    return new ListColumn(sliceValues(column.values, s, e), rebasedSplits(column.rowSplits, start, end));
  }
  return sliceValues(column, start, end);
}

/** Typed arrays of one kind, one after another (the first's constructor: arrays the addon made pass too). */
export function concatTypedArrays<T extends Float32Array | Float64Array | Int32Array | BigInt64Array>(parts: readonly T[]): T {
  const out = new (parts[0].constructor as new (n: number) => T)(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    (out as Float32Array).set(p as Float32Array, at);
    at += p.length;
  }
  return out;
}

/** Row splits of ragged parts one after another: each part's rebased on the values before it. */
export function concatSplits(splitsList: readonly Int32Array[]): Int32Array {
  let rows = 0;
  for (const s of splitsList) rows += s.length - 1;
  const out = new Int32Array(rows + 1);
  let row = 0;
  let base = 0;
  for (const s of splitsList) {
    for (let i = 1; i < s.length; i++) out[row + i] = base + s[i];
    row += s.length - 1;
    base += s[s.length - 1];
  }
  return out;
}

// A batch as a flat list of named columns, so the pipeline's operations treat features
// and labels alike and rebuild the same shape afterwards.
export interface FlatBatch {
  names: string[];
  columns: Column[];
  /** How many of the leading names are labels, and whether labels was a single column. */
  labelCount: number;
  singleLabel: boolean;
}

export function flatten(batch: Batch<Column>): FlatBatch {
  const names: string[] = [];
  const columns: Column[] = [];
  let singleLabel = false;
  if (batch.labels !== undefined) {
    if (isColumn(batch.labels)) {
      names.push('');
      columns.push(batch.labels);
      singleLabel = true;
    } else {
      for (const [name, column] of Object.entries(batch.labels)) (names.push(name), columns.push(column));
    }
  }
  const labelCount = names.length;
  for (const [name, column] of Object.entries(batch.features)) (names.push(name), columns.push(column));
  return { names, columns, labelCount, singleLabel };
}

export function unflatten(layout: Omit<FlatBatch, 'columns'>, columns: readonly Column[]): Batch<Column> {
  const features: Record<string, Column> = {};
  for (let i = layout.labelCount; i < layout.names.length; i++) features[layout.names[i]] = columns[i];
  if (layout.labelCount === 0) return { features };
  if (layout.singleLabel) return { features, labels: columns[0] };
  const labels: Record<string, Column> = {};
  for (let i = 0; i < layout.labelCount; i++) labels[layout.names[i]] = columns[i];
  return { features, labels };
}

export function isColumn(value: unknown): value is Column {
  return (ArrayBuffer.isView(value) && !(value instanceof DataView)) || value instanceof StringColumn || value instanceof Ragged || value instanceof ListColumn;
}

/** Rows in a batch (its first column's length; 0 for a batch without columns). */
export function batchRows(flat: FlatBatch): number {
  return flat.columns.length === 0 ? 0 : columnLength(flat.columns[0]);
}
