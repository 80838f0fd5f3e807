// Helpers for the hb.data suites: write a Parquet file, drain a dataset, and view batches
// as plain rows.
import * as fs from 'fs';
import * as arrow from 'apache-arrow';
import * as parquet from 'parquet-wasm/node';
import * as hb from '../../lib';

/** `columns` as a Parquet file at `file` (parquet-wasm), row groups of `rowGroupRows`; returns `file`. */
export function writeParquetFile(file: string, columns: Record<string, arrow.Vector>, rowGroupRows: number, compression?: parquet.Compression): string {
  let properties = new parquet.WriterPropertiesBuilder().setMaxRowGroupSize(rowGroupRows);
  if (compression !== undefined) properties = properties.setCompression(compression);
  const bytes = parquet.writeParquet(parquet.Table.fromIPCStream(arrow.tableToIPC(new arrow.Table(columns), 'stream')), properties.build());
  fs.writeFileSync(file, bytes);
  return file;
}

export async function collect(ds: AsyncIterable<hb.data.Batch<hb.data.Column>>): Promise<hb.data.Batch<hb.data.Column>[]> {
  const out: hb.data.Batch<hb.data.Column>[] = [];
  for await (const b of ds) out.push(b);
  return out;
}

type Cell = number | bigint | string | null | Array<number | bigint | string | null>;

function cell(column: hb.data.Column, i: number): Cell {
  if (column instanceof hb.StringColumn) return column.get(i);
  if (column instanceof hb.Ragged) return Array.from(column.values.subarray(column.rowSplits[i], column.rowSplits[i + 1]) as ArrayLike<number | bigint>);
  if (column instanceof hb.data.ListColumn) return column.toArray()[i];
  return (column as ArrayLike<number | bigint>)[i];
}

/** One object per row: features by name, labels under 'label' (a single label column) or their names. */
export function rowsOf(batches: hb.data.Batch<hb.data.Column>[]): Array<Record<string, Cell>> {
  const rows: Array<Record<string, Cell>> = [];
  for (const b of batches) {
    const columns: Record<string, hb.data.Column> = { ...b.features };
    if (b.labels !== undefined) {
      if (ArrayBuffer.isView(b.labels) || b.labels instanceof hb.StringColumn || b.labels instanceof hb.Ragged || b.labels instanceof hb.data.ListColumn) {
        columns.label = b.labels as hb.data.Column;
      } else Object.assign(columns, b.labels);
    }
    const names = Object.keys(columns);
    const first = columns[names[0]];
    const n = first instanceof hb.Ragged || first instanceof hb.data.ListColumn ? first.nrows : (first as { length: number }).length;
    for (let i = 0; i < n; i++) {
      const row: Record<string, Cell> = {};
      for (const name of names) row[name] = cell(columns[name], i);
      rows.push(row);
    }
  }
  return rows;
}
