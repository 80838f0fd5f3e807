// hb.data: datasets of columnar batches (Parquet, Criteo TSV, synthetic), read and
// decoded on worker threads.
export { Dataset } from './dataset';
export { ListColumn } from './columns';
export type { Batch, Column, Features, NumericColumn } from './columns';
export type { DatasetStats, SourceOptions } from './source';
export type { ParquetOptions } from './parquet_source';
export type { CriteoTsvOptions } from './criteo_tsv_source';
export type { SyntheticOptions, SyntheticTableOptions } from './synthetic_source';
export { plantedLogits } from './synthetic_source';
export { powerLawShare } from './synthetic_model';
export { CRITEO_INTEGER_FIELDS, CRITEO_CATEGORICAL_FIELDS } from './criteo_tsv_reader';
