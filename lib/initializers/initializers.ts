// hb.initializers: how a variable's first values are drawn. The values are computed
// natively on the variable's device (native/kernels/random_fill.h), deterministic for
// a seed. The generator is not TensorFlow's Philox stream: the same seed gives other
// numbers than TF, from the same distributions.
import { NativeFillSpec } from '../native';
import { shownValue } from '../shown_value';
import { checkOptionKeys } from '../option_keys';

export abstract class Initializer {
  /**
   * @internal The native fill for a tensor of `shape`. An initializer made without a
   * seed leaves it out: the variable supplies one (random_seed.ts's seedFor).
   */
  abstract fillSpec(shape: readonly number[]): NativeFillSpec;

  /**
   * @internal The values themselves, for an initializer that holds them (constant of
   * an array): row-major for the whole `shape`; undefined for one that draws its values.
   */
  valuesFor(_shape: readonly number[]): Float32Array | undefined {
    return undefined;
  }

  /** @internal Whether valuesFor gives the values (no per-element formula to draw from). */
  get holdsValues(): boolean {
    return false;
  }
}

function finite(value: unknown, argument: string): number {
  if (typeof value !== 'number') throw new TypeError(`${argument} must be a finite number, got ${shownValue(value)}`);
  if (!Number.isFinite(value)) throw new RangeError(`${argument} must be a finite number, got ${shownValue(value)}`);
  return value;
}

function seedOf(seed: unknown, argument: string): number | undefined {
  if (seed === undefined) return undefined;
  if (typeof seed !== 'number') throw new TypeError(`${argument} must be a non-negative integer, got ${shownValue(seed)}`);
  if (!Number.isSafeInteger(seed) || seed < 0) throw new RangeError(`${argument} must be a non-negative integer, got ${shownValue(seed)}`);
  return seed;
}

class ConstantInitializer extends Initializer {
  constructor(private readonly value: number) {
    super();
  }
  fillSpec(): NativeFillSpec {
    return { kind: 'constant', value: this.value };
  }
}

class UniformInitializer extends Initializer {
  constructor(
    private readonly minval: number,
    private readonly maxval: number,
    private readonly seed: number | undefined,
  ) {
    super();
  }
  fillSpec(): NativeFillSpec {
    return { kind: 'uniform', minval: this.minval, maxval: this.maxval, seed: this.seed };
  }
}

class TruncatedNormalInitializer extends Initializer {
  constructor(
    private readonly mean: number,
    private readonly stddev: number,
    private readonly seed: number | undefined,
  ) {
    super();
  }
  fillSpec(): NativeFillSpec {
    return { kind: 'truncatedNormal', mean: this.mean, stddev: this.stddev, seed: this.seed };
  }
}

/** TF's fan computation for glorot: [fanIn, fanOut]. */
function fans(shape: readonly number[]): [number, number] {
  if (shape.length === 0) return [1, 1];
  if (shape.length === 1) return [shape[0], shape[0]];
  const receptiveField = shape.slice(0, -2).reduce((a, b) => a * b, 1);
  return [shape[shape.length - 2] * receptiveField, shape[shape.length - 1] * receptiveField];
}

class GlorotUniformInitializer extends Initializer {
  constructor(private readonly seed: number | undefined) {
    super();
  }
  fillSpec(shape: readonly number[]): NativeFillSpec {
    const [fanIn, fanOut] = fans(shape);
    const limit = Math.sqrt(6 / Math.max(1, fanIn + fanOut));
    return { kind: 'uniform', minval: -limit, maxval: limit, seed: this.seed };
  }
}

// TF's constant_initializer with an array: the values of the whole variable, in
// row-major order (pretrained embeddings are loaded this way); a variable of another
// number of elements is refused.
class ValuesInitializer extends Initializer {
  constructor(private readonly values: Float32Array) {
    super();
  }
  fillSpec(): NativeFillSpec {
    throw new Error('initializers.constant: an array of values has no native fill; the variable copies them');
  }
  override get holdsValues(): boolean {
    return true;
  }
  override valuesFor(shape: readonly number[]): Float32Array {
    const size = shape.reduce((a, b) => a * b, 1);
    if (size !== this.values.length) {
      throw new RangeError(`initializers.constant: ${this.values.length} values do not fill a variable of shape [${shape.join(', ')}] (${size} elements)`);
    }
    return this.values;
  }
}

