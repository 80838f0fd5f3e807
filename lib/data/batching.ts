// Cutting a stream of row blocks into batches of a set size. A batch that lies inside
// one block is a view of it (numeric columns are not copied); one that spans blocks is
// one native call, a copy per array and block (row_gather.ts). That copy runs off the JS
// thread, except where it reads a buffer that a view handed out before also lies in: the
// consumer could transfer or detach that view's buffer while a copy off the thread read
// it, so those are copied before the call returns.
import type { Batch, Column } from './batch';
import { batchRows, columnLength, FlatBatch, flatten, sliceColumn, unflatten } from './columns';
import { concatRowRanges, concatRowRangesOffThread, RowRange } from './row_gather';
import { Ragged } from '../tensor/ragged';
import { StringColumn } from '../tensor/string_column';
import { ListColumn } from './list_column';

// Buffers that some batch op handed out a view of (to the consumer, or to another batch op
// that may hand views of them on). Buffers, not blocks: blocks cut from one source block
// by an upstream batch op are views of one buffer. This rests on every source (Parquet,
// TSV, synthetic) yielding arrays of its own: were a source to yield arrays the user
// holds, its blocks would have to be marked here as they arrive.
const handedOut = new WeakSet<ArrayBufferLike>();

function buffersOf(column: Column): ArrayBufferLike[] {
  if (column instanceof Ragged) return [column.values.buffer, column.rowSplits.buffer, ...(column.weights ? [column.weights.buffer] : [])];
  if (column instanceof ListColumn) return [column.rowSplits.buffer, ...buffersOf(column.values)];
  if (column instanceof StringColumn) return [column.bytes.buffer, column.offsets.buffer, ...(column.valid ? [column.valid.buffer] : [])];
  return [column.buffer];
}

function sameLayout(a: FlatBatch, b: FlatBatch): boolean {
  return a.labelCount === b.labelCount && a.singleLabel === b.singleLabel && a.names.length === b.names.length && a.names.every((n, i) => n === b.names[i]);
}

export async function* rebatchRows(source: AsyncIterable<Batch<Column>>, size: number, dropRemainder: boolean): AsyncGenerator<Batch<Column>> {
  const pending: FlatBatch[] = [];
  let used = 0; // rows of pending[0] already given out
  let available = 0;

  const cut = async (rows: number): Promise<Batch<Column>> => {
    const layout = pending[0];
    const pieces: RowRange[] = [];
    let shared = false;
    let left = rows;
    while (left > 0) {
      const block = pending[0];
      const blockRows = batchRows(block);
      const take = Math.min(left, blockRows - used);
      pieces.push({ columns: block.columns, start: used, count: take });
      shared ||= block.columns.some((c) => buffersOf(c).some((b) => handedOut.has(b)));
      used += take;
      left -= take;
      if (used === blockRows) {
        pending.shift();
        used = 0;
      }
    }
    available -= rows;
    if (pieces.length > 1) {
      const names = layout.names.map((n) => n || 'labels');
      return unflatten(layout, shared ? concatRowRanges(names, pieces) : await concatRowRangesOffThread(names, pieces));
    }
    const [{ columns, start, count }] = pieces;
    for (const c of columns) for (const b of buffersOf(c)) handedOut.add(b);
    return unflatten(layout, count === columnLength(columns[0]) ? columns : columns.map((c) => sliceColumn(c, start, start + count)));
  };

  for await (const batch of source) {
    const flat = flatten(batch);
    const rows = batchRows(flat);
    if (rows === 0) continue;
    if (pending.length > 0 && !sameLayout(pending[0], flat)) {
      throw new Error(`hb.data: batch: blocks have different columns (${pending[0].names.join(', ')} vs ${flat.names.join(', ')})`);
    }
    pending.push(flat);
    available += rows;
    while (available >= size) yield await cut(size);
  }
  if (available > 0 && !dropRemainder) yield await cut(available);
}

export async function* takeElements<T>(source: AsyncIterable<T>, count: number): AsyncGenerator<T> {
  if (count <= 0) return;
  let taken = 0;
  for await (const batch of source) {
    yield batch;
    if (++taken >= count) return;
  }
}
