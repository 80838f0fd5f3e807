// hb.nn.embeddingLookupSparse: tf.nn.safe_embedding_lookup_sparse, run natively.
import { native } from '../native';
import { Ragged } from '../tensor/ragged';
import { Tensor } from '../tensor/tensor';
import { checkLookupArguments, Combiner } from './lookup_arguments';
import { shownValue } from '../shown_value';
import { checkOptionKeys } from '../option_keys';

export type { Combiner };

export interface EmbeddingLookupOptions {
  /** Default 'mean'. */
  combiner?: Combiner;
  /** Clip each gathered row to this L2 norm before combining (TF's max_norm). */
  maxNorm?: number;
  /** Names the lookup in error messages; default: the variable's name. */
  name?: string;
}

/**
 * Combines the rows of `params` named by each row of `ids` into one [batch, dim]
 * tensor, on the device that holds `params`. As tf.nn.safe_embedding_lookup_sparse:
 * negative ids are pruned, rows left empty give zeros, and weights <= 0 are pruned
 * unless the combiner is 'sum'. Ids beyond the table, splits that do not add up and
 * NaN weights reject the promise with an Error naming the argument.
 */
export async function embeddingLookupSparse(params: Tensor, ids: Ragged, options: EmbeddingLookupOptions = {}): Promise<Tensor> {
  checkOptionKeys(options, ['combiner', 'maxNorm', 'name'], 'embeddingLookupSparse');
  const { name, combiner } = checkLookupArguments('embeddingLookupSparse', params, ids, options);
  const maxNorm = options.maxNorm;
  if (maxNorm !== undefined && !(typeof maxNorm === 'number' && Number.isFinite(maxNorm) && maxNorm > 0)) {
    const message = `embeddingLookupSparse(${name}): maxNorm must be a finite number > 0, got ${shownValue(maxNorm)}`;
    throw typeof maxNorm === 'number' ? new RangeError(message) : new TypeError(message);
  }
  const handle = await native.embeddingLookupSparse(params.handle, name, ids.values, ids.rowSplits, ids.weights ?? null, combiner, maxNorm ?? 0);
  return new Tensor(handle);
}
