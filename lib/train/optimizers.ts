// TensorFlow 1.15's optimizers (training_ops.cc rules in native/kernels/optimizer_rules.h).
import { NativeOptimizerHyper } from '../native';
import { checkOption, Optimizer, SlotSpec } from './optimizer';
import { checkOptionKeys } from '../option_keys';

const positive = (x: number) => x > 0;
const nonNegative = (x: number) => x >= 0;
const unitInterval = (x: number) => x >= 0 && x < 1;

export class GradientDescentOptimizer extends Optimizer {
  readonly learningRate: number;
  constructor(options: { learningRate: number; name?: string }) {
    super(options?.name, 'GradientDescent');
    checkOptionKeys(options, ['learningRate', 'name'], 'GradientDescentOptimizer');
    this.learningRate = checkOption('GradientDescentOptimizer', 'learningRate', options?.learningRate, nonNegative, 'a finite number >= 0');
  }
  protected slotSpecs(): SlotSpec[] {
    return [];
  }
  protected hyper(): NativeOptimizerHyper {
    return { rule: 'gradientDescent', learningRate: this.learningRate };
  }
}

export class MomentumOptimizer extends Optimizer {
  readonly learningRate: number;
  readonly momentum: number;
  readonly useNesterov: boolean;
  constructor(options: { learningRate: number; momentum: number; useNesterov?: boolean; name?: string }) {
    super(options?.name, 'Momentum');
    checkOptionKeys(options, ['learningRate', 'momentum', 'useNesterov', 'name'], 'MomentumOptimizer');
    this.learningRate = checkOption('MomentumOptimizer', 'learningRate', options?.learningRate, nonNegative, 'a finite number >= 0');
    this.momentum = checkOption('MomentumOptimizer', 'momentum', options.momentum, nonNegative, 'a finite number >= 0');
    this.useNesterov = options.useNesterov ?? false;
  }
  protected slotSpecs(): SlotSpec[] {
    return [{ name: 'momentum', initialValue: 0 }];
  }
  protected hyper(): NativeOptimizerHyper {
    return { rule: 'momentum', learningRate: this.learningRate, momentum: this.momentum, nesterov: this.useNesterov };
  }
}

export class AdagradOptimizer extends Optimizer {
  readonly learningRate: number;
  readonly initialAccumulatorValue: number;
  constructor(options: { learningRate: number; initialAccumulatorValue?: number; name?: string }) {
    super(options?.name, 'Adagrad');
    checkOptionKeys(options, ['learningRate', 'initialAccumulatorValue', 'name'], 'AdagradOptimizer');
    this.learningRate = checkOption('AdagradOptimizer', 'learningRate', options?.learningRate, nonNegative, 'a finite number >= 0');
    this.initialAccumulatorValue = checkOption('AdagradOptimizer', 'initialAccumulatorValue', options.initialAccumulatorValue ?? 0.1, positive, 'a finite number > 0');
  }
  protected slotSpecs(): SlotSpec[] {
    return [{ name: 'accumulator', initialValue: this.initialAccumulatorValue }];
  }
  protected hyper(): NativeOptimizerHyper {
    return { rule: 'adagrad', learningRate: this.learningRate };
  }
}

export class AdamOptimizer extends Optimizer {
  readonly learningRate: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly epsilon: number;
  readonly lazy: boolean;
  // TF keeps beta1^t and beta2^t in float32 variables, multiplied after each step.
  private beta1Power: number;
  private beta2Power: number;
  constructor(options: { learningRate?: number; beta1?: number; beta2?: number; epsilon?: number; lazy?: boolean; name?: string } = {}) {
    super(options?.name, 'Adam');
    checkOptionKeys(options, ['learningRate', 'beta1', 'beta2', 'epsilon', 'lazy', 'name'], 'AdamOptimizer');
    this.learningRate = checkOption('AdamOptimizer', 'learningRate', options.learningRate ?? 0.001, nonNegative, 'a finite number >= 0');
    this.beta1 = checkOption('AdamOptimizer', 'beta1', options.beta1 ?? 0.9, unitInterval, 'in [0, 1)');
    this.beta2 = checkOption('AdamOptimizer', 'beta2', options.beta2 ?? 0.999, unitInterval, 'in [0, 1)');
    this.epsilon = checkOption('AdamOptimizer', 'epsilon', options.epsilon ?? 1e-8, positive, 'a finite number > 0');
    this.lazy = options.lazy ?? false;
    this.beta1Power = Math.fround(this.beta1);
    this.beta2Power = Math.fround(this.beta2);
  }
  protected override checkDynamicTable(table: string): void {
    if (!this.lazy) {
      throw new Error(
        `AdamOptimizer(${this.name}): embedding table '${table}' is dynamic, and TF's sparse Adam decays every row's moments each step; ` +
          'use AdamOptimizer({ lazy: true }) (LazyAdam: only the rows seen), as DeepRec does for EmbeddingVariables',
      );
    }
  }

