// tf.estimator.Estimator: three parts with one job each, composed here. The model
// builder (model_builder.ts) runs the modelFn once per mode and compiles it to a native
// plan; the checkpoint manager (checkpoint_manager.ts) saves and restores the variables
// in modelDir; the train loop (train_loop.ts) runs the steps, hooks and checkpoint
// cadence. The Estimator keeps the global step and decides what is restored when.
//
// Under a job of several ranks (hb-ts launch, or WORLD_SIZE and the rest set) the same
// code trains in every rank: the Estimator joins the job, embedding tables are sharded
// or replicated (lib/distribute/sharding_planner.ts), dense variables start from rank 0's
// values and train on gradients averaged over the ranks, every step exchanges inside its
// one native call, and the ranks stop and evaluate at the same steps. Rank 0 logs.
import { currentDevice } from '../backend';
import { allreduce } from '../distribute/collectives';
import { tensor } from '../tensor/tensor';
import { context as jobContext, init, isInitialized } from '../distribute/process_group';
import type { PreparedBatch } from '../graph/compiled_step';
import { GraphWorld } from '../graph/graph';
import { Variable, withRestoredNames } from '../tensor/variable';
import { CheckpointItem, checkpointItemsOf, CheckpointManager, restoreOptimizerState } from './checkpoint_manager';
import { agreeOnRestoredStep, shareWholeVariables } from './replicas';
import { Batch, batchesOf, InputFn } from './input';
import { BuiltModel, ModelBuilder, ModelFn } from './model_builder';
import { formatBytes, freeBytesOf, MemoryPlan, planOf } from './memory_plan';
import { withMemoryBudget } from '../tensor/memory_budget';
import { Mode, ModeKeys } from './mode_keys';
import { RunConfig } from './run_config';
import { TrainHook } from './specs';
import { TrainingProgress } from './progress';
import { EvaluateWhen, runTrainLoop, TrainStop } from './train_loop';
import { checkOptionKeys } from '../option_keys';
import { ExportOptions, exportSavedModel } from './export_saved_model';
import { DynamicEmbeddingTable } from '../embedding/dynamic_table';

export type { ModelFn } from './model_builder';
export type { TrainStop } from './train_loop';

export interface EstimatorInit {
  modelFn: ModelFn;
  /** Checkpoints go here; without it nothing is saved or restored. */
  modelDir?: string;
  params?: Record<string, unknown>;
  config?: RunConfig;
}

export interface EvaluateResult {
  loss: number;
  globalStep: number;
  [metric: string]: number;
}

export class Estimator {
  readonly modelFn: ModelFn;
  readonly modelDir?: string;
  readonly params: Record<string, unknown>;
  readonly config: RunConfig;
  /** Where the model's steps run and its variables live: RunConfig's device, else the current one. */
  readonly device: string;
  /** The job it trains in ({ size: 1, rank: 0 } alone). */
  readonly world: GraphWorld;
  private readonly model: ModelBuilder;
  private memoryReported = false;
  private readonly checkpoints?: CheckpointManager;
  /** Rank 0's log lines go to config.log (above the progress bar while one is drawn); other ranks say nothing. */
  private readonly log: (line: string) => void;
  /** The progress of the train or trainAndEvaluate call running now. */
  private progress?: TrainingProgress;
  /** Variables every rank holds whole whose values rank 0 has sent to all. */
  private readonly shared = new Set<string>();
  /** Under a job: the ranks have checked that they restored the same step. */
  private stepAgreed = false;
  private step = 0;
  /** The first batch a model was built on: the shape of an export's serving inputs. */
  private exampleBatch?: Batch;
  /** Whether the global step has been read from the latest checkpoint. */
  private stepRestored = false;
  /** The evaluation running, or done (see evaluateOn). */
  private evaluations: Promise<unknown> = Promise.resolve();
  /** The checkpoint step the variables are restored from, while nothing has trained since. */
  private restoredStep?: number;
  /** The file they are restored from (fitting() may move to an older one than restoreGlobalStep saw). */
  private restoredFrom?: string;
  /** The names that file holds: variables made before their restore start as zeros, not their initializer's values. */
  private restoredNames: ReadonlySet<string> = new Set();
  /** Names restored from restoredFrom, each only once its whole restore succeeded. */
  private readonly restored = new Set<string>();

