// hb.estimator.memoryPlan(estimator, sampleBatch): the public face of memory_plan.ts.
import type { Batch } from '../data/batch';
import { Estimator } from './estimator';
import type { MemoryPlan } from './memory_plan';

/**
 * What training `estimator`'s model will hold in memory, per device and per table
 * (parameters, optimizer slots, a dynamic table's hash overhead, the exchange buffers of a
 * step of `sampleBatch`'s size), with each device's free memory, worked out without
 * allocating anything. `plan.problems` lists what will not fit; formatMemoryPlan prints it.
 */
export async function memoryPlan(estimator: Estimator, sampleBatch: Batch): Promise<MemoryPlan> {
  if (!(estimator instanceof Estimator)) throw new TypeError('memoryPlan: estimator must be an hb.estimator.Estimator');
  if (sampleBatch === null || typeof sampleBatch !== 'object' || typeof sampleBatch.features !== 'object' || sampleBatch.features === null) {
    throw new TypeError('memoryPlan: sampleBatch must be a batch { features, labels } (e.g. the first of the input)');
  }
  return estimator.memoryPlan(sampleBatch);
}
