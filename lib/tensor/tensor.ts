// Concrete tensors: a typed facade over a native tensor handle.
import { resolveDevice } from '../backend';
import { native, NativeTensorHandle } from '../native';
import { checkOptionKeys } from '../option_keys';
import { shownValue } from '../shown_value';
import { checkDType, DType, dtypeOfTypedArray, isTypedArray, TypedArray, typedArrayFrom } from './dtype';

export type TensorLike = TypedArray | number[] | number[][] | bigint[];

/** tensor.data's options (in place of an array to read into). */
export interface DataOptions {
  /** Dispose of the tensor as it is read (its memory may then become the array's). */
  dispose?: boolean;
}

export interface TensorOptions {
  /** 'cpu', 'cuda' or 'cuda:N'; default: the current device (hb.setDevice). */
  device?: string;
}

export class Tensor {
  /** @internal */
  readonly handle: NativeTensorHandle;
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** 'cpu' or 'cuda:N'. */
  readonly device: string;

  /** @internal Use hb.tensor(). */
  constructor(handle: NativeTensorHandle) {
    if (handle.disposed) throw new Error('tensor: the native tensor has been disposed');
    this.handle = handle;
    this.shape = Object.freeze([...(handle.shape as number[])]);
    this.dtype = handle.dtype as DType;
    this.device = handle.device as string;
  }

  get rank(): number {
    return this.shape.length;
  }

  get size(): number {
    return this.shape.reduce((a, b) => a * b, 1);
  }

  get isDisposed(): boolean {
    return this.handle.disposed;
  }

  /**
   * The values, read after all work queued before on the device: in a new typed array, or
   * written into `into` (the kind data() returns, of the tensor's size), which the promise
   * then resolves to. A loop that passes the same `into` each time writes memory already
   * mapped instead of new pages; transferring `into` before the promise settles rejects it.
   *
   * `{ dispose: true }`: the values in a new array, and the tensor disposed at once, as
   * `data()` then `dispose()`. Where the tensor's host memory (64 KiB or more) is its alone
   * (an op's result, or a variable nothing else holds; not memory another tensor or queued
   * work still reads, nor a GPU tensor's) the array is that memory, handed over without a
   * copy.
   */
  data(): Promise<TypedArray>;
  data<A extends TypedArray>(into: A): Promise<A>;
  data(options: DataOptions): Promise<TypedArray>;
  data(intoOrOptions?: TypedArray | DataOptions): Promise<TypedArray> {
    if (intoOrOptions === undefined) return native.tensorData(this.handle);
    // Any view or buffer goes to the native check of `into`, which names the kind it needs.
    if (ArrayBuffer.isView(intoOrOptions) || intoOrOptions instanceof ArrayBuffer) return native.tensorData(this.handle, intoOrOptions as TypedArray);
    const prototype = intoOrOptions !== null && typeof intoOrOptions === 'object' ? Object.getPrototypeOf(intoOrOptions) : undefined;
    if (prototype !== Object.prototype && prototype !== null) {
      throw new TypeError(`tensor.data: the argument must be a typed array to read into or { dispose }, got ${shownValue(intoOrOptions)}`);
    }
    checkOptionKeys(intoOrOptions, ['dispose'], 'tensor.data: options');
    const { dispose } = intoOrOptions;
    if (dispose !== undefined && typeof dispose !== 'boolean') {
      throw new TypeError(`tensor.data: options.dispose must be a boolean, got ${shownValue(dispose)}`);
    }
    return dispose ? native.tensorDataDispose(this.handle) : native.tensorData(this.handle);
  }

  /** The values as nested arrays (numbers, or bigints for int64). */
  async array(): Promise<unknown> {
    const flat = Array.from((await this.data()) as ArrayLike<number | bigint>);
    const nest = (offset: number, dim: number): unknown => {
      if (dim === this.shape.length) return flat[offset];
      const stride = this.shape.slice(dim + 1).reduce((a, b) => a * b, 1);
      return Array.from({ length: this.shape[dim] }, (_, i) => nest(offset + i * stride, dim + 1));
    };
    return nest(0, 0);
  }

  /** A copy on the same device. */
  async clone(): Promise<Tensor> {
    return new Tensor(await native.tensorClone(this.handle));
  }

  /** Frees the memory now. Later use of this tensor throws. */
  dispose(): void {
    this.handle.dispose();
  }

  toString(): string {
    return `Tensor(${this.dtype}, [${this.shape.join(', ')}], ${this.device})`;
  }
}

/** Flattens number[][] (checked rectangular) and infers its shape. */
function flattenNested(values: unknown[], argument: string): { flat: (number | bigint)[]; shape: number[] } {
  if (values.length > 0 && Array.isArray(values[0])) {
    const width = (values[0] as unknown[]).length;
    const flat: (number | bigint)[] = [];
    values.forEach((row, i) => {
      if (!Array.isArray(row)) throw new TypeError(`${argument}[${i}] must be an array like ${argument}[0]`);
      if (row.length !== width) {
        throw new RangeError(`${argument}: rows have different lengths (row 0 has ${width}, row ${i} has ${row.length})`);
      }
      flat.push(...(row as (number | bigint)[]));
    });
    return { flat, shape: [values.length, width] };
  }
  return { flat: values as (number | bigint)[], shape: [values.length] };
}

/**
 * A concrete tensor holding a copy of `values` (later writes to a typed array given are
 * not seen by the tensor, and the array may be transferred or dropped at once). Plain
 * numbers default to float32, bigints to int64. Arrays over a SharedArrayBuffer are
 * refused.
 */
export function tensor(values: TensorLike, shape?: number[], dtype?: DType, options: TensorOptions = {}): Tensor {
  const device = resolveDevice(options.device, 'tensor: options.device');
  let array: TypedArray;
  let inferredShape: number[];
  if (isTypedArray(values)) {
    const own = dtypeOfTypedArray(values) as DType;
    if (dtype !== undefined && checkDType(dtype, 'tensor: dtype') !== own) {
      throw new TypeError(`tensor: dtype '${dtype}' does not match the ${own} values given`);
    }
    array = values;
    inferredShape = [values.length];
  } else if (Array.isArray(values)) {
    const { flat, shape: nestedShape } = flattenNested(values, 'tensor: values');
    const chosen = dtype !== undefined ? checkDType(dtype, 'tensor: dtype') : typeof flat[0] === 'bigint' ? 'int64' : 'float32';
    array = typedArrayFrom(flat, chosen, 'tensor: values');
    inferredShape = nestedShape;
  } else {
    throw new TypeError('tensor: values must be a typed array, an array of numbers or an array of arrays');
  }
  const finalShape = shape ?? inferredShape;
  return new Tensor(native.tensorFromTypedArray(array, finalShape, device));
}