  constructor(init: EstimatorInit) {
    checkOptionKeys(init, ['modelFn', 'modelDir', 'params', 'config'] satisfies ReadonlyArray<keyof EstimatorInit>, 'Estimator');
    if (init === null || typeof init !== 'object' || typeof init.modelFn !== 'function') throw new TypeError('Estimator: modelFn must be a function');
    if (init.modelDir !== undefined && typeof init.modelDir !== 'string') throw new TypeError('Estimator: modelDir must be a non-empty string');
    if (init.modelDir === '') throw new Error('Estimator: modelDir must be a non-empty string');
    if (init.config !== undefined && !(init.config instanceof RunConfig)) throw new TypeError('Estimator: config must be an hb.estimator.RunConfig');
    this.modelFn = init.modelFn;
    this.modelDir = init.modelDir;
    this.params = init.params ?? {};
    this.config = init.config ?? new RunConfig();
    this.device = this.config.device ?? currentDevice();
    const job = jobContext();
    this.world = { size: job.worldSize, rank: job.rank };
    this.log = this.world.rank === 0 ? (line) => (this.progress ? this.progress.line(line) : this.config.log(line)) : () => undefined;
    this.model = new ModelBuilder(this.modelFn, this.params, this.device, this.config.tfRandomSeed, this.world);
    if (this.modelDir) this.checkpoints = new CheckpointManager(this.modelDir, { keepMax: this.config.keepCheckpointMax, log: this.log });
  }

  /** The global step: training steps taken, restored from the latest checkpoint. */
  get globalStep(): number {
    return this.step;
  }

  /** Every model variable by name (not optimizer slots), after the first build. */
  get variables(): ReadonlyMap<string, Variable> {
    return this.model.store.variables;
  }

  /**
   * Reads the global step of the latest checkpoint, once, before anything is built: what
   * maxSteps counts from on a resumed run (TF: a finished job rerun trains zero steps).
   * Its header is checked here, its data as the restore reads it: one found corrupt then is
   * refused and an older one restored, and globalStep says that one's step.
   */
  async restoreGlobalStep(): Promise<number> {
    if (!this.stepRestored) {
      // Marked only once the look succeeded: a run retried after a refused checkpoint
      // must look again, not start from step 0 over the model directory.
      const latest = await this.checkpoints?.latest();
      this.stepRestored = true;
      if (latest) {
        this.restoreFrom(latest.path, latest.source.globalStep);
        this.restoredNames = new Set(latest.source.entries.keys());
      }
    }
    return this.step;
  }

  /**
   * Before an evaluation or a prediction by an Estimator that has not trained since its
   * restore: a checkpoint of a later step in modelDir (another process trains there) is
   * restored first, as TF's evaluate and predict read the latest checkpoint each time (an
   * evaluator watching a trainer's directory). One that has trained holds values newer
   * than those on disk and keeps them. In one process only: the ranks of a job would have
   * to agree on the step.
   */
  private async followNewerCheckpoint(): Promise<void> {
    if (!this.checkpoints || this.world.size > 1) return;
    const untrained = this.restoredStep === undefined ? this.step === 0 : this.restoredStep === this.step;
    if (!untrained) return;
    const newer = await this.checkpoints.newerThan(this.step);
    if (!newer) return;
    this.restoreFrom(newer.path, newer.source.globalStep);
    this.restoredNames = new Set(newer.source.entries.keys());
  }

  private restoreFrom(file: string, globalStep: number): void {
    this.step = globalStep;
    this.restoredStep = globalStep;
    this.restoredFrom = file;
    this.restored.clear();
    this.log(`restored ${file} (global step ${globalStep})`);
  }

