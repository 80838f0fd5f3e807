// The model builder: a modelFn run once per mode on symbolic features shaped like the
// first batch, its graph compiled to one native plan. The graphs of the three modes share
// one store of variables (by name), so what TRAIN learns EVAL and PREDICT read. Nothing
// here switches the process's device: the graph carries the model's device, and what a
// modelFn makes inside it (layers, tables, metric state) goes there.
import type { Batch } from '../data/batch';
import { CompiledStep } from '../graph/compiled_step';
import { Graph, GraphWorld, Node, SymbolicTensor, VariableStore, withGraph } from '../graph/graph';
import { assertFinite } from '../graph/ops/assert_finite';
import { stepSync } from '../graph/ops/exchange';
import { withGraphSeed } from '../initializers/random_seed';
import { RawFeature, symbolicFeatures, symbolicLabels } from '../graph/symbolic_features';
import { Optimizer } from '../train/optimizer';
import { withPlannedVariables } from '../tensor/variable';
import { EstimatorSpec } from './estimator_spec';
import { Mode, ModeKeys } from './mode_keys';

/**
 * What a modelFn's features hold, by name: a float32 SymbolicTensor ([batch] or [batch, n])
 * for each numeric feature, and a RawFeature for the others (strings, ragged ids), which
 * only feature columns read (DenseFeatures(columns)(features)).
 */
export type ModelFeatures = Readonly<Record<string, SymbolicTensor | RawFeature>>;

/** What a modelFn's labels can be: one tensor, or one per name when labelField is a list. */
export type ModelLabels = SymbolicTensor | Readonly<Record<string, SymbolicTensor>>;

/**
 * tf.estimator's model_fn: (features, labels, mode, params) => EstimatorSpec, called once per
 * mode with symbolic features and labels. `labels` is the labels' SymbolicTensor (what
 * hb.losses and hb.metrics take); as in TensorFlow it is undefined in PREDICT mode, where a
 * modelFn returns before reading it. When labelField is a list, labels is a record of
 * tensors: type L as ModelLabels there and narrow. F may name the features (SymbolicTensor
 * for numeric ones, RawFeature for the others).
 */
export type ModelFn<F = ModelFeatures, L = SymbolicTensor, P = Record<string, unknown>> = (
  features: F,
  labels: L,
  mode: Mode,
  params: P,
) => EstimatorSpec | Promise<EstimatorSpec>;

export interface BuiltModel {
  graph: Graph;
  spec: EstimatorSpec;
  step: CompiledStep;
  /** Keys of the fetched predictions, in fetch order (PREDICT). */
  predictionKeys: string[];
  /** Width of each fetched value per example. */
  widths: number[];
}

export class ModelBuilder {
  readonly store = new VariableStore();
  private readonly built = new Map<Mode, BuiltModel>();

  constructor(
    private readonly modelFn: ModelFn,
    private readonly params: Record<string, unknown>,
    /** Where the plans run and the model's variables live. */
    readonly device: string,
    /** RunConfig's tfRandomSeed: the graph-level seed of the model's unseeded initializers. */
    private readonly randomSeed?: number,
    /** The job the model trains in: its steps exchange with the other ranks. */
    readonly world: GraphWorld = { size: 1, rank: 0 },
  ) {}

  /** The model of `mode`, if built. */
  get(mode: Mode): BuiltModel | undefined {
    return this.built.get(mode);
  }

  /** The model of `mode`, built on symbolic inputs shaped like `example` the first time. */
  async build(mode: Mode, example: Batch): Promise<BuiltModel> {
    const existing = this.built.get(mode);
    if (existing) return existing;
    // Variables are made while the modelFn runs and the step compiles.
    return withGraphSeed(this.randomSeed, () => this.buildNow(mode, example));
  }

