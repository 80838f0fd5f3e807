// tf.data's shuffle, over rows: a buffer of `bufferSize` rows; each incoming row takes
// the place of a uniformly chosen buffered row, which goes out. The buffer is native
// (native/binding/shuffle_buffer_binding.cc): each block is copied into it and its
// displaced rows gathered on the addon's "data" queue, so the JS thread neither copies a
// block nor steps through its rows. The picks are RowRandom's, as they were when this
// loop ran in JS, so a seed gives the order it always gave. Reading its input blocks off
// the JS thread is safe because no view of them reaches the consumer: the shuffle hands
// out only rows it gathered into memory of their own.
import type { Batch, Column } from './batch';
import { batchRows, FlatBatch, flatten, unflatten } from './columns';
import { native } from '../native';
import { columnsOf, describeColumns } from './row_gather';
import { mix } from './synthetic_model';

export async function* shuffleRows(source: AsyncIterable<Batch<Column>>, bufferSize: number, seed: number): AsyncGenerator<Batch<Column>> {
  const buffer = native.shuffleBufferNew(bufferSize, seed >>> 0);
  let layout: FlatBatch | undefined;
  let names: string[] = [];
  let lastRows = 1;
  try {
    for await (const batch of source) {
      const flat = flatten(batch);
      const rows = batchRows(flat);
      if (rows === 0) continue;
      if (layout === undefined) {
        layout = flat;
        names = flat.names.map((n) => n || 'labels');
      } else if (flat.names.length !== layout.names.length || flat.names.some((n, i) => n !== layout!.names[i])) {
        throw new Error(`hb.data: shuffle: blocks have different columns (${layout.names.join(', ')} vs ${flat.names.join(', ')})`);
      }
      lastRows = rows;
      const leaving = await native.shuffleBufferPush(buffer, describeColumns(names, flat.columns));
      if (leaving !== null) yield unflatten(layout, columnsOf(leaving));
    }
    if (layout === undefined) return;
    // Drain: the rest of the buffer in random order, in blocks the size of the input's last.
    for (;;) {
      const rest = await native.shuffleBufferDrain(buffer, lastRows);
      if (rest === null) return;
      yield unflatten(layout, columnsOf(rest));
    }
  } finally {
    native.shuffleBufferRelease(buffer);
  }
}

/** The seed of pass `epoch` of a shuffle seeded with `seed` (each pass differs, every run repeats). */
export function passSeed(seed: number, epoch: number): number {
  return mix(seed >>> 0, epoch);
}
