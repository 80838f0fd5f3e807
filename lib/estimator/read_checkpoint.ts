// hb.estimator.readCheckpoint: a checkpoint read whole in this one process, whatever wrote
// it (one process, or a job of any size whose tables were sharded): every variable, table
// and slot with its whole shape, for export and inspection. (loadCheckpoint reads one
// checkpoint file as it was written.)
import { promises as fsp } from 'fs';
import { native } from '../native';
import { CheckpointSource, latestCheckpointSource, openCheckpoint } from '../io/checkpoint_source';
import { CheckpointDType, hostZeros } from '../io/checkpoint_file';

export interface LoadedModelCheckpoint {
  /** The file read: a single checkpoint file, or a job's layout. */
  path: string;
  globalStep: number;
  /** How many ranks wrote it. */
  worldSize: number;
  metadata: Record<string, string>;
  /** Every tensor, whole, by its name (`C1_embedding/embedding_weights`, `dense/kernel/Adagrad`, ...). */
  tensors: Map<string, { name: string; dtype: CheckpointDType; shape: number[]; data: SavedValues }>;
}

type SavedValues = Float32Array | Float64Array | Int32Array | BigInt64Array;


/**
 * Reads the newest usable checkpoint of a model directory (or the checkpoint file or
 * layout given), verified, with sharded tables put together.
 */
export async function readCheckpoint(dirOrFile: string): Promise<LoadedModelCheckpoint> {
  if (typeof dirOrFile !== 'string' || dirOrFile === '') throw new TypeError('readCheckpoint: give a model directory or a checkpoint file');
  const stat = await fsp.stat(dirOrFile).catch(() => undefined);
  if (!stat) throw new Error(`readCheckpoint: ${dirOrFile} does not exist`);
  let source: CheckpointSource;
  if (stat.isDirectory()) {
    const latest = await latestCheckpointSource(dirOrFile);
    if (!latest) throw new Error(`readCheckpoint: ${dirOrFile} holds no checkpoint`);
    source = latest.source;
  } else {
    source = await openCheckpoint(dirOrFile);
  }
  const tensors: LoadedModelCheckpoint['tensors'] = new Map();
  for (const [name, info] of source.entries) {
    const handle = hostZeros(info.dtype, info.shape);
    try {
      await source.read(name, handle);
      const data = (await native.tensorData(handle)) as SavedValues;
      tensors.set(name, { name, dtype: info.dtype, shape: info.shape, data });
    } finally {
      handle.dispose();
    }
  }
  return { path: source.path, globalStep: source.globalStep, worldSize: source.worldSize, metadata: source.metadata, tensors };
}
