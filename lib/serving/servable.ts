// What a loaded export is to the code that serves it (the HTTP server, hb.serving users):
// a model that predicts from raw feature batches and describes its inputs and outputs.
// lib/serving/load_model.ts makes one from an export directory.
import type { Features } from '../data/batch';

/**
 * One raw feature the model reads, by its key in a batch.
 * - numeric: `width` float32 values per example (a Float32Array of batch * width, or
 *   numbers / arrays of `width` numbers per example);
 * - categorical: `dtype` 'string' | 'int32' | 'int64' values, one or several per
 *   example (a list per example, null / [] when missing);
 * - weights: float32 values beside a categorical feature's, one per id.
 */
export interface ServingInputSpec {
  name: string;
  kind: 'numeric' | 'categorical' | 'weights';
  dtype: 'float32' | 'string' | 'int32' | 'int64';
  /** numeric: values per example. */
  width?: number;
  /** weights: the categorical feature whose values they weigh (an example with ids needs its weights). */
  weightsOf?: string;
}

/** One output of predict: `width` float32 values per example. */
export interface ServingOutputSpec {
  name: string;
  dtype: 'float32';
  width: number;
}

export interface ServingSignature {
  inputs: ServingInputSpec[];
  outputs: ServingOutputSpec[];
}

export interface ServableModel {
  /** The export's version: its directory's name (a timestamp in seconds). */
  readonly version: number;
  /** The version directory it was loaded from. */
  readonly directory: string;
  signature(): ServingSignature;
  /**
   * The outputs for a batch of raw features (as training's batches hold them): one
   * Float32Array of batch * width per output. Concurrent calls are micro-batched into
   * one native call. Features that cannot be read (missing, wrong type, ragged lengths
   * that do not add up) reject with a BadInputError naming the feature; anything else
   * that fails is the server's fault.
   */
  predict(features: Features): Promise<Record<string, Float32Array>>;
  /** Waits for the predictions in flight, then frees the model's native memory. */
  close(): Promise<void>;
}

/** The request's features cannot be read: its message names the feature (HTTP 400). */
export class BadInputError extends Error {
  readonly badInput = true;
  constructor(message: string) {
    super(message);
    this.name = 'BadInputError';
  }
}
