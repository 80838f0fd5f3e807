// What a reader worker posts to the main thread: plain objects over typed arrays, so
// postMessage moves the buffers (transfer) instead of cloning values one by one.
// Imports nothing at run time, so the worker does not load the addon or the facade.

export type WireNumeric = Float32Array | Float64Array | Int32Array | BigInt64Array;

export type WireColumn =
  | { kind: 'numeric'; values: WireNumeric }
  | { kind: 'string'; bytes: Uint8Array; offsets: Int32Array; valid?: Uint8Array }
  /** Integer lists: become hb.Ragged. */
  | { kind: 'ragged'; values: BigInt64Array | Int32Array; rowSplits: Int32Array }
  /** Float or string lists: become hb.data.ListColumn. */
  | { kind: 'list'; values: WireColumn; rowSplits: Int32Array };

export interface WireChunk {
  rows: number;
  names: string[];
  columns: WireColumn[];
}

/** The unit of work a worker reads (a Parquet row group, a TSV byte range, a block of synthetic rows). */
export interface UnitBase {
  /** Its place in the dataset's order; chunks are delivered unit by unit in this order. */
  index: number;
}

/** Each ArrayBuffer behind a chunk once (a transfer list must not repeat one). */
export function transferList(chunk: WireChunk): ArrayBuffer[] {
  const seen = new Set<ArrayBuffer>();
  const add = (view: ArrayBufferView | undefined) => {
    if (view !== undefined && view.buffer instanceof ArrayBuffer) seen.add(view.buffer);
  };
  const visit = (c: WireColumn) => {
    switch (c.kind) {
      case 'numeric':
        add(c.values);
        break;
      case 'string':
        add(c.bytes);
        add(c.offsets);
        add(c.valid);
        break;
      case 'ragged':
        add(c.values);
        add(c.rowSplits);
        break;
      case 'list':
        visit(c.values);
        add(c.rowSplits);
        break;
    }
  };
  chunk.columns.forEach(visit);
  return [...seen];
}

function wireRows(column: WireColumn): number {
  switch (column.kind) {
    case 'numeric':
      return column.values.length;
    case 'string':
      return column.offsets.length - 1;
    default:
      return column.rowSplits.length - 1;
  }
}

/**
 * Every column has the chunk's row count. A view of a buffer already moved to the main
 * thread reads as empty, and postMessage drops such a message without a word: this turns
 * that into an error instead of lost rows.
 */
export function checkChunk(chunk: WireChunk): void {
  chunk.columns.forEach((column, i) => {
    const rows = wireRows(column);
    if (rows !== chunk.rows) throw new Error(`hb.data: internal: column '${chunk.names[i]}' has ${rows} rows in a block of ${chunk.rows}`);
  });
}
