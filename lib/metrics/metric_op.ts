// A streaming metric: accumulators in native memory that every evaluation batch adds
// to (one accumulate step in the compiled eval plan), and the formula that turns them
// into the reported value, as tf.metrics' (value, update_op) pairs.
import { Node } from '../graph/graph';
import { tensor } from '../tensor/tensor';
import { Variable } from '../tensor/variable';

export class MetricOp {
  /** @internal */
  constructor(
    readonly name: string,
    /** @internal The accumulate nodes the eval plan runs each batch. */
    readonly nodes: Node[],
    /** @internal */ readonly accumulators: Variable[],
    private readonly formula: (values: Float32Array[]) => number,
  ) {}

  /** Zeroes the accumulators (the Estimator does it before each evaluation). */
  async reset(): Promise<void> {
    await Promise.all(this.accumulators.map((v) => v.assign(tensor(new Float32Array(v.size), [...v.shape]))));
  }

  /** The metric over everything accumulated since the last reset. */
  async value(): Promise<number> {
    const values = await Promise.all(this.accumulators.map(async (v) => (await v.data()) as Float32Array));
    return this.formula(values);
  }
}

export function isMetricOp(value: unknown): value is MetricOp {
  return value instanceof MetricOp;
}
