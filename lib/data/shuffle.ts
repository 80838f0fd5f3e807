// tf.data's shuffle, over rows: a buffer of `bufferSize` rows; each incoming row takes
// the place of a uniformly chosen buffered row, which goes out. The buffer holds
// references (block, row) into blocks kept in native memory (each block copied there
// once as it arrives), and each outgoing block is one native gather of every column from
// the blocks it references, off the JS thread (row_gather.ts).
import type { Batch, Column } from './batch';
import { batchRows, FlatBatch, flatten, unflatten } from './columns';
import { gatherColumns, releaseRowBlock, RowBlock, rowBlock } from './row_gather';
import { mix, RowRandom } from './synthetic_model';

export async function* shuffleRows(source: AsyncIterable<Batch<Column>>, bufferSize: number, seed: number): AsyncGenerator<Batch<Column>> {
  const random = new RowRandom(seed, 0);
  const pick = (n: number) => Math.floor(random.next() * n);
  const blocks: Array<RowBlock | undefined> = [];
  const references: number[] = []; // live references into each block
  const bufferBlock = new Int32Array(bufferSize);
  const bufferRow = new Int32Array(bufferSize);
  let filled = 0;
  let layout: FlatBatch | undefined;
  let lastRows = 1;

  const emit = async (which: Int32Array, rows: Int32Array): Promise<Batch<Column>> => {
    // Gather from the blocks referenced, renumbered densely.
    const used = new Map<number, number>();
    const dense = new Int32Array(which.length);
    for (let i = 0; i < which.length; i++) {
      let d = used.get(which[i]);
      if (d === undefined) used.set(which[i], (d = used.size));
      dense[i] = d;
    }
    const sources = [...used.keys()].map((b) => blocks[b]!);
    // The native call holds the blocks it reads until it settles: they may leave the buffer now.
    const gathered = gatherColumns(sources, dense, rows);
    for (let i = 0; i < which.length; i++) {
      if (--references[which[i]] === 0) {
        releaseRowBlock(blocks[which[i]]!);
        blocks[which[i]] = undefined;
      }
    }
    return unflatten(layout!, await gathered);
  };

  for await (const batch of source) {
    const flat = flatten(batch);
    const rows = batchRows(flat);
    if (rows === 0) continue;
    layout ??= flat;
    if (flat.names.length !== layout.names.length || flat.names.some((n, i) => n !== layout!.names[i])) {
      throw new Error(`hb.data: shuffle: blocks have different columns (${layout.names.join(', ')} vs ${flat.names.join(', ')})`);
    }
    lastRows = rows;
    const id = blocks.length;
    blocks.push(rowBlock(flat.names.map((n) => n || 'labels'), flat.columns));
    references.push(rows);
    const outBlock: number[] = [];
    const outRow: number[] = [];
    for (let r = 0; r < rows; r++) {
      if (filled < bufferSize) {
        bufferBlock[filled] = id;
        bufferRow[filled] = r;
        filled++;
        continue;
      }
      const slot = pick(bufferSize);
      outBlock.push(bufferBlock[slot]);
      outRow.push(bufferRow[slot]);
      bufferBlock[slot] = id;
      bufferRow[slot] = r;
    }
    if (outBlock.length > 0) yield await emit(Int32Array.from(outBlock), Int32Array.from(outRow));
  }
  // Drain: the rest of the buffer in random order, in blocks the size of the input's.
  for (let i = filled - 1; i > 0; i--) {
    const j = pick(i + 1);
    [bufferBlock[i], bufferBlock[j]] = [bufferBlock[j], bufferBlock[i]];
    [bufferRow[i], bufferRow[j]] = [bufferRow[j], bufferRow[i]];
  }
  for (let start = 0; start < filled; start += lastRows) {
    const end = Math.min(filled, start + lastRows);
    yield await emit(bufferBlock.slice(start, end), bufferRow.slice(start, end));
  }
}

/** The seed of pass `epoch` of a shuffle seeded with `seed` (each pass differs, every run repeats). */
export function passSeed(seed: number, epoch: number): number {
  return mix(seed >>> 0, epoch);
}
