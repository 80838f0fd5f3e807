// What every reader (Parquet, Criteo TSV, synthetic) gives the worker loop.
import type { UnitBase, WireChunk } from './wire';

export interface ReadContext {
  /** Rows left out under skipCorrupted, with why (the message an error would have had). */
  skip(rows: number, why: string): void;
}

export interface Reader<Task, Unit extends UnitBase> {
  /** Per-file facts the main thread needs to cut the work into units (Parquet's row groups). */
  plan?(file: string, task: Task): Promise<unknown>;
  read(unit: Unit, task: Task, context: ReadContext): AsyncIterable<WireChunk>;
}

export type ReaderKind = 'parquet' | 'criteoTsv' | 'synthetic';

/**
 * The code of a reader's Error for a file that ended early (cut while the pass read it);
 * the main thread, which alone knows how many rows the pass had read, adds that count.
 */
export const TRUNCATED = 'ERR_HB_DATA_TRUNCATED';
