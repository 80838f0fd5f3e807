// The export directory, as exportSavedModel writes it and loadModel reads it:
//
//   <exportDir>/<version>/          version: seconds since the epoch when it was written
//     manifest.json                 format, hb-ts version, the signature, each file's SHA-256
//     graph.json                    the PREDICT plan (lib/graph/plan_spec.ts), its feeds as
//                                   recipes over serialized feature columns, its outputs
//     variables.bin                 the plan's parameters, one after another, little-endian
//                                   (a dynamic table: its live rows, then their int64 ids)
//
// A version directory is written as `.tmp-<version>-<random>` and renamed once every file
// is durable, so a directory named by digits alone is always complete.
import type { PlanSpec } from '../graph/plan_spec';
import type { ColumnConfig } from '../feature_column/column_config';
import type { ServingSignature } from './servable';

export const EXPORT_FORMAT = 'hb-ts-saved-model/1';
export const MANIFEST_FILE = 'manifest.json';
export const GRAPH_FILE = 'graph.json';
export const VARIABLES_FILE = 'variables.bin';

/** How a table's rows are stored: float32 as trained, or halved in size (float16 / bfloat16). */
export type ExportTableDType = 'float32' | 'float16' | 'bfloat16';

/** How one plan feed is made from a raw batch (lib/graph/graph.ts FeedRecipe, serialized). */
export type ExportedRecipe =
  | { kind: 'numeric'; key: string; width: number }
  | { kind: 'column_ids'; part: 'ids' | 'row_splits' | 'weights'; column: ColumnConfig; rawIds: boolean; name: string }
  | { kind: 'column_dense'; column: ColumnConfig };

export interface ExportedFeed {
  name: string;
  dtype: 'float32' | 'int32' | 'int64';
  recipe: ExportedRecipe;
}

export interface ExportedParam {
  /** The variable's (checkpoint) name, or a constant's node name. */
  name: string;
  /** As the plan holds it. */
  dtype: 'float32' | 'float64' | 'int32' | 'int64';
  /** As variables.bin stores it (float16 / bfloat16 for a table exported smaller). */
  storedDtype: 'float32' | 'float64' | 'int32' | 'int64' | 'float16' | 'bfloat16';
  shape: number[];
  /** Byte offset in variables.bin. */
  offset: number;
  bytes: number;
  /**
   * A dynamic table's part: its 'rows' (shape [rows, dim], the ids beside them at
   * idsOffset, int64), or its 'handle' in the plan (no bytes: loadModel makes a native
   * table of those rows and binds it here).
   */
  dynamic?: { role: 'rows' | 'handle'; table: string; idsOffset?: number };
}

export interface ExportedGraph {
  plan: PlanSpec;
  feeds: ExportedFeed[];
  /** Each prediction: its key, the plan value it is, its float32 values per example. */
  outputs: Array<{ name: string; value: number; width: number }>;
  params: ExportedParam[];
}

export interface ExportManifest {
  format: typeof EXPORT_FORMAT;
  hbTsVersion: string;
  version: number;
  createdAt: string;
  /** The global step of the variables exported. */
  globalStep: number;
  /** Where the variables came from: a checkpoint file's name, or 'memory' (no modelDir). */
  source: string;
  tableDtype: ExportTableDType;
  signature: ServingSignature;
  files: Record<string, { sha256: string; bytes: number }>;
}

export const STORED_ITEM_BYTES: Record<ExportedParam['storedDtype'], number> = {
  float32: 4,
  float64: 8,
  int32: 4,
  int64: 8,
  float16: 2,
  bfloat16: 2,
};
