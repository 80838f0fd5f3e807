// tf.train.MonitoredTrainingSession, as HybridBackend's first example trains with it:
//
//   const { features, labels } = await hb.train.inputs(dataset);   // iterator.get_next()
//   const loss = ...; const trainOp = opt.minimize(loss);
//   const sess = hb.train.MonitoredTrainingSession({ checkpointDir, hooks });   // new optional
//   while (!sess.shouldStop()) await sess.run(trainOp);
//   await sess.close();
//
// The graph is built from symbolic inputs shaped like the input's first batch; each run
// takes the input's next batch (or the batch given to run) and is one native call per
// fetch set, compiled on first use. The session restores the latest checkpoint before its
// first run, saves every saveCheckpointSteps steps (or saveCheckpointSecs) and at close,
// logs the global step's rate and runs the hooks. It works unchanged in one process and
// under hb-ts launch: there its graph is built for the job (sharded tables, averaged
// dense gradients), whole variables start from rank 0's values, and the ranks stop
// together when any one's input ends (the others' run() then resolves to undefined and
// shouldStop() turns true, as TF's OutOfRangeError ends a MonitoredSession).
import { currentDevice } from '../backend';
import type { Batch } from '../data/batch';
import { context as jobContext, init, isInitialized } from '../distribute/process_group';
import { batchesOf } from '../estimator/input';
import { checkpointItemsOf, CheckpointManager, restoreOptimizerState } from '../estimator/checkpoint_manager';
import { ModeKeys } from '../estimator/mode_keys';
import { agreeOnRestoredStep, shareWholeVariables } from '../estimator/replicas';
import { announceStepStop, CompiledStep, PreparedBatch, settleDecisions, StepRequests } from '../graph/compiled_step';
import { Graph, Node, SymbolicTensor, VariableStore } from '../graph/graph';
import { assertFinite } from '../graph/ops/assert_finite';
import { stepSync } from '../graph/ops/exchange';
import { RawFeature, symbolicFeatures, symbolicLabels } from '../graph/symbolic_features';
import { checkOptionKeys } from '../option_keys';
import type { Optimizer } from './optimizer';
import { TrainOp } from './train_op';
import { shownValue } from '../shown_value';

export interface SymbolicInputs {
  /** Numeric features as [batch] / [batch, n] tensors; others (ids, strings) for feature columns. */
  features: Record<string, SymbolicTensor | RawFeature>;
  labels?: SymbolicTensor | Record<string, SymbolicTensor>;
}

type BatchSource = AsyncIterable<Batch> | Iterable<Batch>;

// One session's pass over a graph's input.
interface InputPass {
  first?: Batch;
  rest: AsyncIterator<Batch>;
}
// What inputs() made each graph from: its source (none when it was one batch), and the
// pass it opened to read the first batch, until a session takes it.
interface GraphInput {
  source?: BatchSource;
  opened?: InputPass;
}
const inputsOf = new WeakMap<Graph, GraphInput>();

/**
 * Symbolic features and labels shaped like `source`'s first batch, on a graph of their
 * own (TF's iterator.get_next()): build the model on them, then a MonitoredTrainingSession
 * runs it, each run on the input's next batch. `source`: a dataset or any (async)
 * iterable of batches; or one batch, when each run is given its own (run(fetches, { batch })).
 */
export async function inputs(source: BatchSource | Batch): Promise<SymbolicInputs> {
  const job = jobContext();
  const world = { size: job.worldSize, rank: job.rank };
  const graph = new Graph(new VariableStore(), ModeKeys.TRAIN, currentDevice(), world);
  // Under a job the step's first exchange is made first, so it runs first.
  if (world.size > 1) stepSync(graph, world.size);
  let example: Batch;
  const input: GraphInput = {};
  if (isBatch(source)) {
    example = source;
  } else {
    const batches = batchesOf(() => source, 'train.inputs');
    const first = await batches.next();
    if (first.done) throw new Error('train.inputs: the input gave no batch');
    example = first.value;
    input.source = source;
    input.opened = { first: first.value, rest: batches };
  }
  inputsOf.set(graph, input);
  return { features: symbolicFeatures(graph, example), labels: symbolicLabels(graph, example) };
}

function isBatch(value: unknown): value is Batch {
  return value !== null && typeof value === 'object' && 'features' in value && !(Symbol.iterator in value) && !(Symbol.asyncIterator in value);
}

