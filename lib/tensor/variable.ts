// hb.variable: a tensor that owns its memory and that optimizers update in place.
import { resolveDevice } from '../backend';
import { Initializer } from '../initializers/initializers';
import { seedFor } from '../initializers/random_seed';
import { native } from '../native';
import { checkDType, DType, dtypeOfTypedArray, isTypedArray, TypedArray, typedArrayFrom } from './dtype';
import { ScopedValue } from './scoped_value';
import { Tensor } from './tensor';
import { checkOptionKeys } from '../option_keys';

export interface VariableOptions {
  /** Default 'Variable', then 'Variable_1', ... as TensorFlow names them. */
  name?: string;
  trainable?: boolean;
  /** Default: the current device. */
  device?: string;
  /** Required with an initializer; otherwise checked against the values. */
  shape?: number[];
  /** For plain-array values (default float32). */
  dtype?: DType;
  /**
   * @internal Keep `name` as given instead of making it unique in the process: a model's
   * variable store names its variables itself (the checkpoint's names).
   */
  exactName?: boolean;
  /**
   * @internal This variable is the shard of a [rows, dim] table held by one rank: local
   * row j is the table's row j * stride + offset, and an initializer gives it that row's
   * values (the table is the same at any world size).
   */
  shardOf?: { rows: number; stride: number; offset: number };
}

/**
 * @internal What makes an optimizer's slots for a variable that is part of something
 * larger (an embedding table keeps its slots beside its rows, in its own storage).
 */
export interface SlotOwner {
  createSlot(name: string, initialValue: number, perRow: boolean): Variable;
  /** How the rows are spread over the ranks of a job (an embedding table's placement). */
  readonly placement?: { kind: 'local' | 'sharded' | 'replicated' };
}

export type VariableInitialValue = Initializer | Tensor | TypedArray | number[] | number[][];

const usedNames = new Map<string, number>();

function uniqueName(name: string): string {
  const count = usedNames.get(name) ?? 0;
  usedNames.set(name, count + 1);
  return count === 0 ? name : `${name}_${count}`;
}

export class Variable extends Tensor {
  readonly name: string;
  readonly trainable: boolean;
  /** @internal Set by an embedding table on its storage variable. */
  slotOwner?: SlotOwner;

  /** @internal Use hb.variable(). */
  constructor(handle: ConstructorParameters<typeof Tensor>[0], name: string, trainable: boolean) {
    super(handle);
    this.name = name;
    this.trainable = trainable;
  }

  /** A concrete copy of the current value, after every queued update. */
  read(): Promise<Tensor> {
    return this.clone();
  }

  /**
   * Replaces the values with `value`'s (same dtype and number of elements; any device),
   * after every update queued before it.
   */
  async assign(value: Tensor): Promise<void> {
    if (!(value instanceof Tensor)) throw new TypeError(`assign(${this.name}): value must be a tensor`);
    await native.tensorAssign(this.handle, value.handle);
  }

  toString(): string {
    return `Variable('${this.name}', ${this.dtype}, [${this.shape.join(', ')}], ${this.device})`;
  }
}

// While a model is planned (hb.estimator.memoryPlan), variables are made without memory:
// a handle with the shape and dtype they would have, which graph building reads and
// nothing runs on.
// The flag follows the planning build through its awaits (and only it), so a model
// trained meanwhile makes real variables.
const planning = new ScopedValue<boolean>();

/** @internal Runs `build` with variables made without memory (see isPlanning). */
export function withPlannedVariables<T>(build: () => Promise<T>): Promise<T> {
  return planning.run(true, build);
}

/** @internal Whether variables made now are planned ones. */
export function isPlanning(): boolean {
  return planning.get() === true;
}

// While a model is built that will be restored from a checkpoint at once (nothing trained
// since), a variable the checkpoint holds is made as zeros: its initializer's values would
// be overwritten by the restore (a 16M x 64 truncated-normal table takes ~19 s to fill on
// 2 cores). The restore either succeeds or stops the run, so the zeros are never trained.
const restoredSoon = new ScopedValue<ReadonlySet<string>>();

/** @internal Runs `build` with the variables named in `names` made as zeros (see restoredSoon). */
export function withRestoredNames<T>(names: ReadonlySet<string>, build: () => Promise<T>): Promise<T> {
  return restoredSoon.run(names, build);
}

/** @internal A variable of `shape` without memory, for a planned model. */
export function plannedVariable(name: string, shape: readonly number[], dtype: DType, device: string, trainable: boolean): Variable {
  const handle = {
    shape: [...shape],
    dtype,
    device,
    disposed: false,
    dispose() {},
  };
  return new Variable(handle, name, trainable);
}

/** Rows offset, offset + stride, ... of a row-major [rows, ...] block: a shard's rows. */
function shardRows(values: Float32Array, whole: readonly number[], shard: { stride: number; offset: number }): Float32Array {
  const width = whole.slice(1).reduce((a, b) => a * b, 1);
  const local = Math.max(0, Math.ceil((whole[0] - shard.offset) / shard.stride));
  const out = new Float32Array(local * width);
  // Initialization, once per table: a copy per row, no per-element work.
  for (let j = 0; j < local; j++) {
    const row = j * shard.stride + shard.offset;
    out.set(values.subarray(row * width, (row + 1) * width), j * width);
  }
  return out;
}