  /** The model of `mode`, built on first use, with its variables restored. */
  private async build(mode: Mode, example: Batch): Promise<BuiltModel> {
    this.exampleBatch ??= example;
    await this.joinJob();
    // Under a job, the first build's restore is settled between the ranks before anything
    // is shared: a rank that could not restore, or restored another step, stops them all.
    const settle = this.world.size > 1 && this.checkpoints !== undefined && !this.stepAgreed;
    let built: BuiltModel | undefined;
    let failure: Error | undefined;
    try {
      await this.restoreGlobalStep();
      if (mode !== ModeKeys.TRAIN) await this.followNewerCheckpoint();
      // Made as zeros, the variables a restore overwrites at once (nothing trained since it).
      const restoring = this.restoredStep !== undefined && this.restoredStep === this.step ? this.restoredNames : new Set<string>();
      const buildModel = () => withRestoredNames(restoring, () => this.model.build(mode, example));
      const first = this.model.get(mode) === undefined && mode === ModeKeys.TRAIN && !this.memoryReported;
      if (first) {
        // The training model's tables and slots are counted against each device's free
        // memory as they are made: one that would not fit stops training here, before it
        // is allocated. Then what the model holds, per device, is logged.
        built = await withMemoryBudget(freeBytesOf, buildModel);
        this.memoryReported = true;
        for (const d of planOf(this.model.store, example, this.world, this.device).devices) {
          const free = d.freeBytes === undefined ? '' : ` of ${formatBytes(d.freeBytes)} free`;
          this.log(`memory: ${d.device} ${formatBytes(d.totalBytes)}${free} (parameters ${formatBytes(d.paramBytes)}, slots ${formatBytes(d.slotBytes)}, hash ${formatBytes(d.hashBytes)}, exchange ${formatBytes(d.exchangeBytes)}/step)`);
        }
      }
      built = built ?? this.model.get(mode) ?? (await buildModel());
      // A model built before is restored again too: when its restore failed, returning it
      // as it is would train its initial values from the checkpoint's step, and the saves
      // would rotate the checkpoints out. This does nothing once all is restored.
      await this.restoreNewVariables();
    } catch (error) {
      if (!settle) throw error;
      failure = error as Error;
    }
    if (settle) {
      await agreeOnRestoredStep(this.step, this.checkpoints!.modelDir, failure);
      this.stepAgreed = true;
    }
    // Under a job: every variable each rank holds whole takes rank 0's values, once.
    if (this.world.size > 1) await shareWholeVariables(this.model.store, this.shared);
    return built!;
  }

  /**
   * Writes the PREDICT model to `exportDir/<version>/` (version: seconds since the epoch),
   * for hb.serving.loadModel and `hb-ts serve`: the plan, the feature columns that make its
   * inputs from raw features, and the variables of the latest checkpoint in modelDir (saved
   * first when training ran since; a job's sharded checkpoint is read whole), or, without a
   * modelDir, the variables as they are. Optimizer slots are left out. Returns the version
   * directory. From one process: a job's ranks export by running the same modelFn and
   * modelDir in a plain process.
   */
  async exportSavedModel(exportDir: string, options: ExportOptions = {}): Promise<string> {
    checkOptionKeys(options, ['sampleBatch', 'tableDtype'] satisfies ReadonlyArray<keyof ExportOptions>, 'exportSavedModel');
    if (this.modelDir) await this.restoreGlobalStep();
    const store = this.model.store;
    return exportSavedModel(
      {
        modelDir: this.modelDir,
        world: this.world,
        globalStep: this.step,
        exampleBatch: this.exampleBatch,
        exportGraph: (example) => this.model.exportGraph(example),
        saveCheckpoint: async () => (this.checkpointItems().length > 0 ? this.saveCheckpoint() : undefined),
        liveVariable: (name) => store.variables.get(name),
        liveDynamicRows: async (name) => {
          const owner = store.variables.get(name)?.slotOwner;
          return owner instanceof DynamicEmbeddingTable ? owner.liveRows() : undefined;
        },
      },
      exportDir,
      options,
    );
  }

  /**
   * @internal What training will hold in memory (hb.estimator.memoryPlan): the TRAIN model
   * planned on `example` without allocating anything.
   */
  async memoryPlan(example: Batch): Promise<MemoryPlan> {
    const { store } = await this.model.plan(example);
    return planOf(store, example, this.world, this.device);
  }

  /** Under a job: joins it (hb.distribute.init) unless this process already has. */
  private async joinJob(): Promise<void> {
    if (this.world.size > 1 && !isInitialized()) await init();
  }

  /** What a checkpoint holds: each table with its slots, every other variable and slot. */
  private checkpointItems(): CheckpointItem[] {
    return checkpointItemsOf(this.model.store);
  }