/** What run() takes: a train op, a tensor, or a list or record of them. */
export type Fetches = TrainOp | SymbolicTensor | ReadonlyArray<TrainOp | SymbolicTensor> | Readonly<Record<string, TrainOp | SymbolicTensor>>;
/** A fetched tensor's value: a number for a scalar, else its values. A train op gives undefined. */
export type FetchedValue = number | Float32Array | Int32Array | BigInt64Array | undefined;

export interface SessionRunContext {
  readonly globalStep: number;
  /** This run's results, as run() resolves to them. */
  readonly results: unknown;
  /** Ends the session after this run (under a job, every rank's after the next one). */
  requestStop(): void;
}

/** tf.train.SessionRunHook: called around the session's runs. */
export interface SessionRunHook {
  begin?(): void | Promise<void>;
  afterRun?(context: SessionRunContext): void | Promise<void>;
  end?(session: MonitoredSession): void | Promise<void>;
}

/** tf.train.StopAtStepHook: stops once the global step reaches lastStep (or numSteps more). */
export class StopAtStepHook implements SessionRunHook {
  private lastStep?: number;
  private readonly numSteps?: number;
  constructor(options: { lastStep?: number; numSteps?: number }) {
    checkOptionKeys(options, ['lastStep', 'numSteps'], 'StopAtStepHook');
    const { lastStep, numSteps } = options;
    if ((lastStep === undefined) === (numSteps === undefined)) throw new Error('StopAtStepHook: give one of lastStep and numSteps');
    for (const [k, v] of [['lastStep', lastStep], ['numSteps', numSteps]] as const) {
      if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) throw new RangeError(`StopAtStepHook: ${k} must be an integer >= 0, got ${shownValue(v)}`);
    }
    this.lastStep = lastStep;
    this.numSteps = numSteps;
  }
  /** @internal Before the first run: numSteps counts from the restored step. */
  begin(globalStep = 0): void {
    if (this.lastStep === undefined) this.lastStep = globalStep + (this.numSteps as number);
  }
  /**
   * @internal Whether the session stops at `globalStep`. The session asks it itself: the
   * step is the same on every rank of a job, so they all stop at once, with no exchange.
   */
  reached(globalStep: number): boolean {
    return globalStep >= (this.lastStep as number);
  }
}

export interface MonitoredTrainingSessionOptions {
  /** Where checkpoints are restored from and saved to; without it nothing is. */
  checkpointDir?: string;
  hooks?: SessionRunHook[];
  /** Save every N global steps (takes precedence over saveCheckpointSecs). */
  saveCheckpointSteps?: number;
  /** Default 600, when saveCheckpointSteps is not set; 0: only at close(). */
  saveCheckpointSecs?: number;
  /** Default 5; 0 keeps all. */
  keepCheckpointMax?: number;
  /** Default 100: the global step and its rate logged every N steps. */
  logStepCountSteps?: number;
  /** Where log lines go (rank 0's only, under a job); default console.log. */
  log?: (line: string) => void;
}

const OPTION_KEYS = ['checkpointDir', 'hooks', 'saveCheckpointSteps', 'saveCheckpointSecs', 'keepCheckpointMax', 'logStepCountSteps', 'log'] as const;

interface CompiledFetches {
  step: CompiledStep;
  /** Where each fetch's value is among the step's outputs (-1: a train op). */
  outputOf: number[];
  trains: boolean;
}

/** The session MonitoredTrainingSession makes (tf.train.MonitoredSession). */
export class MonitoredSession {
  private readonly hooks: SessionRunHook[];
  private readonly checkpoints?: CheckpointManager;
  private readonly log: (line: string) => void;
  private readonly options: MonitoredTrainingSessionOptions;
  private graph?: Graph;
  private readonly compiled = new Map<string, CompiledFetches>();
  private readonly shared = new Set<string>();
  private started?: Promise<void>;
  private step = 0;
  private lastSavedStep = 0;
  private lastSave = Date.now();
  private lastLog = { time: Date.now(), step: 0 };
  private stopped = false;
  /** Under a job: the ranks already agreed to stop (no rank will run another step). */
  private settled = false;
  private closed = false;
  /** A run failed: close() then saves nothing, as TF's session does not (and under a job the ranks may no longer be in step). */
  private failed = false;
  private readonly requests: StepRequests = {};
  /** This session's pass over the graph's input (each session starts its own, as in TF). */
  private input?: InputPass;