  private async buildNow(mode: Mode, example: Batch): Promise<BuiltModel> {
    const graph = new Graph(this.store, mode, this.device, this.world);
    // Under a job, the step's first exchange: made first, so it runs first.
    const sync = this.world.size > 1 ? stepSync(graph, this.world.size) : undefined;
    const features = symbolicFeatures(graph, example);
    const labels = mode === ModeKeys.PREDICT ? undefined : symbolicLabels(graph, example);
    // labels: undefined in PREDICT, and a record when labelField is a list (ModelFn's L says which).
    const spec = await withGraph(graph, () => this.modelFn(features, labels as SymbolicTensor, mode, this.params));
    if (spec === null || typeof spec !== 'object' || !('trainOps' in spec)) {
      throw new TypeError(`Estimator: modelFn must return hb.estimator.EstimatorSpec({ ... }) (mode ${mode})`);
    }
    if (spec.mode !== mode) throw new Error(`Estimator: modelFn was called for mode '${mode}' but returned a spec for '${spec.mode}'`);
    const fetches: SymbolicTensor[] = [];
    const effects: Node[] = [];
    const predictionKeys: string[] = [];
    if (mode === ModeKeys.TRAIN) {
      const loss = spec.loss as SymbolicTensor;
      // A NaN loss stops the step before any update is applied (TF's NanTensorHook).
      effects.push(assertFinite(loss, 'loss'));
      for (const op of spec.trainOps) {
        if (op.loss.graph !== graph) throw new Error('Estimator: trainOp was made from another modelFn call');
        effects.push(...op.nodes);
      }
      fetches.push(loss);
    } else if (mode === ModeKeys.EVAL) {
      fetches.push(spec.loss as SymbolicTensor);
      for (const m of Object.values(spec.evalMetricOps)) effects.push(...m.nodes);
    } else {
      for (const [k, t] of predictionsOf(spec)) {
        predictionKeys.push(k);
        fetches.push(t);
      }
    }
    const step = new CompiledStep(graph, fetches, effects, {}, sync && { ...sync, rank: this.world.rank });
    const widths = fetches.map((t) => t.shape.reduce((n, d) => (d < 0 ? n : n * d), 1));
    const made: BuiltModel = { graph, spec, step, predictionKeys, widths };
    this.built.set(mode, made);
    return made;
  }

  /**
   * The TRAIN model built on `example` as a plan, without memory: its variables, tables
   * and optimizer slots made in a store of their own with their shapes only (nothing
   * allocated, nothing compiled, the model's own store untouched).
   */
  async plan(example: Batch): Promise<{ store: VariableStore; graph: Graph }> {
    const store = new VariableStore();
    const graph = new Graph(store, ModeKeys.TRAIN, this.device, this.world);
    await withPlannedVariables(() =>
      withGraphSeed(this.randomSeed, async () => {
        const features = symbolicFeatures(graph, example);
        const labels = symbolicLabels(graph, example);
        const spec = await withGraph(graph, () => this.modelFn(features, labels as SymbolicTensor, ModeKeys.TRAIN, this.params));
        if (spec === null || typeof spec !== 'object' || !('trainOps' in spec)) throw new TypeError('Estimator: modelFn must return hb.estimator.EstimatorSpec({ ... }) (mode train)');
      }),
    );
    return { store, graph };
  }

  /**
   * The PREDICT model as an export holds it: built on `example` in a store of its own,
   * with variables that hold no memory (their values come from a checkpoint), in one
   * process whatever the job (no exchanges), and not made into a native plan.
   */
  async exportGraph(example: Batch): Promise<{ graph: Graph; predictions: Array<[string, SymbolicTensor]> }> {
    const graph = new Graph(new VariableStore(), ModeKeys.PREDICT, 'cpu');
    const spec = await withPlannedVariables(() =>
      withGraphSeed(this.randomSeed, () => withGraph(graph, () => this.modelFn(symbolicFeatures(graph, example), undefined as unknown as SymbolicTensor, ModeKeys.PREDICT, this.params))),
    );
    if (spec === null || typeof spec !== 'object' || !('trainOps' in spec)) throw new TypeError('Estimator: modelFn must return hb.estimator.EstimatorSpec({ ... }) (mode infer)');
    return { graph, predictions: predictionsOf(spec) };
  }

  /** The optimizers of the train graph (once built), in first-use order. */
  optimizers(): Optimizer[] {
    const train = this.built.get(ModeKeys.TRAIN);
    return train ? [...new Set(train.spec.trainOps.map((op) => op.optimizer as Optimizer))] : [];
  }
}

/** A PREDICT spec's outputs by key (a single tensor is 'predictions', as TF names it). */
function predictionsOf(spec: EstimatorSpec): Array<[string, SymbolicTensor]> {
  const p = spec.predictions as SymbolicTensor | Record<string, SymbolicTensor> | undefined;
  if (p === undefined || p === null) throw new TypeError('EstimatorSpec: predictions are required in PREDICT mode');
  const entries = p instanceof SymbolicTensor ? [['predictions', p] as [string, SymbolicTensor]] : Object.entries(p);
  for (const [k, t] of entries) {
    if (!(t instanceof SymbolicTensor)) throw new TypeError(`EstimatorSpec: predictions.${k} must be a symbolic tensor`);
  }
  return entries;
}
