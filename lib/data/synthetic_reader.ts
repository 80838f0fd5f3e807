// Generating Criteo-like rows in a worker, natively (native/data/synthetic_rows.h): each
// row draws from its own generator (seeded by the dataset seed and the row's index), so
// the data depends only on the seed, never on the number of workers, the block size or
// the partitioning. This thread allocates a block's arrays, the addon fills them, and
// they are transferred to the main thread.
import { native } from '../native';
import type { ReadContext } from './reader';
import type { SyntheticSpec } from './synthetic_model';
import type { UnitBase, WireChunk, WireColumn } from './wire';

export interface SyntheticTask extends SyntheticSpec {
  denseNames: string[];
  labelField: string;
  /** Rows per block handed over (a unit may hold many blocks). */
  blockRows: number;
}

export interface SyntheticUnit extends UnitBase {
  firstRow: number;
  rows: number;
}

export async function* readSyntheticUnit(unit: SyntheticUnit, task: SyntheticTask, _context: ReadContext): AsyncGenerator<WireChunk> {
  for (let done = 0; done < unit.rows; done += task.blockRows) {
    yield syntheticBlock(unit.firstRow + done, Math.min(task.blockRows, unit.rows - done), task);
  }
}

/** Rows [firstRow, firstRow + n) as one block. */
function syntheticBlock(firstRow: number, n: number, task: SyntheticTask): WireChunk {
  const tables = task.tables;
  const label = new Float32Array(n);
  const dense = task.denseNames.map(() => new Float32Array(n));
  const splits = tables.map(() => new Int32Array(n + 1));
  const ids = tables.map((t) => new BigInt64Array(n * t.hotness[1]));
  native.syntheticRows({ seed: task.seed, numDense: task.numDense, tables }, firstRow, n, { label, dense, splits, ids });
  const columns: WireColumn[] = [{ kind: 'numeric', values: label }];
  for (const values of dense) columns.push({ kind: 'numeric', values });
  for (let t = 0; t < tables.length; t++) {
    const count = splits[t][n];
    columns.push({ kind: 'ragged', values: count === ids[t].length ? ids[t] : ids[t].slice(0, count), rowSplits: splits[t] });
  }
  return { rows: n, names: [task.labelField, ...task.denseNames, ...tables.map((t) => t.name)], columns };
}
