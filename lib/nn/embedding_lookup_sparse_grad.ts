// The gradient of hb.nn.embeddingLookupSparse with respect to the table.
import { native } from '../native';
import { IndexedSlices } from '../tensor/indexed_slices';
import { Ragged } from '../tensor/ragged';
import { Tensor } from '../tensor/tensor';
import { checkLookupArguments, Combiner } from './lookup_arguments';
import { shownValue } from '../shown_value';
import { checkOptionKeys } from '../option_keys';

/**
 * d(sum(output * outputGrad)) / d params for output = embeddingLookupSparse(params, ids,
 * { combiner }): one summed row per distinct id (in order of first appearance), each
 * contribution outputGrad[b] scaled as TF's gradient kernels do, added in the order the
 * ids come. Deterministic. With maxNorm, the gradient goes through TF's clip_by_norm of
 * each row, reading the table as it is when this runs (call it before updating the table).
 */
export async function embeddingLookupSparseGrad(
  params: Tensor,
  ids: Ragged,
  outputGrad: Tensor,
  options: { combiner?: Combiner; maxNorm?: number; name?: string } = {},
): Promise<IndexedSlices> {
  checkOptionKeys(options, ['combiner', 'maxNorm', 'name'], 'embeddingLookupSparseGrad');
  const { name, combiner } = checkLookupArguments('embeddingLookupSparseGrad', params, ids, options);
  if (!(outputGrad instanceof Tensor)) throw new TypeError(`embeddingLookupSparseGrad(${name}): outputGrad must be a tensor`);
  const maxNorm = options.maxNorm;
  if (maxNorm !== undefined && !(typeof maxNorm === 'number' && Number.isFinite(maxNorm) && maxNorm > 0)) {
    const message = `embeddingLookupSparseGrad(${name}): maxNorm must be a finite number > 0, got ${shownValue(maxNorm)}`;
    throw typeof maxNorm === 'number' ? new RangeError(message) : new TypeError(message);
  }
  const result = await native.embeddingLookupSparseGrad(params.handle, name, ids.values, ids.rowSplits, ids.weights ?? null, combiner, outputGrad.handle, maxNorm ?? 0);
  return new IndexedSlices(new Tensor(result.values), result.indices);
}