  /**
   * Restores variables made since the last restore from the latest checkpoint, while
   * nothing has trained since it (a later build, e.g. the train graph's optimizer slots
   * after an evaluation, must see the checkpoint's values too). Throws, restoring nothing
   * it would have to leave half done, when the checkpoint lacks some of them or none fits
   * the model; every later build and save retries, so a run never goes on without it.
   */
  private async restoreNewVariables(): Promise<void> {
    if (!this.checkpoints || this.restoredStep === undefined || this.restoredStep !== this.step) return;
    const items = this.checkpointItems();
    if (items.every((item) => item.names.every((n) => this.restored.has(n)))) return;
    const checkpoint = await this.checkpoints.fitting(items);
    if (!checkpoint) return;
    // An older checkpoint than the one the step came from: everything comes from it, and
    // maxSteps counts from its step.
    if (checkpoint.path !== this.restoredFrom) {
      this.restoreFrom(checkpoint.path, checkpoint.source.globalStep);
      this.restoredNames = new Set(checkpoint.source.entries.keys());
    }
    const wanted = new Set(items.flatMap((i) => i.names).filter((n) => !this.restored.has(n)));
    // The files are verified as they are read: one whose data is corrupt is refused there
    // and everything read again from an older one.
    const { checkpoint: used, read } = await this.checkpoints.restore(checkpoint, items, wanted);
    if (used.path !== this.restoredFrom) {
      this.restoreFrom(used.path, used.source.globalStep);
      this.restoredNames = new Set(used.source.entries.keys());
    }
    restoreOptimizerState(used.path, used.source.metadata.optimizer_state, this.model.optimizers());
    for (const name of read) this.restored.add(name);
  }

  /**
   * Writes every variable and optimizer slot to modelDir at the current global step.
   * Nothing is written before the restore succeeded (the model's initial values would go
   * out as the checkpoint's step and rotate the good ones away), nor while nothing has
   * trained since it: that state is the checkpoint restored, already on disk. `delta`:
   * a delta checkpoint against the last full one (RunConfig.saveDeltaSteps), or a full
   * one when there is no full one yet or no dynamic table to save changes of.
   */
  async saveCheckpoint(delta = false): Promise<string | undefined> {
    if (!this.checkpoints) return undefined;
    await this.restoreGlobalStep();
    await this.restoreNewVariables();
    if (this.restoredFrom !== undefined && this.restoredStep === this.step) return this.restoredFrom;
    const items = this.checkpointItems();
    if (items.length === 0) throw new Error('saveCheckpoint: nothing to save yet: no model has been built (train, evaluate or predict first)');
    const metadata = { optimizer_state: JSON.stringify(this.model.optimizers().map((o) => o.scalarState())) };
    // Under a job every rank writes its part at this same step (the loop agreed on it).
    if (this.world.size > 1) return this.checkpoints.saveSharded(this.step, items, metadata, this.world, delta);
    return this.checkpoints.save(this.step, items, metadata, delta);
  }

  /**
   * Trains until the input ends, `steps` more steps, or the global step reaches
   * `maxSteps`. Saves checkpoints as the RunConfig says and at the end.
   */
  async train(inputFn: InputFn, options: { maxSteps?: number; steps?: number; hooks?: TrainHook[] } = {}): Promise<this> {
    if (options?.maxSteps !== undefined && options.steps !== undefined) throw new Error('train: give steps or maxSteps, not both (as TF)');
    const batches = batchesOf(inputFn, 'train');
    try {
      await this.trainOn(batches, options);
    } finally {
      // Stops the input's readers when training ends before the input does.
      await batches.return(undefined);
    }
    return this;
  }

  /**
   * @internal Runs `run` with one progress (one bar on a terminal) for every training
   * segment in it, counting to `maxSteps` ('segment': to the first segment's stop), its
   * log lines printed above the bar. Inside another such call, that one's progress.
   */
  async withProgress<T>(maxSteps: number | undefined | 'segment', run: () => Promise<T>): Promise<T> {
    if (this.progress) return run();
    const chief = this.world.rank === 0;
    this.progress = new TrainingProgress({
      log: chief ? this.config.log : () => undefined,
      every: this.config.logStepCountSteps,
      showBar: this.config.progressBar && chief,
      total: maxSteps === 'segment' ? undefined : maxSteps,
      totalFromSegment: maxSteps === 'segment',
    });
    try {
      return await run();
    } finally {
      const progress = this.progress;
      this.progress = undefined;
      progress.stop();
    }
  }

