// The optimizer base: slots beside each variable, and applyGradients as one native
// update per (gradient, variable) pair, queued on the variable's device.
import { constant } from '../initializers/initializers';
import { native, NativeOptimizerHyper } from '../native';
import { IndexedSlices } from '../tensor/indexed_slices';
import { Tensor } from '../tensor/tensor';
import { isPlanning, Variable, variable } from '../tensor/variable';
import { gradients } from '../graph/autodiff';
import { SymbolicTensor, VariableStore } from '../graph/graph';
import { denseApply, sparseApply } from '../graph/ops/apply_gradients';
import { dataParallelGradients } from './data_parallel';
import { TrainOp } from './train_op';
import { shownValue } from '../shown_value';

export interface SlotSpec {
  /** TensorFlow's slot name ('accumulator', 'm', ...). */
  name: string;
  initialValue: number;
  /** One value per row instead of one per element (RowwiseAdagrad). */
  perRow?: boolean;
}

export type GradientAndVariable = [Tensor | IndexedSlices | null | undefined, Variable];

export abstract class Optimizer {
  /** TF's optimizer name ('Adagrad', 'Adam', ...): its slots are named `<variable>/<name>`, then `_1`, ... */
  readonly name: string;
  private readonly slots = new Map<Variable, Map<string, Variable>>();
  // applyGradients calls run one after another: each reads the scalars (Adam's beta
  // powers) the one before it advanced.
  private pending: Promise<void> = Promise.resolve();

  constructor(name: string | undefined, fallback: string) {
    if (name !== undefined && typeof name !== 'string') throw new TypeError(`${fallback}Optimizer: name must be a non-empty string`);
    if (name === '') throw new Error(`${fallback}Optimizer: name must be a non-empty string`);
    this.name = name ?? fallback;
  }

  /** @internal */
  protected abstract slotSpecs(): SlotSpec[];
  /** @internal The hyperparameters the native rule takes for this call. */
  protected abstract hyper(): NativeOptimizerHyper;
  /** @internal After every pair of one applyGradients call (Adam's beta powers). */
  protected finishStep(): void {}

  getSlotNames(): string[] {
    return this.slotSpecs().map((s) => s.name);
  }

  /** The slot variable `name` of `variable`, once applyGradients has created it. */
  getSlot(variable: Variable, name: string): Variable | undefined {
    return this.slots.get(variable)?.get(name);
  }

  /**
   * Applies each gradient to its variable with this optimizer's TF 1.15 rule. Dense
   * gradients update every element; IndexedSlices have duplicate rows summed and
   * update only those rows (but for Adam with lazy: false, whose moments decay
   * everywhere, as TF's). Pairs with no gradient are skipped, as TF does.
   */
  applyGradients(gradsAndVars: GradientAndVariable[]): Promise<void> {
    const run = this.pending.then(() => this.applyNow(gradsAndVars));
    this.pending = run.catch(() => undefined);
    return run;
  }

  private async applyNow(gradsAndVars: GradientAndVariable[]): Promise<void> {
    if (!Array.isArray(gradsAndVars)) throw new TypeError('applyGradients: expected an array of [gradient, variable] pairs');
    gradsAndVars.forEach((pair, i) => {
      if (!Array.isArray(pair)) throw new TypeError(`applyGradients: item ${i} must be a [gradient, variable] pair`);
      if (pair.length !== 2) throw new Error(`applyGradients: item ${i} must be a [gradient, variable] pair`);
      if (!(pair[1] instanceof Variable)) throw new TypeError(`applyGradients: item ${i}: the second element must be an hb.variable`);
      const grad = pair[0];
      if (grad != null && !(grad instanceof Tensor) && !(grad instanceof IndexedSlices)) {
        throw new TypeError(`applyGradients(${pair[1].name}): the gradient must be a tensor or hb.IndexedSlices`);
      }
    });
    const hyper = this.checkedHyper();
    const present = gradsAndVars.filter(([grad]) => grad != null);
    const apply = ([grad, v]: GradientAndVariable, checkOnly: boolean) => {
      const [slot0, slot1] = this.slotsFor(v);
      const s0 = slot0?.handle ?? null;
      const s1 = slot1?.handle ?? null;
      return grad instanceof IndexedSlices
        ? native.optimizerApply(hyper, v.handle, v.name, s0, s1, null, grad.values.handle, grad.indices, checkOnly)
        : native.optimizerApply(hyper, v.handle, v.name, s0, s1, (grad as Tensor).handle, null, null, checkOnly);
    };
    // All or nothing: every pair is checked before any update is queued.
    present.forEach((pair) => apply(pair, true));
    const updates = present.map((pair) => apply(pair, false));
    try {
      await Promise.all(updates);
    } finally {
      this.finishStep();
    }
  }

