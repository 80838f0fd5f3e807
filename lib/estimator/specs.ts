// tf.estimator.TrainSpec and EvalSpec.
import { InputFn } from './input';
import { checkOptionKeys } from '../option_keys';
import { shownValue } from '../shown_value';

export interface StepInfo {
  globalStep: number;
  loss: number;
  batchSize: number;
  /** Time the step's one native call ran. */
  nativeMs: number;
}

export interface TrainHook {
  /** After each step, with the step's loss; return false to stop training. */
  afterRun?(info: StepInfo): void | boolean | Promise<void | boolean>;
  end?(info: { globalStep: number }): void | Promise<void>;
}

function checkInputFn(fn: unknown, owner: string): InputFn {
  if (typeof fn !== 'function') throw new TypeError(`${owner}: inputFn must be a function returning a dataset or an (async) iterable of batches`);
  return fn as InputFn;
}

function optionalCount(value: unknown, owner: string, name: string, min = 1): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') throw new TypeError(`${owner}: ${name} must be an integer >= ${min}, got ${shownValue(value)}`);
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${owner}: ${name} must be an integer >= ${min}, got ${shownValue(value)}`);
  return value;
}

export class TrainSpec {
  readonly inputFn: InputFn;
  readonly maxSteps?: number;
  readonly hooks: readonly TrainHook[];
  constructor(init: { inputFn: InputFn; maxSteps?: number; hooks?: TrainHook[] }) {
    checkOptionKeys(init, ['inputFn', 'maxSteps', 'hooks'], 'TrainSpec');
    this.inputFn = checkInputFn(init?.inputFn, 'TrainSpec');
    this.maxSteps = optionalCount(init.maxSteps, 'TrainSpec', 'maxSteps');
    this.hooks = init.hooks ?? [];
  }
}

export class EvalSpec {
  readonly inputFn: InputFn;
  /** Batches per evaluation; default: until the input ends. */
  readonly steps?: number;
  readonly throttleSecs: number;
  readonly startDelaySecs: number;
  readonly name?: string;
  constructor(init: { inputFn: InputFn; steps?: number; throttleSecs?: number; startDelaySecs?: number; name?: string }) {
    checkOptionKeys(init, ['inputFn', 'steps', 'throttleSecs', 'startDelaySecs', 'name'], 'EvalSpec');
    this.inputFn = checkInputFn(init?.inputFn, 'EvalSpec');
    this.steps = optionalCount(init.steps, 'EvalSpec', 'steps');
    this.throttleSecs = optionalCount(init.throttleSecs ?? 600, 'EvalSpec', 'throttleSecs', 0) as number;
    this.startDelaySecs = optionalCount(init.startDelaySecs ?? 0, 'EvalSpec', 'startDelaySecs', 0) as number;
    this.name = init.name;
  }
}
