// Parsing the raw Criteo layout in a worker, straight from bytes: integers are read
// digit by digit and categoricals are copied as bytes into each column's UTF-8 buffer,
// so no JS string is made per field.
import * as fs from 'node:fs';
import { ReadContext, TRUNCATED } from './reader';
import type { UnitBase, WireChunk, WireColumn } from './wire';

export const CRITEO_INTEGER_FIELDS = Array.from({ length: 13 }, (_, i) => `I${i + 1}`);
export const CRITEO_CATEGORICAL_FIELDS = Array.from({ length: 26 }, (_, i) => `C${i + 1}`);
export const CRITEO_FIELD_COUNT = 1 + 13 + 26;

export interface CriteoTsvTask {
  /** Value of an empty integer field, per field I1..I13. */
  defaults: number[];
  integerDtype: 'float32' | 'int32';
  labelField: string;
  blockRows: number;
  skipCorrupted: boolean;
}

/** Rows whose first byte lies in [start, end) of the file. */
export interface CriteoTsvUnit extends UnitBase {
  file: string;
  start: number;
  end: number;
  /** The file's size when the pass was planned: a smaller one was cut while being read. */
  fileSize: number;
}

const TAB = 9;
const NEWLINE = 10;
const RETURN = 13;
const MINUS = 45;
const ZERO = 48;
const READ_SIZE = 1 << 20;

class RowError extends Error {}

function fieldCount(line: Uint8Array, from: number, to: number): RowError {
  let fields = 1;
  for (let i = from; i < to; i++) if (line[i] === TAB) fields++;
  return new RowError(`${fields} fields, expected ${CRITEO_FIELD_COUNT} (label, I1..I13, C1..C26, separated by tabs)`);
}

function shown(bytes: Uint8Array, from: number, to: number): string {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset + from, Math.min(to - from, 40)).toString('utf8');
  return JSON.stringify(to - from > 40 ? `${text}...` : text);
}

const FLOAT32_MAX = 3.4028234663852886e38;

/** Parses an optional minus sign and decimal digits; NaN when the field is anything else. */
function parseInteger(bytes: Uint8Array, from: number, to: number): number {
  let i = from;
  let negative = false;
  if (bytes[i] === MINUS) {
    negative = true;
    i++;
  }
  if (i === to) return NaN;
  let value = 0;
  for (; i < to; i++) {
    const d = bytes[i] - ZERO;
    if (d < 0 || d > 9) return NaN;
    value = value * 10 + d;
  }
  return negative ? -value : value;
}

/** Columns of one block of rows, filled in place and handed over whole. */
class Block {
  rows = 0;
  label: Float32Array;
  integers: Array<Float32Array | Int32Array>;
  bytes: Uint8Array[];
  offsets: Int32Array[];
  valid: Array<Uint8Array | undefined>;

  constructor(readonly capacity: number, dtype: 'float32' | 'int32') {
    this.label = new Float32Array(capacity);
    this.integers = CRITEO_INTEGER_FIELDS.map(() => (dtype === 'int32' ? new Int32Array(capacity) : new Float32Array(capacity)));
    this.bytes = CRITEO_CATEGORICAL_FIELDS.map(() => new Uint8Array(capacity * 8 + 1024));
    this.offsets = CRITEO_CATEGORICAL_FIELDS.map(() => new Int32Array(capacity + 1));
    this.valid = CRITEO_CATEGORICAL_FIELDS.map(() => undefined);
  }