  constructor(options: MonitoredTrainingSessionOptions = {}) {
    checkOptionKeys(options, OPTION_KEYS, 'MonitoredTrainingSession');
    const { checkpointDir, hooks = [] } = options;
    if (checkpointDir !== undefined && (typeof checkpointDir !== 'string' || checkpointDir === '')) {
      throw new TypeError('MonitoredTrainingSession: checkpointDir must be a non-empty string');
    }
    if (!Array.isArray(hooks)) throw new TypeError('MonitoredTrainingSession: hooks must be an array');
    for (const k of ['saveCheckpointSteps', 'saveCheckpointSecs', 'keepCheckpointMax', 'logStepCountSteps'] as const) {
      const v = options[k];
      if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) throw new RangeError(`MonitoredTrainingSession: ${k} must be an integer >= 0, got ${shownValue(v)}`);
    }
    if (options.log !== undefined && typeof options.log !== 'function') throw new TypeError('MonitoredTrainingSession: log must be a function');
    this.options = options;
    this.hooks = hooks;
    const rank = jobContext().rank;
    this.log = rank === 0 ? (options.log ?? ((line: string) => console.log(line))) : () => undefined;
    if (checkpointDir) this.checkpoints = new CheckpointManager(checkpointDir, { keepMax: options.keepCheckpointMax ?? 5, log: this.log });
  }

  /** The global step: training runs so far, counted from the checkpoint restored. */
  get globalStep(): number {
    return this.step;
  }

  /** True once a hook asked to stop, the input ended (on any rank of a job), a run failed, or close() was called. */
  shouldStop(): boolean {
    return this.stopped || this.closed;
  }

  /**
   * Runs `fetches` on the next batch (the input of hb.train.inputs, or `options.batch`):
   * one native call. Resolves to their values in the shape of `fetches`, or to undefined
   * when the step did not run because the input ended (here or, under a job, on another
   * rank); shouldStop() is true from then on.
   */
  async run(fetches: Fetches, options: { batch?: Batch } = {}): Promise<unknown> {
    if (this.closed) throw new Error('MonitoredTrainingSession.run: the session is closed');
    if (this.stopped) throw new Error('MonitoredTrainingSession.run: the session has stopped (shouldStop() is true)');
    const list = fetchList(fetches);
    const graph = graphOf(list);
    if (this.graph && graph !== this.graph) throw new Error('MonitoredTrainingSession.run: the fetches belong to another graph than the earlier runs\'');
    this.graph = graph;
    const compiled = this.compile(graph, list);
    await this.start(graph);
    // A finished job rerun (the restored step already at a StopAtStepHook's) runs nothing.
    if (this.stopped) return undefined;
    const batch = options.batch ?? (await this.nextBatch(graph));
    if (batch === undefined) {
      await this.endInput();
      return undefined;
    }
    let prepared: PreparedBatch;
    try {
      prepared = await compiled.step.prepare(batch);
    } catch (error) {
      // The others, in this step's first exchange, fail with this reason; nothing else is owed them.
      await compiled.step.tellPeersOfFailure(`a batch of rank ${graph.world.rank} failed: ${(error as Error)?.message}`);
      this.failed = this.settled = this.stopped = true;
      throw error;
    }
    let result;
    try {
      result = await compiled.step.run(prepared, { stop: this.requests.stop, save: this.requests.save, globalStep: this.step });
    } catch (error) {
      if ((error as { code?: string }).code === 'HB_ERR_PEER_STOPPED') {
        this.stopped = true;
        this.settled = true;
        return undefined;
      }
      // The step told the others what it could (native/exec/plan.cc tellPeersOfFailure).
      this.failed = this.settled = this.stopped = true;
      throw error;
    }
    if (compiled.trains) this.step++;
    const values = compiled.outputOf.map((at, i) => (at < 0 ? undefined : valueOf(result.outputs[at], list.tensors[i])));
    const results = shapeLike(fetches, values);
    let stop = false;
    const context: SessionRunContext = { globalStep: this.step, results, requestStop: () => void (stop = true) };
    for (const hook of this.hooks) await hook.afterRun?.(context);
    await this.afterStep(compiled, result.agreed, stop);
    if (this.stopAtStep()) this.stop(true);
    return results;
  }

  private stopAtStep(): boolean {
    return this.hooks.some((h) => h instanceof StopAtStepHook && h.reached(this.step));
  }

  /** `everyRank`: every rank of a job stops at this same step by itself. */
  private stop(everyRank: boolean): void {
    this.stopped = true;
    if (everyRank) this.settled = true;
  }

  /** Saves a last checkpoint (when anything trained since the last), runs the hooks' end, and ends the session. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Under a job, the others may still be about to run a step: they stop with this one.
    if (this.graph?.world && this.graph.world.size > 1 && this.started && !this.settled) {
      this.settled = true;
      await announceStepStop(this.graph.world.rank);
    }
    if (this.started && !this.failed && this.checkpoints && this.step !== this.lastSavedStep) await this.save();
    for (const hook of this.hooks) await hook.end?.(this);
    await this.input?.rest.return?.(undefined);
  }

  private compile(graph: Graph, list: FetchList): CompiledFetches {
    const key = list.items.map((f) => (f instanceof TrainOp ? `op${graph.trainOps.indexOf(f)}` : `t${f.node.id}:${f.index}`)).join(',');
    let compiled = this.compiled.get(key);
    if (!compiled) {
      const effects: Node[] = [];
      const tensors: SymbolicTensor[] = [];
      const outputOf: number[] = [];
      for (const f of list.items) {
        if (f instanceof TrainOp) {
          // A NaN loss stops the step before any update is applied (TF's NanTensorHook).
          effects.push(assertFinite(f.loss, `${f.loss.name}/check_finite`), ...f.nodes);
          outputOf.push(-1);
        } else {
          outputOf.push(tensors.push(f) - 1);
        }
      }
      const sync = graph.stepSync;
      const step = new CompiledStep(graph, tensors, effects, {}, sync && { ...sync, rank: graph.world.rank });
      compiled = { step, outputOf, trains: list.items.some((f) => f instanceof TrainOp) };
      this.compiled.set(key, compiled);
    }
    return compiled;
  }

  // Before the first run: join the job, restore the latest checkpoint, share whole
  // variables from rank 0, and begin the hooks. Once, whatever fetches come first.
  private start(graph: Graph): Promise<void> {
    this.started ??= (async () => {
      if (graph.world.size > 1 && !isInitialized()) await init();
      let failure: Error | undefined;
      try {
        if (this.checkpoints) await this.restore(graph);
      } catch (error) {
        if (graph.world.size <= 1) throw error;
        failure = error as Error;
      }
      if (graph.world.size > 1) {
        // Settled between the ranks before anything is shared: one that could not restore,
        // or restored another step, stops them all.
        if (this.checkpoints) await agreeOnRestoredStep(this.step, this.checkpoints.modelDir, failure);
        await shareWholeVariables(graph.store, this.shared);
      }
      this.lastSavedStep = this.step;
      this.lastLog = { time: Date.now(), step: this.step };
      for (const hook of this.hooks) await (hook instanceof StopAtStepHook ? hook.begin(this.step) : hook.begin?.());
      if (this.stopAtStep()) this.stop(true);
    })();
    return this.started;
  }

  private async restore(graph: Graph): Promise<void> {
    const items = checkpointItemsOf(graph.store);
    const fitting = await this.checkpoints!.fitting(items);
    if (!fitting) return;
    // An older one than `fitting` when its data turns out corrupt as it is read.
    const { checkpoint } = await this.checkpoints!.restore(fitting, items, new Set(items.flatMap((i) => i.names)));
    restoreOptimizerState(checkpoint.path, checkpoint.source.metadata.optimizer_state, this.optimizers(graph));
    this.step = checkpoint.source.globalStep;
    this.log(`restored ${checkpoint.path} (global step ${this.step})`);
  }

  private optimizers(graph: Graph): Optimizer[] {
    return [...new Set(graph.trainOps.map((op) => (op as TrainOp).optimizer as Optimizer))];
  }

  private async nextBatch(graph: Graph): Promise<Batch | undefined> {
    const graphInput = inputsOf.get(graph);
    const source = graphInput?.source;
    if (!source) throw new Error('MonitoredTrainingSession.run: these inputs were made from one batch (hb.train.inputs(batch)): give each run its batch (run(fetches, { batch }))');
    if (!this.input) {
      // The first session takes the pass inputs() opened; a later one (on the same graph,
      // after the first closed) reads the source again from its start, as a TF session
      // starts its iterator afresh. A one-shot iterator has nothing left to give it.
      this.input = graphInput.opened ?? { rest: batchesOf(() => source, 'train.inputs') };
      graphInput.opened = undefined;
    }
    if (this.input.first) {
      const first = this.input.first;
      this.input.first = undefined;
      return first;
    }
    const next = await this.input.rest.next();
    return next.done ? undefined : next.value;
  }

  // This rank's input ended: it stops, and under a job the others stop at their next step.
  private async endInput(): Promise<void> {
    this.stopped = true;
    if (this.graph && this.graph.world.size > 1 && !this.settled) {
      this.settled = true;
      await announceStepStop(this.graph.world.rank);
    }
  }

  private async afterStep(compiled: CompiledFetches, agreed: Required<Omit<StepRequests, 'globalStep'>> | undefined, stopRequested: boolean): Promise<void> {
    const steps = this.options.saveCheckpointSteps;
    const secs = this.options.saveCheckpointSecs ?? 600;
    const timed = compiled.trains && steps === undefined && secs > 0 && Date.now() - this.lastSave >= secs * 1000;
    const now = settleDecisions({ evaluate: false, stop: stopRequested, save: timed }, agreed, this.requests);
    const due = steps !== undefined ? compiled.trains && steps > 0 && this.step % steps === 0 : now.save;
    if (now.stop) this.stop(true);
    if (due && this.checkpoints) await this.save();
    const every = this.options.logStepCountSteps ?? 100;
    if (compiled.trains && every > 0 && this.step % every === 0) {
      const now = Date.now();
      const rate = ((this.step - this.lastLog.step) * 1000) / Math.max(1, now - this.lastLog.time);
      this.log(`global_step/sec: ${rate.toPrecision(4)} (global step ${this.step})`);
      this.lastLog = { time: now, step: this.step };
    }
  }

  private async save(): Promise<void> {
    const graph = this.graph!;
    const items = checkpointItemsOf(graph.store);
    const metadata = { optimizer_state: JSON.stringify(this.optimizers(graph).map((o) => o.scalarState())) };
    const file = graph.world.size > 1 ? await this.checkpoints!.saveSharded(this.step, items, metadata, graph.world) : await this.checkpoints!.save(this.step, items, metadata);
    this.lastSavedStep = this.step;
    this.lastSave = Date.now();
    this.log(`saved ${file}`);
  }
}

interface FetchList {
  items: Array<TrainOp | SymbolicTensor>;
  /** Per item, the tensor (undefined for a train op). */
  tensors: Array<SymbolicTensor | undefined>;
}