  /**
   * Adds the update of every trainable variable the loss depends on to the loss's graph
   * (inside a modelFn): dense variables get this optimizer's dense rule, embedding tables
   * a fused lookup backward + sparse update of the rows seen. Returns the train op for
   * EstimatorSpec.
   */
  minimize(loss: SymbolicTensor, options: { varList?: Variable[]; globalStep?: unknown; name?: string } = {}): TrainOp {
    if (!(loss instanceof SymbolicTensor)) throw new TypeError('minimize: loss must be a symbolic tensor (inside a modelFn)');
    const graph = loss.graph;
    const local = graph.inPhase('backward', () => gradients(loss, options.varList));
    if (local.length === 0) throw new Error('minimize: the loss depends on no trainable variable');
    // Under a job of several ranks: this rank's gradients combined with the others'.
    const grads = graph.inPhase('backward', () => dataParallelGradients(local, graph.world, options.name ?? this.name));
    const store = graph.store;
    const nodes = graph.inPhase('update', () => grads.map((g) => {
      const target = { variable: g.variable, slots: this.slotVariables(g.variable, store), optimizer: this };
      const name = `${options.name ?? this.name}/update_${g.variable.name}`;
      if (g.sparse && (g.variable.slotOwner as { dynamic?: boolean } | undefined)?.dynamic) this.checkDynamicTable(g.variable.name);
      if (g.sparse) return sparseApply(g.sparse, target, name);
      return denseApply(g.dense as SymbolicTensor, target, name);
    }));
    const trainOp = new TrainOp(loss, this, nodes, grads.map((g) => g.variable));
    graph.trainOps.push(trainOp);
    return trainOp;
  }

  /**
   * @internal Throws when this optimizer cannot train a dynamic table (an update that
   * touches every row, where a dynamic table's rows are only those it has seen).
   */
  protected checkDynamicTable(_table: string): void {}

  /** @internal The hyperparameters of the next update (a compiled step passes them to native code). */
  stepHyper(): NativeOptimizerHyper {
    return this.checkedHyper();
  }

  // The options were checked when the optimizer was made, but JS can assign them
  // afterwards (a learning-rate schedule): checked again at each use.
  private checkedHyper(): NativeOptimizerHyper {
    const hyper = this.hyper();
    const owner = `${this.constructor.name}(${this.name})`;
    for (const [key, value] of Object.entries(hyper)) {
      if (typeof value === 'number' && !Number.isFinite(value)) throw new Error(`${owner}: ${key} must be a finite number, got ${value}`);
    }
    if (!(hyper.learningRate >= 0)) throw new Error(`${owner}: learningRate must be a finite number >= 0, got ${hyper.learningRate}`);
    return hyper;
  }

  /** @internal Called after each compiled step that applied this optimizer. */
  afterStep(): void {
    this.finishStep();
  }

  /** @internal Scalars the optimizer keeps besides its slots (Adam's beta powers), for checkpoints. */
  scalarState(): Record<string, number> {
    return {};
  }

  /** @internal */
  restoreScalarState(_state: Record<string, number>): void {}

  /**
   * @internal The slot variables of `v`, made on first use beside it (by its owner, an
   * embedding table, when it has one). Named as TF names them: `<variable>/<optimizer
   * name>`, then `_1`, ..., unique in `store` (a model's variables) when there is one.
   */
  slotVariables(v: Variable, store?: VariableStore): Variable[] {
    return this.slotsFor(v, store);
  }

  private slotsFor(v: Variable, store?: VariableStore): Variable[] {
    // A model being planned gets slots without memory, kept out of this optimizer's own:
    // a later real build must make real ones.
    const planning = isPlanning();
    let byName = planning ? undefined : this.slots.get(v);
    if (byName && store) {
      // Slots made before (an eager applyGradients) still belong in the model's checkpoints.
      for (const slot of byName.values()) if (!store.slots.has(slot.name)) store.slots.set(slot.name, slot);
    }
    if (!byName) {
      const specs = this.slotSpecs();
      const names = store ? store.slotNames(v.name, this.name, specs.length) : specs.map((_, i) => `${v.name}/${this.name}${i ? `_${i}` : ''}`);
      const made = specs.map((spec, i) =>
        v.slotOwner
          ? v.slotOwner.createSlot(names[i], spec.initialValue, spec.perRow ?? false)
          : variable(constant(spec.initialValue), { shape: spec.perRow ? [v.shape.length ? v.shape[0] : 1] : [...v.shape], device: v.device, name: names[i], trainable: false, exactName: true }),
      );
      // Registered once all are made: a failure leaves no half-named set behind.
      made.forEach((slot) => store?.slots.set(slot.name, slot));
      byName = new Map(specs.map((spec, i) => [spec.name, made[i]]));
      if (!planning) this.slots.set(v, byName);
    }
    return [...byName.values()];
  }
}

/** Throws unless `value` is a finite number meeting `ok`, naming the option. */
export function checkOption(optimizer: string, option: string, value: unknown, ok: (x: number) => boolean, rule: string): number {
  if (typeof value !== 'number') throw new TypeError(`${optimizer}: ${option} must be ${rule}, got ${shownValue(value)}`);
  if (!Number.isFinite(value) || !ok(value)) throw new RangeError(`${optimizer}: ${option} must be ${rule}, got ${shownValue(value)}`);
  return value;
}