  /**
   * Parses one line (without its newline) into row `this.rows`; throws RowError, leaving
   * the block as it was, when the line is bad. One pass over the bytes: the fields are
   * taken in layout order, so each has its own tight loop.
   */
  addRow(line: Uint8Array, from: number, to: number, defaults: number[], int32: boolean): void {
    const r = this.rows;
    let i = from;
    let start = i;
    while (i < to && line[i] !== TAB) i++;
    const label = parseInteger(line, start, i);
    if (label !== 0 && label !== 1) throw new RowError(`the label is ${shown(line, start, i)}, expected 0 or 1`);
    if (i >= to) throw fieldCount(line, from, to);
    i++;
    this.label[r] = label;
    for (let j = 0; j < 13; j++) {
      start = i;
      let negative = false;
      if (i < to && line[i] === MINUS) {
        negative = true;
        i++;
      }
      let value = 0;
      let bad = false;
      for (; i < to; i++) {
        const b = line[i];
        if (b === TAB) break;
        const d = b - ZERO;
        if (d < 0 || d > 9) bad = true;
        value = value * 10 + d;
      }
      if (i === start) value = defaults[j];
      else {
        if (bad || (negative && i === start + 1)) throw new RowError(`field ${CRITEO_INTEGER_FIELDS[j]} is ${shown(line, start, i)}, not an integer`);
        if (negative) value = -value;
        if (int32 && (value > 0x7fffffff || value < -0x80000000)) throw new RowError(`field ${CRITEO_INTEGER_FIELDS[j]} is ${shown(line, start, i)}, beyond int32`);
        // A float32 column would hold Infinity (a 400-digit count is a corrupt field).
        if (!int32 && !(Math.abs(value) <= FLOAT32_MAX)) throw new RowError(`field ${CRITEO_INTEGER_FIELDS[j]} is ${shown(line, start, i)}, beyond float32's range`);
      }
      this.integers[j][r] = value;
      if (i >= to) throw fieldCount(line, from, to);
      i++;
    }
    for (let c = 0; c < 26; c++) {
      const offsets = this.offsets[c];
      let at = offsets[r];
      if (at + (to - i) > this.bytes[c].length) {
        const grown = new Uint8Array(Math.max(this.bytes[c].length * 2, at + (to - i)));
        grown.set(this.bytes[c].subarray(0, at));
        this.bytes[c] = grown;
      }
      const bytes = this.bytes[c];
      start = at;
      for (; i < to; i++) {
        const b = line[i];
        if (b === TAB) break;
        bytes[at++] = b;
      }
      offsets[r + 1] = at;
      if (at === start) (this.valid[c] ??= new Uint8Array(this.capacity).fill(1))[r] = 0;
      else if (this.valid[c] !== undefined) this.valid[c]![r] = 1;
      if (c < 25) {
        if (i >= to) throw fieldCount(line, from, to);
        i++;
      }
    }
    if (i < to) throw fieldCount(line, from, to);
    this.rows = r + 1;
  }

  chunk(labelField: string): WireChunk {
    const n = this.rows;
    const exact = <A extends Float32Array | Int32Array | Uint8Array>(a: A): A => (n === this.capacity ? a : (a.slice(0, n) as A));
    const names = [labelField, ...CRITEO_INTEGER_FIELDS, ...CRITEO_CATEGORICAL_FIELDS];
    const columns: WireColumn[] = [{ kind: 'numeric', values: exact(this.label) }];
    for (const values of this.integers) columns.push({ kind: 'numeric', values: exact(values) });
    for (let c = 0; c < 26; c++) {
      const offsets = this.offsets[c].slice(0, n + 1);
      const valid = this.valid[c] === undefined ? undefined : this.valid[c]!.slice(0, n);
      columns.push({ kind: 'string', bytes: this.bytes[c].slice(0, offsets[n]), offsets, valid });
    }
    return { rows: n, names, columns };
  }
}

function lineNumber(fd: number, position: number): number {
  const buffer = Buffer.allocUnsafeSlow(READ_SIZE);
  let lines = 1;
  for (let at = 0; at < position; ) {
    const got = fs.readSync(fd, buffer, 0, Math.min(READ_SIZE, position - at), at);
    if (got <= 0) break;
    for (let i = buffer.indexOf(NEWLINE, 0); i !== -1 && i < got; i = buffer.indexOf(NEWLINE, i + 1)) lines++;
    at += got;
  }
  return lines;
}

/** What a file that starts with `head` is, when it is not text. */
function binaryKind(head: Uint8Array): string | undefined {
  const starts = (...bytes: number[]) => head.length >= bytes.length && bytes.every((b, i) => head[i] === b);
  if (starts(0x1f, 0x8b)) return 'gzip-compressed';
  if (starts(0x28, 0xb5, 0x2f, 0xfd)) return 'zstd-compressed';
  if (starts(0x42, 0x5a, 0x68)) return 'bzip2-compressed';
  if (starts(0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00)) return 'xz-compressed';
  if (starts(0x50, 0x41, 0x52, 0x31)) return 'Parquet';
  if (head.includes(0)) return 'binary: it has NUL bytes';
  return undefined;
}

