// hb.data: datasets of columnar batches (Parquet, Criteo TSV, synthetic), read and
// decoded on worker threads.
export { Dataset } from './dataset';
export { ListColumn } from './list_column';
export type { Batch, Column, ColumnMap, DatasetBatch, DatasetLabels, FeatureInput, Features, NumericColumn } from './batch';
export type { CriteoFeatures, SyntheticFeatures } from './dataset';
export type { DatasetStats, SourceOptions } from './source';
export type { ParquetOptions } from './parquet_source';
export type { CriteoTsvOptions } from './criteo_tsv_source';
export type { SyntheticOptions, SyntheticTableOptions } from './synthetic_source';
export { plantedLogits } from './synthetic_source';
export { powerLawShare } from './synthetic_model';
export { CRITEO_INTEGER_FIELDS, CRITEO_CATEGORICAL_FIELDS } from './criteo_tsv_reader';
