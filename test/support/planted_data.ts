// The planted-signal data the Estimator tests train on: one synthetic model (one seed),
// split by partition so evaluation is on held-out rows.
import * as hb from '../../lib';

export const numDense = 4;
export const tables = [
  { name: 'user', vocabularySize: 2000, hotness: 1, alpha: 1.05 },
  { name: 'item', vocabularySize: 1000, hotness: [1, 3] as [number, number], alpha: 1.1 },
];

/** Partition 0 trains, partition 1 evaluates. */
export const TRAIN = 0;
export const EVAL = 1;

export function dataset(numSamples: number, partitionIndex: number, batch = 256) {
  return () =>
    hb.data.Dataset.synthetic({ numDense, tables, numSamples: 2 * numSamples, seed: 11, blockRows: 1024, partitionCount: 2, partitionIndex }).batch(batch);
}