export async function* readCriteoTsvUnit(unit: CriteoTsvUnit, task: CriteoTsvTask, context: ReadContext): AsyncGenerator<WireChunk> {
  let fd: number;
  try {
    fd = fs.openSync(unit.file, 'r');
  } catch (error) {
    throw new Error(`Dataset.fromCriteoTsv: cannot open ${unit.file}: ${(error as Error).message}`);
  }
  try {
    let window = Buffer.allocUnsafeSlow(READ_SIZE * 2);
    let lo = 0; // window[lo] is file byte `position`
    let hi = 0;
    let position = unit.start;
    let eof = false;
    // Where the file ended before the size it had when the pass was planned: it was cut
    // while being read. Any piece can see it, including one that starts past the new
    // end and so has no line to stumble on.
    let truncatedAt: number | undefined;
    const fill = () => {
      if (lo > 0) {
        window.copy(window, 0, lo, hi);
        hi -= lo;
        lo = 0;
      }
      if (window.length - hi < READ_SIZE) {
        const grown = Buffer.allocUnsafeSlow(window.length * 2);
        window.copy(grown, 0, 0, hi);
        window = grown;
      }
      const got = fs.readSync(fd, window, hi, window.length - hi, position + hi);
      if (got === 0) {
        eof = true;
        // Where the file ends now: a cut can fall before bytes this piece already read
        // (a file cut to nothing while a piece is half read ends at 0, not where the read was).
        if (position + hi < unit.fileSize) truncatedAt = Math.min(position + hi, fs.fstatSync(fd).size);
      }
      hi += got;
    };
    const int32 = task.integerDtype === 'int32';
    let block = new Block(task.blockRows, task.integerDtype);
    // A range that starts inside a line leaves that line to the range before it.
    let lineStart = unit.start === 0;
    if (!lineStart) {
      const previous = Buffer.alloc(1);
      const got = fs.readSync(fd, previous, 0, 1, unit.start - 1);
      if (got === 0) {
        eof = true;
        truncatedAt = fs.fstatSync(fd).size;
      } else if (previous[0] === NEWLINE) lineStart = true;
      while (!lineStart && !eof) {
        fill();
        const at = window.indexOf(NEWLINE, lo);
        if (at !== -1 && at < hi) {
          position += at + 1 - lo;
          lo = at + 1;
          lineStart = true;
        } else {
          position += hi - lo;
          lo = hi;
        }
      }
    }
    if (unit.start === 0) {
      // A compressed or binary file would otherwise fail as a first line of garbage (or,
      // with skipCorrupted, be skipped a "line" at a time): say what it is, skipping or not.
      if (hi === lo && !eof) fill();
      const kind = binaryKind(window.subarray(lo, Math.min(hi, lo + 4096)));
      if (kind !== undefined) throw new Error(`Dataset.fromCriteoTsv: ${unit.file} is not a text file (${kind}); Criteo TSV is tab-separated text${kind === 'Parquet' ? ': read it with Dataset.fromParquet' : kind === 'binary: it has NUL bytes' ? '' : ': decompress it first'}`);
    }
    while (lineStart && position < unit.end) {
      let at = window.indexOf(NEWLINE, lo);
      if (at === -1 || at >= hi) {
        if (!eof) {
          fill();
          continue;
        }
        // Cut while being read: its last line is then a fragment, not a row to parse.
        if (truncatedAt !== undefined) break;
        if (lo === hi) break;
        at = hi; // the last line, without a newline
      }
      let to = at;
      if (to > lo && window[to - 1] === RETURN) to--;
      const isTrailingEmptyLine = eof && at === hi && to === lo;
      if (!isTrailingEmptyLine) {
        try {
          block.addRow(window, lo, to, task.defaults, int32);
        } catch (error) {
          if (!(error instanceof RowError)) throw error;
          const text = `Dataset.fromCriteoTsv: ${unit.file}, line ${lineNumber(fd, position)}: ${error.message}`;
          if (!task.skipCorrupted) throw new Error(text);
          context.skip(1, text);
        }
      }
      position += Math.min(at + 1, hi) - lo;
      lo = Math.min(at + 1, hi);
      if (block.rows === block.capacity) {
        yield block.chunk(task.labelField);
        block = new Block(task.blockRows, task.integerDtype);
      }
      if (at === hi) break;
    }
    if (block.rows > 0) yield block.chunk(task.labelField);
    if (truncatedAt !== undefined) {
      // The line count reads the file up to the cut: only the piece the cut falls in says
      // it, or every later piece (skipCorrupted reports each) would read the file again.
      const text =
        truncatedAt >= unit.start
          ? `Dataset.fromCriteoTsv: ${unit.file} ended at byte ${truncatedAt} (after line ${lineNumber(fd, truncatedAt) - 1}), before byte ${unit.fileSize} ` +
            'where it ended when the pass began: the file was truncated while it was read'
          : `Dataset.fromCriteoTsv: ${unit.file} ended at byte ${truncatedAt}, before its piece at bytes ${unit.start}..${unit.end}, though it had ${unit.fileSize} bytes ` +
            'when the pass began: the file was truncated while it was read';
      if (!task.skipCorrupted) throw Object.assign(new Error(text), { code: TRUNCATED });
      context.skip(0, text);
    }
  } finally {
    fs.closeSync(fd);
  }
}
