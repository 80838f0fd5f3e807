// A streaming metric: accumulators in native memory that every evaluation batch adds
// to (one accumulate step in the compiled eval plan), and the formula that turns them
// into the reported value, as tf.metrics' (value, update_op) pairs.
import { allreduce } from '../distribute/collectives';
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
    /** The ranks of the job whose examples it counts: their accumulators are summed. */
    private readonly worldSize = 1,
  ) {}

  /** Zeroes the accumulators (the Estimator does it before each evaluation). */
  async reset(): Promise<void> {
    await Promise.all(this.accumulators.map((v) => v.assign(tensor(new Float32Array(v.size), [...v.shape]))));
  }

  /**
   * The metric over everything accumulated since the last reset; under a job, over every
   * rank's examples (AUC's confusion counts and a mean's total and count are summed over
   * the ranks, so the value equals one process evaluating all the rows). Collective then:
   * every rank calls it, in the same order.
   */
  async value(): Promise<number> {
    let values = await Promise.all(this.accumulators.map(async (v) => (await v.data()) as Float32Array));
    if (this.worldSize > 1) {
      const packed = new Float32Array(values.reduce((n, v) => n + v.length, 0));
      values.reduce((at, v) => (packed.set(v, at), at + v.length), 0);
      const summed = (await (await allreduce(tensor(packed, [packed.length], 'float32', { device: 'cpu' }), { op: 'sum' })).data()) as Float32Array;
      let at = 0;
      values = values.map((v) => summed.slice(at, (at += v.length)));
    }
    return this.formula(values);
  }
}

export function isMetricOp(value: unknown): value is MetricOp {
  return value instanceof MetricOp;
}