function shapeOf(values: unknown[]): number[] {
  if (values.length > 0 && Array.isArray(values[0])) return [values.length, (values[0] as unknown[]).length];
  return [values.length];
}

/**
 * A variable from an initializer (with options.shape), a tensor, a typed array or
 * nested arrays. The values are copied: later writes to the source are not seen.
 */
export function variable(initialValue: VariableInitialValue, options: VariableOptions = {}): Variable {
  checkOptionKeys(options, ['name', 'trainable', 'device', 'shape', 'dtype', 'exactName', 'shardOf'], 'variable');
  const device = resolveDevice(options.device, 'variable: options.device');
  if (options.name !== undefined && typeof options.name !== 'string') throw new TypeError('variable: options.name must be a non-empty string');
  if (options.name === '') throw new Error('variable: options.name must be a non-empty string');
  const name = options.exactName && options.name !== undefined ? options.name : uniqueName(options.name ?? 'Variable');
  const trainable = options.trainable ?? true;
  if (isPlanning()) {
    if (!options.shape && !(initialValue instanceof Tensor) && !isTypedArray(initialValue) && !Array.isArray(initialValue)) throw new Error(`variable(${name}): an initializer needs options.shape`);
    const shape = options.shape ?? (initialValue instanceof Tensor ? [...initialValue.shape] : isTypedArray(initialValue) ? [initialValue.length] : shapeOf(initialValue as unknown[]));
    return plannedVariable(name, shape, 'float32', device, trainable);
  }
  let handle;
  if (initialValue instanceof Initializer) {
    if (!options.shape) throw new Error(`variable(${name}): an initializer needs options.shape`);
    if (options.dtype !== undefined && options.dtype !== 'float32') {
      throw new TypeError(`variable(${name}): initializers make float32 values, not ${options.dtype}`);
    }
    const shard = options.shardOf;
    const whole = shard ? [shard.rows, ...options.shape.slice(1)] : options.shape;
    const given = restoredSoon.get()?.has(name) ? 'restored' : initialValue.valuesFor(whole);
    if (given === 'restored') {
      handle = native.tensorFill(options.shape, device, { kind: 'constant', value: 0 });
    } else if (given) {
      handle = native.tensorFromTypedArray(shard ? shardRows(given, whole, shard) : given, options.shape, device);
    } else {
      // Fan-based initializers see the whole table's shape, not the shard's.
      const spec = initialValue.fillSpec(whole);
      const seeded = spec.seed === undefined && spec.kind !== 'constant' ? { ...spec, seed: seedFor(name) } : spec;
      handle = native.tensorFill(options.shape, device, shard ? { ...seeded, rowStride: shard.stride, rowOffset: shard.offset } : seeded);
    }
  } else if (initialValue instanceof Tensor) {
    if (options.shape && options.shape.join() !== initialValue.shape.join()) {
      throw new RangeError(`variable(${name}): options.shape [${options.shape}] differs from the tensor's [${initialValue.shape}]`);
    }
    const copy = native.tensorCopy(initialValue.handle, device);
    // The copy is queued on the variable's device ahead of any use of the variable. It
    // fails only if that device fails, and then the next operation there says why.
    copy.done.catch(() => undefined);
    handle = copy.handle;
  } else {
    let values: TypedArray;
    let shape: number[];
    if (isTypedArray(initialValue)) {
      const own = dtypeOfTypedArray(initialValue) as DType;
      if (options.dtype !== undefined && checkDType(options.dtype, `variable(${name}): options.dtype`) !== own) {
        throw new TypeError(`variable(${name}): options.dtype '${options.dtype}' does not match the ${own} values`);
      }
      values = initialValue;
      shape = options.shape ?? [initialValue.length];
    } else if (Array.isArray(initialValue)) {
      const nested = initialValue as unknown[];
      if (nested.length > 0 && Array.isArray(nested[0])) {
        const width = (nested[0] as unknown[]).length;
        nested.forEach((row, i) => {
          if (!Array.isArray(row) || row.length !== width) {
            const message = `variable(${name}): rows have different lengths (row 0 has ${width}, row ${i} has ${Array.isArray(row) ? row.length : 'no array'})`;
            throw Array.isArray(row) ? new RangeError(message) : new TypeError(message);
          }
        });
      }
      const dtype = options.dtype !== undefined ? checkDType(options.dtype, `variable(${name}): options.dtype`) : 'float32';
      values = typedArrayFrom((nested as number[][]).flat() as number[], dtype, `variable(${name}): initialValue`);
      shape = options.shape ?? shapeOf(nested);
    } else {
      throw new TypeError(`variable(${name}): initialValue must be an initializer, a tensor, a typed array or an array`);
    }
    handle = native.tensorFromTypedArray(values, shape, device);
  }
  return new Variable(handle, name, trainable);
}
