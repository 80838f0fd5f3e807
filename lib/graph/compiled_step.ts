// A compiled graph ready to run: building the feeds of a raw batch (the columns'
// native transforms) and one native call that runs the whole step.
//
// Under a job of several ranks the step begins with an exchange of flags (stepSync):
//   flags[0]  rank + 1 of a rank whose input ended (it sends them in announceStop()
//             instead of running the step): every rank's run then fails with
//             HB_ERR_PEER_STOPPED before anything else ran, and all stop at one step
//   flags[1]  a rank asks every rank to pause for an evaluation after this step
//   flags[2]  a rank asks every rank to stop after this step (a hook said so)
//   flags[3]  a rank asks every rank to save a checkpoint after this step (its clock)
//   flags[4]  the rank ran a batch of its own (evaluation and prediction go on, with
//             empty batches on ranks whose input ended, until no rank has one)
import type { Batch } from '../data/batch';
import { allreduce } from '../distribute/collectives';
import { native, NativePlan, TypedArray } from '../native';
import { Ragged } from '../tensor/ragged';
import { StringColumn } from '../tensor/string_column';
import { tensor, Tensor } from '../tensor/tensor';
import type { Optimizer } from '../train/optimizer';
import { CompileOptions, compileGraph, CompiledGraph } from './compile';
import { Feed, Graph, Node, SymbolicTensor } from './graph';
import { STEP_FLAG_COUNT } from './ops/exchange';

export interface PreparedBatch {
  batchSize: number;
  feeds: Array<Float32Array | BigInt64Array | Int32Array>;
}

export interface StepResult {
  outputs: TypedArray[];
  /** Time the native call spent running the step (not waiting in the queue). */
  nativeMs: number;
  batchSize: number;
  /** Under a job: what the ranks agreed in the step's first exchange. */
  agreed?: Required<Omit<StepRequests, 'globalStep'>>;
}

/** What this rank asks of every rank in a step's first exchange. */
export interface StepRequests {
  evaluate?: boolean;
  stop?: boolean;
  save?: boolean;
  /** This rank's batch is one of its own (not emptyBatch()). */
  hasBatch?: boolean;
  /** The global step the run trains (before it counts itself): dynamic tables date rows by it. */
  globalStep?: number;
}

export type StepDecisions = Required<Omit<StepRequests, 'hasBatch' | 'globalStep'>>;

/**
 * What applies after a step, of what this rank decided alone (a hook's stop, a clock's
 * save or evaluation): alone, its own decisions at once; under a job (`agreed`), what the
 * ranks agreed in this step's first exchange, this rank's own going into `requests` for
 * the next step's, so every rank acts on each decision after the same step.
 */
export function settleDecisions(local: StepDecisions, agreed: Required<Omit<StepRequests, 'globalStep'>> | undefined, requests: StepRequests): StepDecisions {
  if (!agreed) return local;
  requests.evaluate = local.evaluate && !agreed.evaluate;
  requests.stop = local.stop && !agreed.stop;
  requests.save = local.save && !agreed.save;
  return { evaluate: agreed.evaluate, stop: agreed.stop, save: agreed.save };
}

/** The step's first exchange under a job (lib/graph/ops/exchange.ts stepSync). */
export interface StepSyncSpec {
  feed: Feed;
  agreed: SymbolicTensor;
  rank: number;
}

/** Rows in a raw batch: the labels' length, else the first feature's. */
export function batchRows(batch: Batch): number {
  const rowsOf = (value: unknown): number | undefined => {
    if (value instanceof Tensor) return value.shape[0];
    if (value instanceof Ragged) return value.nrows;
    if (value instanceof StringColumn) return value.length;
    if (ArrayBuffer.isView(value)) return (value as unknown as { length: number }).length;
    if (Array.isArray(value)) return value.length;
    if (value !== null && typeof value === 'object') {
      const rowSplits = (value as { rowSplits?: Int32Array }).rowSplits;
      if (rowSplits) return rowSplits.length - 1;
      for (const v of Object.values(value)) {
        const r = rowsOf(v);
        if (r !== undefined) return r;
      }
    }
    return undefined;
  };
  const rows = rowsOf(batch.labels) ?? rowsOf(batch.features);
  if (rows === undefined) throw new Error('a batch must hold at least one feature or labels to tell its size');
  return rows;
}

/**
 * Under a job, instead of running the next step: rank `rank`'s input ended (or it
 * stops). The other ranks' runs of their next step fail with HB_ERR_PEER_STOPPED before
 * they change anything, so every rank stops at the same step. Collective: the exchange
 * is the step's first one.
 */