  protected slotSpecs(): SlotSpec[] {
    return [
      { name: 'm', initialValue: 0 },
      { name: 'v', initialValue: 0 },
    ];
  }
  protected hyper(): NativeOptimizerHyper {
    return {
      rule: 'adam',
      learningRate: this.learningRate,
      beta1: this.beta1,
      beta2: this.beta2,
      epsilon: this.epsilon,
      lazy: this.lazy,
      beta1Power: this.beta1Power,
      beta2Power: this.beta2Power,
    };
  }
  scalarState(): Record<string, number> {
    return { beta1_power: this.beta1Power, beta2_power: this.beta2Power };
  }
  restoreScalarState(state: Record<string, number>): void {
    if (typeof state.beta1_power === 'number') this.beta1Power = state.beta1_power;
    if (typeof state.beta2_power === 'number') this.beta2Power = state.beta2_power;
  }
  protected finishStep(): void {
    this.beta1Power = Math.fround(this.beta1Power * Math.fround(this.beta1));
    this.beta2Power = Math.fround(this.beta2Power * Math.fround(this.beta2));
  }
}

export class FtrlOptimizer extends Optimizer {
  readonly learningRate: number;
  readonly learningRatePower: number;
  readonly initialAccumulatorValue: number;
  readonly l1RegularizationStrength: number;
  readonly l2RegularizationStrength: number;
  readonly l2ShrinkageRegularizationStrength: number;
  constructor(options: {
    learningRate: number;
    learningRatePower?: number;
    initialAccumulatorValue?: number;
    l1RegularizationStrength?: number;
    l2RegularizationStrength?: number;
    l2ShrinkageRegularizationStrength?: number;
    name?: string;
  }) {
    super(options?.name, 'Ftrl');
    checkOptionKeys(options, ['learningRate', 'learningRatePower', 'initialAccumulatorValue', 'l1RegularizationStrength', 'l2RegularizationStrength', 'l2ShrinkageRegularizationStrength', 'name'], 'FtrlOptimizer');
    const name = 'FtrlOptimizer';
    this.learningRate = checkOption(name, 'learningRate', options?.learningRate, positive, 'a finite number > 0');
    this.learningRatePower = checkOption(name, 'learningRatePower', options.learningRatePower ?? -0.5, (x) => x <= 0, 'a finite number <= 0');
    this.initialAccumulatorValue = checkOption(name, 'initialAccumulatorValue', options.initialAccumulatorValue ?? 0.1, nonNegative, 'a finite number >= 0');
    this.l1RegularizationStrength = checkOption(name, 'l1RegularizationStrength', options.l1RegularizationStrength ?? 0, nonNegative, 'a finite number >= 0');
    this.l2RegularizationStrength = checkOption(name, 'l2RegularizationStrength', options.l2RegularizationStrength ?? 0, nonNegative, 'a finite number >= 0');
    this.l2ShrinkageRegularizationStrength = checkOption(name, 'l2ShrinkageRegularizationStrength', options.l2ShrinkageRegularizationStrength ?? 0, nonNegative, 'a finite number >= 0');
  }
  protected slotSpecs(): SlotSpec[] {
    return [
      { name: 'accum', initialValue: this.initialAccumulatorValue },
      { name: 'linear', initialValue: 0 },
    ];
  }
  protected hyper(): NativeOptimizerHyper {
    return {
      rule: 'ftrl',
      learningRate: this.learningRate,
      learningRatePower: this.learningRatePower,
      l1: this.l1RegularizationStrength,
      l2: this.l2RegularizationStrength,
      l2Shrinkage: this.l2ShrinkageRegularizationStrength,
    };
  }
}

/**
 * One accumulator per row (FBGEMM / TorchRec's row-wise Adagrad): it grows by the mean
 * of the row's squared gradient; var -= lr * g / (sqrt(accumulator) + epsilon).
 * `epsilon` (default 1e-8, FBGEMM's) is an hb-ts addition to the API: without it a row whose gradients
 * are all zero from the start would divide 0 by 0.
 */
export class RowwiseAdagradOptimizer extends Optimizer {
  readonly learningRate: number;
  readonly initialAccumulatorValue: number;
  readonly epsilon: number;
  constructor(options: { learningRate: number; initialAccumulatorValue?: number; epsilon?: number; name?: string }) {
    super(options?.name, 'RowwiseAdagrad');
    checkOptionKeys(options, ['learningRate', 'initialAccumulatorValue', 'epsilon', 'name'], 'RowwiseAdagradOptimizer');
    this.learningRate = checkOption('RowwiseAdagradOptimizer', 'learningRate', options?.learningRate, nonNegative, 'a finite number >= 0');
    this.initialAccumulatorValue = checkOption('RowwiseAdagradOptimizer', 'initialAccumulatorValue', options.initialAccumulatorValue ?? 0, nonNegative, 'a finite number >= 0');
    this.epsilon = checkOption('RowwiseAdagradOptimizer', 'epsilon', options.epsilon ?? 1e-8, positive, 'a finite number > 0');
  }
  protected slotSpecs(): SlotSpec[] {
    return [{ name: 'accumulator', initialValue: this.initialAccumulatorValue, perRow: true }];
  }
  protected hyper(): NativeOptimizerHyper {
    return { rule: 'rowwiseAdagrad', learningRate: this.learningRate, epsilon: this.epsilon };
  }
}