  /**
   * @internal Trains from an iterator of batches. Says why it stopped; when a hook stopped
   * it, the batch already read for the next step comes back as `leftover`. With both
   * `steps` and `maxSteps`, it stops at whichever comes first, counted from the step the
   * restore settles on (a corrupt checkpoint found as it is read moves it back).
   */
  async trainOn(
    batches: AsyncIterator<Batch>,
    options: { maxSteps?: number; steps?: number; hooks?: readonly TrainHook[]; evaluateWhen?: EvaluateWhen },
  ): Promise<TrainStop> {
    const { maxSteps, steps } = options;
    for (const [k, v] of [['maxSteps', maxSteps], ['steps', steps]] as const) {
      if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) {
        const message = `train: ${k} must be an integer >= 0, got ${String(v)}`;
        throw typeof v === 'number' ? new RangeError(message) : new TypeError(message);
      }
    }
    await this.joinJob();
    const first = await batches.next();
    if (first.done) {
      const trained = this.model.get(ModeKeys.TRAIN);
      if (this.world.size > 1) {
        if (!trained) throw noBatchError('train', this.world.rank);
        // The other ranks go on into the next step (trainAndEvaluate resuming): it stops them.
        await this.restoreGlobalStep();
        const stopAt = Math.min(maxSteps ?? Infinity, steps !== undefined ? this.step + steps : Infinity);
        if (this.step < stopAt) await trained.step.announceStop();
      }
      return { reason: 'inputEnd' };
    }
    const built = await this.build(ModeKeys.TRAIN, first.value);
    const stopAt = Math.min(maxSteps ?? Infinity, steps !== undefined ? this.step + steps : Infinity);
    // Within train's or trainAndEvaluate's progress (a call of its own: one just for it).
    return this.withProgress('segment', () => runTrainLoop(
      {
        config: this.config,
        log: this.log,
        chief: this.world.rank === 0,
        progress: this.progress as TrainingProgress,
        savesCheckpoints: this.checkpoints !== undefined,
        globalStep: () => this.step,
        advance: () => {
          this.step++;
          this.restoredStep = undefined;
        },
        saveCheckpoint: (delta) => this.saveCheckpoint(delta),
      },
      built,
      first.value,
      batches,
      stopAt,
      options.hooks ?? [],
      options.evaluateWhen,
    ));
  }

  /** Runs the EVAL graph over the input (or `steps` batches): mean loss, global step and each metric. */
  async evaluate(inputFn: InputFn, options: { steps?: number; name?: string } = {}): Promise<EvaluateResult> {
    if (options.steps !== undefined && (!Number.isSafeInteger(options.steps) || options.steps < 1)) {
      const message = `evaluate: steps must be an integer >= 1, got ${String(options.steps)}`;
      throw typeof options.steps === 'number' ? new RangeError(message) : new TypeError(message);
    }
    const batches = batchesOf(inputFn, 'evaluate');
    try {
      return await this.evaluateOn(batches, options);
    } finally {
      await batches.return(undefined);
    }
  }

  /**
   * One evaluation at a time: the model's metrics accumulate in one set of native
   * accumulators, which a second evaluation at the same time would reset and fill with
   * its own rows (two concurrent evaluate() calls each reported a mix of both inputs).
   */
  private evaluateOn(batches: AsyncGenerator<Batch>, options: { steps?: number; name?: string }): Promise<EvaluateResult> {
    const run = this.evaluations.then(() => this.evaluateAlone(batches, options));
    this.evaluations = run.catch(() => undefined);
    return run;
  }

  private async evaluateAlone(batches: AsyncGenerator<Batch>, options: { steps?: number; name?: string }): Promise<EvaluateResult> {
    const first = await batches.next();
    if (first.done) throw this.world.size > 1 ? noBatchError('evaluate', this.world.rank) : new Error('evaluate: the input gave no batch');
    const built = await this.build(ModeKeys.EVAL, first.value);
    const metrics = Object.entries(built.spec.evalMetricOps);
    await Promise.all(metrics.map(([, m]) => m.reset()));
    let lossSum = 0;
    let count = 0;
    let current: IteratorResult<Batch> = first;
    const more = () => !current.done && (options.steps === undefined || count < options.steps);
    // Under a job, steps go on until no rank has a batch left: a rank whose input ended
    // runs empty batches meanwhile, so every rank's rows are evaluated.
    for (;;) {
      const mine = more();
      if (!mine && !built.step.inJob) break;
      let prepared;
      try {
        prepared = mine ? await built.step.prepare((current as IteratorYieldResult<Batch>).value) : built.step.emptyBatch();
      } catch (error) {
        await built.step.tellPeersOfFailure(`an evaluation batch of rank ${this.world.rank} failed: ${(error as Error)?.message}`);
        throw error;
      }
      // An empty batch takes part in the exchanges; its metrics add nothing (a step of no
      // rows accumulates nothing, native/exec/metric_kernels.cc).
      const result = await built.step.run(prepared, { hasBatch: mine });
      if (result.agreed && !result.agreed.hasBatch) break;
      if (!mine) continue;
      lossSum += (result.outputs[0] as Float32Array)[0];
      count++;
      if (options.steps !== undefined && count >= options.steps) {
        // Done: the input is not read past the batches evaluated (TF reads `steps` batches).
        current = { done: true, value: undefined };
        continue;
      }
      try {
        current = await batches.next();
      } catch (error) {
        await built.step.tellPeersOfFailure(`the evaluation input of rank ${this.world.rank} failed: ${(error as Error)?.message}`);
        throw error;
      }
    }
    if (this.world.size > 1) {
      // Over every rank's examples: the loss is the mean of all ranks' batch losses.
      const [sum, batchCount] = (await (await allreduce(tensor(Float64Array.from([lossSum, count]), [2], 'float64', { device: 'cpu' }), { op: 'sum' })).data()) as Float64Array;
      lossSum = sum;
      count = batchCount;
    }
    const out: EvaluateResult = { loss: Math.fround(lossSum / count), globalStep: this.step };
    for (const [name, m] of metrics) out[name] = await m.value();
    this.log(`evaluation${options.name ? ` (${options.name})` : ''} at step ${this.step}: ` + Object.entries(out).map(([k, v]) => `${k} = ${Number.isInteger(v) ? v : v.toPrecision(6)}`).join(', '));
    return out;
  }

  /**
   * The PREDICT graph's outputs, one object per example ({ key: number | Float32Array }),
   * or per batch ({ key: Float32Array of batch x width }) with yieldSingleExamples: false.
   */
  async *predict(inputFn: InputFn, options: { yieldSingleExamples?: boolean } = {}): AsyncGenerator<Record<string, number | Float32Array>> {
    const single = options.yieldSingleExamples ?? true;
    const batches = batchesOf(inputFn, 'predict');
    try {
      let current = await batches.next();
      if (current.done) {
        if (this.world.size > 1) throw noBatchError('predict', this.world.rank);
        return;
      }
      const built = await this.build(ModeKeys.PREDICT, current.value);
      // Under a job every rank predicts its own rows; one whose input ended runs empty
      // batches until no rank has one left (the lookups need every rank's shard).
      let agreedDone = false;
      try {
        for (;;) {
          const mine = !current.done;
          if (!mine && !built.step.inJob) return;
          let prepared: PreparedBatch;
          try {
            prepared = mine ? await built.step.prepare((current as IteratorYieldResult<Batch>).value) : built.step.emptyBatch();
          } catch (error) {
            await built.step.tellPeersOfFailure(`a prediction batch of rank ${this.world.rank} failed: ${(error as Error)?.message}`);
            agreedDone = true;
            throw error;
          }
          let result;
          try {
            result = await built.step.run(prepared, { hasBatch: mine });
          } catch (error) {
            agreedDone = true; // a failed step: nothing is owed after it
            throw error;
          }
          if (result.agreed && !result.agreed.hasBatch) {
            agreedDone = true;
            return;
          }
          if (!mine) continue;
          const outputs = result.outputs as Float32Array[];
          if (!single) {
            yield Object.fromEntries(built.predictionKeys.map((k, i) => [k, outputs[i]]));
          } else {
            for (let row = 0; row < result.batchSize; row++) {
              const example: Record<string, number | Float32Array> = {};
              built.predictionKeys.forEach((k, i) => {
                const w = built.widths[i];
                example[k] = w === 1 ? outputs[i][row] : outputs[i].slice(row * w, (row + 1) * w);
              });
              yield example;
            }
          }
          try {
            current = await batches.next();
          } catch (error) {
            await built.step.tellPeersOfFailure(`the prediction input of rank ${this.world.rank} failed: ${(error as Error)?.message}`);
            agreedDone = true;
            throw error;
          }
        }
      } finally {
        // Under a job, a loop that stopped early here (a break) still owes the others its
        // part of their steps: empty ones, until no rank has a batch left.
        if (built.step.inJob && !agreedDone) {
          for (;;) {
            const result = await built.step.run(built.step.emptyBatch(), { hasBatch: false });
            if (!result.agreed?.hasBatch) break;
          }
        }
      }
    } finally {
      await batches.return(undefined);
    }
  }
}

/** A rank of a job whose input gave no batch at all cannot take part (it cannot build the model the others run). */
function noBatchError(what: string, rank: number): Error {
  return new Error(
    `${what}: the input of rank ${rank} gave no batch; under a job every rank needs at least one (its partition of the data is empty: ` +
      'give the dataset more rows than ranks)',
  );
}