function fetchList(fetches: Fetches): FetchList {
  const items: Array<TrainOp | SymbolicTensor> =
    fetches instanceof TrainOp || fetches instanceof SymbolicTensor
      ? [fetches]
      : Array.isArray(fetches)
        ? [...fetches]
        : fetches !== null && typeof fetches === 'object'
          ? Object.values(fetches)
          : [];
  if (items.length === 0) throw new TypeError('MonitoredTrainingSession.run: fetches must be a train op, a symbolic tensor, or a non-empty list or record of them');
  items.forEach((f, i) => {
    if (!(f instanceof TrainOp) && !(f instanceof SymbolicTensor)) throw new TypeError(`MonitoredTrainingSession.run: fetch ${i} is not a train op or a symbolic tensor`);
  });
  return { items, tensors: items.map((f) => (f instanceof SymbolicTensor ? f : undefined)) };
}

function graphOf(list: FetchList): Graph {
  const graphs = new Set(list.items.map((f) => (f instanceof TrainOp ? f.loss.graph : f.graph)));
  if (graphs.size !== 1) throw new Error('MonitoredTrainingSession.run: the fetches come from different graphs');
  const graph = [...graphs][0];
  if (!inputsOf.has(graph)) throw new Error('MonitoredTrainingSession.run: build the graph on hb.train.inputs(...)');
  return graph;
}

function valueOf(output: unknown, tensor: SymbolicTensor | undefined): FetchedValue {
  const values = output as Float32Array | Int32Array | BigInt64Array;
  const scalar = tensor !== undefined && (tensor.shape.length === 0 || (tensor.shape.length === 1 && tensor.shape[0] === 1));
  return scalar ? Number(values[0]) : values;
}

function shapeLike(fetches: Fetches, values: FetchedValue[]): unknown {
  if (fetches instanceof TrainOp || fetches instanceof SymbolicTensor) return values[0];
  if (Array.isArray(fetches)) return values;
  return Object.fromEntries(Object.keys(fetches).map((k, i) => [k, values[i]]));
}

/**
 * tf.train.MonitoredTrainingSession: a MonitoredSession with checkpoints, step logging and
 * hooks, called as TF calls it (with or without `new`).
 */
export const MonitoredTrainingSession = function MonitoredTrainingSession(options: MonitoredTrainingSessionOptions = {}): MonitoredSession {
  return new MonitoredSession(options);
} as unknown as {
  (options?: MonitoredTrainingSessionOptions): MonitoredSession;
  new (options?: MonitoredTrainingSessionOptions): MonitoredSession;
};