export async function announceStepStop(rank: number): Promise<void> {
  const flags = new Int32Array(STEP_FLAG_COUNT);
  flags[0] = rank + 1;
  await allreduce(tensor(flags, [STEP_FLAG_COUNT], 'int32', { device: 'cpu' }), { op: 'max' });
}

export class CompiledStep {
  readonly compiled: CompiledGraph;
  private readonly plan: NativePlan;
  /** Where the step's flags go among the feeds (-1: not under a job). */
  private readonly flagsFeed: number;

  constructor(graph: Graph, fetches: SymbolicTensor[], effects: Node[] = [], options: CompileOptions = {}, private readonly sync?: StepSyncSpec) {
    this.compiled = compileGraph(graph, sync ? [...fetches, sync.agreed] : fetches, effects, options);
    this.flagsFeed = sync ? this.compiled.feeds.indexOf(sync.feed) : -1;
    if (sync && this.flagsFeed < 0) throw new Error('compile: the step exchange of flags is not among the plan\'s feeds');
    this.plan = native.planCreate(this.compiled.spec, this.compiled.params);
  }

  /** Whether the step exchanges with other ranks (it was built under a job of several). */
  get inJob(): boolean {
    return this.sync !== undefined;
  }

  /**
   * A batch of no rows: what a rank whose input ended runs while the others evaluate or
   * predict on (its exchanges then carry nothing of its own).
   */
  emptyBatch(): PreparedBatch {
    const arrays = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array };
    return { batchSize: 0, feeds: this.compiled.feeds.map((f) => (f.empty ? f.empty() : new arrays[f.dtype](0))) };
  }

  /** The feeds of `batch`: each feature column's transform, natively, over whole columns. */
  async prepare(batch: Batch): Promise<PreparedBatch> {
    const batchSize = batchRows(batch);
    // Feeds share work by batch identity within one step (a column's transform feeds its
    // ids, row splits and weights; tensor features are read once). A caller may pass the
    // same object again with new values in its arrays (a reused input buffer): each step
    // gets an identity of its own, so nothing computed for one step feeds the next.
    const step: Batch = { ...batch, features: { ...batch.features } };
    const feeds = await Promise.all(this.compiled.feeds.map((f) => f.build(step)));
    return { batchSize, feeds };
  }

  /** One native call: the whole step. Optimizers' per-step state advances when it succeeds. */
  async run(prepared: PreparedBatch, requests: StepRequests = {}): Promise<StepResult> {
    const optimizers = this.compiled.optimizers as Optimizer[];
    const hypers = optimizers.map((o) => o.stepHyper());
    let feeds = prepared.feeds;
    if (this.flagsFeed >= 0) {
      feeds = feeds.slice();
      const flag = (on?: boolean) => (on ? 1 : 0);
      feeds[this.flagsFeed] = Int32Array.from([0, flag(requests.evaluate), flag(requests.stop), flag(requests.save), flag(requests.hasBatch)]);
    }
    const result = await native.planRun(this.plan, prepared.batchSize, feeds, hypers, this.compiled.fetch, requests.globalStep);
    optimizers.forEach((o) => o.afterStep());
    if (this.flagsFeed < 0) return { ...result, batchSize: prepared.batchSize };
    const outputs = result.outputs.slice();
    const agreed = outputs.pop() as Int32Array;
    return { outputs, nativeMs: result.nativeMs, batchSize: prepared.batchSize, agreed: { evaluate: agreed[1] !== 0, stop: agreed[2] !== 0, save: agreed[3] !== 0, hasBatch: agreed[4] !== 0 } };
  }

  /**
   * Under a job, instead of a run: this rank's input ended. The other ranks' runs of this
   * step fail with HB_ERR_PEER_STOPPED before they change anything, so every rank stops
   * at the same step.
   */
  async announceStop(): Promise<void> {
    if (this.sync) await announceStepStop(this.sync.rank);
  }

  /**
   * Under a job, instead of a run: this rank cannot run the step (its batch failed to
   * prepare). The other ranks' runs fail with `why` instead of waiting for it. Settles
   * once this rank's side of the exchange that tells them has completed: await it before
   * the error goes up, since the process may end with it.
   */
  async tellPeersOfFailure(why: string): Promise<void> {
    if (this.sync) await native.planTellPeersOfFailure(this.plan, why);
  }
}