function flattenedValues(value: ArrayLike<unknown>): Float32Array {
  const argument = 'initializers.constant: value';
  if (value instanceof Float32Array || value instanceof Float64Array) {
    const out = Float32Array.from(value);
    const bad = out.findIndex((x) => !Number.isFinite(x));
    if (bad >= 0) throw new RangeError(`${argument}[${bad}] must be a finite number, got ${out[bad]}`);
    return out;
  }
  if (ArrayBuffer.isView(value)) throw new TypeError(`${argument} must be a number, an array of numbers or a Float32Array/Float64Array, got ${shownValue(value)}`);
  const flat: number[] = [];
  const walk = (items: ArrayLike<unknown>, path: string, width: number[], depth: number) => {
    if (width.length <= depth) width.push(items.length);
    else if (width[depth] !== items.length) throw new RangeError(`${argument}${path} has ${items.length} items where its siblings have ${width[depth]}`);
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (Array.isArray(item)) walk(item, `${path}[${i}]`, width, depth + 1);
      else flat.push(finite(item, `${argument}${path}[${i}]`));
    }
  };
  walk(value, '', [], 0);
  return Float32Array.from(flat);
}

/**
 * Every element `value`, or (TF's constant_initializer with an array) the variable's
 * values: a nested array or a Float32Array/Float64Array with as many elements as the
 * variable, in row-major order.
 */
export function constant(value: number | ArrayLike<unknown> = 0): Initializer {
  if (typeof value === 'object' && value !== null && typeof (value as ArrayLike<unknown>).length === 'number') {
    return new ValuesInitializer(flattenedValues(value as ArrayLike<unknown>));
  }
  return new ConstantInitializer(finite(value, 'initializers.constant: value'));
}

export function zeros(): Initializer {
  return new ConstantInitializer(0);
}

export function ones(): Initializer {
  return new ConstantInitializer(1);
}

/** TF1 defaults: mean 0, stddev 1; a normal restricted to 2 stddev around the mean, as TF's (drawn by its inverse CDF, no redraws). */
export function truncatedNormal(options: { mean?: number; stddev?: number; seed?: number } = {}): Initializer {
  checkOptionKeys(options, ['mean', 'stddev', 'seed'], 'initializers.truncatedNormal');
  const mean = finite(options.mean ?? 0, 'initializers.truncatedNormal: mean');
  const stddev = finite(options.stddev ?? 1, 'initializers.truncatedNormal: stddev');
  if (stddev < 0) throw new RangeError(`initializers.truncatedNormal: stddev must be >= 0, got ${stddev}`);
  return new TruncatedNormalInitializer(mean, stddev, seedOf(options.seed, 'initializers.truncatedNormal: seed'));
}

/** TF1 defaults: [0, 1). */
export function randomUniform(options: { minval?: number; maxval?: number; seed?: number } = {}): Initializer {
  checkOptionKeys(options, ['minval', 'maxval', 'seed'], 'initializers.randomUniform');
  const minval = finite(options.minval ?? 0, 'initializers.randomUniform: minval');
  const maxval = finite(options.maxval ?? 1, 'initializers.randomUniform: maxval');
  if (maxval < minval) throw new RangeError(`initializers.randomUniform: maxval (${maxval}) must be >= minval (${minval})`);
  return new UniformInitializer(minval, maxval, seedOf(options.seed, 'initializers.randomUniform: seed'));
}

/** Uniform in ±sqrt(6 / (fanIn + fanOut)). */
export function glorotUniform(options: { seed?: number } = {}): Initializer {
  checkOptionKeys(options, ['seed'], 'initializers.glorotUniform');
  return new GlorotUniformInitializer(seedOf(options.seed, 'initializers.glorotUniform: seed'));
}
