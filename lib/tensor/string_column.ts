// A column of strings as native code wants it: one UTF-8 buffer plus n + 1 offsets,
// so hashing and vocabulary lookups read it without converting value by value.

const encoder = new TextEncoder();

function describe(value: unknown): string {
  return value === null ? 'null' : typeof value === 'object' ? (value as object).constructor?.name ?? 'an object' : typeof value;
}
const decoder = new TextDecoder('utf-8');

/**
 * Row i is bytes[offsets[i] .. offsets[i + 1]). The constructor checks the ends only:
 * a column is made per batch, and native code checks every offset before reading. `valid`, when present, marks missing
 * values with 0 (a missing value has no bytes); without it every value is present.
 * Binary columns use the same layout (get() then decodes the bytes as UTF-8).
 */
export class StringColumn {
  readonly bytes: Uint8Array;
  readonly offsets: Int32Array;
  readonly valid?: Uint8Array;

  constructor(bytes: Uint8Array, offsets: Int32Array, valid?: Uint8Array) {
    if (!(bytes instanceof Uint8Array)) throw new TypeError(`StringColumn: bytes must be a Uint8Array (UTF-8), got ${describe(bytes)}`);
    if (valid !== undefined && !(valid instanceof Uint8Array)) throw new TypeError(`StringColumn: valid must be a Uint8Array of 0/1 flags, got ${describe(valid)}`);
    if (!(offsets instanceof Int32Array) || offsets.length < 1) {
      const message = 'StringColumn: offsets must be an Int32Array of n + 1 values';
      throw offsets instanceof Int32Array ? new RangeError(message) : new TypeError(message);
    }
    const n = offsets.length - 1;
    if (offsets[0] !== 0 || offsets[n] !== bytes.length) {
      throw new RangeError(`StringColumn: offsets must start at 0 and end at bytes.length (${bytes.length}), got ${offsets[0]} .. ${offsets[n]}`);
    }
    if (valid !== undefined && valid.length !== n) {
      throw new RangeError(`StringColumn: valid has ${valid.length} flags for ${n} values`);
    }
    this.bytes = bytes;
    this.offsets = offsets;
    this.valid = valid;
  }

  get length(): number {
    return this.offsets.length - 1;
  }

  isMissing(i: number): boolean {
    return this.valid !== undefined && this.valid[i] === 0;
  }

  get(i: number): string | null {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) {
      const message = `StringColumn.get: index ${i} is outside [0, ${this.length})`;
      throw typeof i === 'number' ? new RangeError(message) : new TypeError(message);
    }
    if (this.isMissing(i)) return null;
    return decoder.decode(this.bytes.subarray(this.offsets[i], this.offsets[i + 1]));
  }

  toArray(): Array<string | null> {
    const out: Array<string | null> = new Array(this.length);
    for (let i = 0; i < this.length; i++) out[i] = this.get(i);
    return out;
  }

  /** Rows [start, end) as a column of their own (bytes copied, offsets rebased). */
  slice(start: number, end: number): StringColumn {
    const s = Math.max(0, Math.min(start, this.length));
    const e = Math.max(s, Math.min(end, this.length));
    const base = this.offsets[s];
    const offsets = new Int32Array(e - s + 1);
    for (let i = 0; i <= e - s; i++) offsets[i] = this.offsets[s + i] - base;
    return new StringColumn(this.bytes.slice(base, this.offsets[e]), offsets, this.valid?.slice(s, e));
  }

  /** One column from JS strings; null and undefined become missing values. */
  static fromStrings(values: ArrayLike<string | null | undefined>): StringColumn {
    const n = values.length;
    const encoded: Uint8Array[] = new Array(n);
    const offsets = new Int32Array(n + 1);
    let valid: Uint8Array | undefined;
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (v === null || v === undefined) {
        valid ??= new Uint8Array(n).fill(1);
        valid[i] = 0;
        encoded[i] = new Uint8Array(0);
      } else if (typeof v === 'string') {
        encoded[i] = encoder.encode(v);
      } else {
        throw new TypeError(`StringColumn.fromStrings: value ${i} is a ${typeof v}, not a string`);
      }
      if (offsets[i] + encoded[i].length > 0x7fffffff) {
        throw new RangeError('StringColumn.fromStrings: more than 2 GiB of UTF-8 in one column; split the batch');
      }
      offsets[i + 1] = offsets[i] + encoded[i].length;
    }
    const bytes = new Uint8Array(offsets[n]);
    for (let i = 0; i < n; i++) bytes.set(encoded[i], offsets[i]);
    return new StringColumn(bytes, offsets, valid);
  }

  /** Columns of the same field, one after the other (for batching and rebatching). */
  static concat(columns: ReadonlyArray<StringColumn>): StringColumn {
    let rows = 0;
    let size = 0;
    let anyMissing = false;
    for (const c of columns) {
      rows += c.length;
      size += c.bytes.length;
      anyMissing ||= c.valid !== undefined;
    }
    if (size > 0x7fffffff) throw new RangeError('StringColumn.concat: more than 2 GiB of UTF-8 in one column; use smaller batches');
    const bytes = new Uint8Array(size);
    const offsets = new Int32Array(rows + 1);
    const valid = anyMissing ? new Uint8Array(rows).fill(1) : undefined;
    let row = 0;
    let at = 0;
    for (const c of columns) {
      bytes.set(c.bytes, at);
      for (let i = 1; i <= c.length; i++) offsets[row + i] = at + c.offsets[i];
      if (valid !== undefined && c.valid !== undefined) valid.set(c.valid, row);
      row += c.length;
      at += c.bytes.length;
    }
    return new StringColumn(bytes, offsets, valid);
  }
}

export function isStringColumn(value: unknown): value is StringColumn {
  return value instanceof StringColumn;
}
