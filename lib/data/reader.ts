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
