// The shuffle's blocks in native memory: a block is copied there once when it enters the
// shuffle buffer (one memcpy per array, no JS step per value), and each outgoing block is
// one native gather of every column from the blocks it picks rows of, on a native queue
// of its own, off the JS thread (native/binding/row_gather_binding.cc).
import { native, NativeRowBlock, NativeRowBlockColumn, NativeRowGatherResult } from '../native';
import { Ragged } from '../tensor/ragged';
import { StringColumn } from '../tensor/string_column';
import type { Column, NumericColumn } from './batch';
import { ListColumn } from './list_column';

type Kind = 'ragged' | 'list' | 'strings' | 'numeric';

function kindOf(column: Column): Kind {
  if (column instanceof Ragged) return 'ragged';
  if (column instanceof ListColumn) return 'list';
  if (column instanceof StringColumn) return 'strings';
  return 'numeric';
}

function stringsSpec(name: string, strings: StringColumn, rowSplits: Int32Array | null): NativeRowBlockColumn {
  return { name, rowSplits, itemArrays: [strings.valid ?? null], itemOffsets: strings.offsets, bytes: strings.bytes };
}

function describe(name: string, column: Column): NativeRowBlockColumn {
  if (column instanceof Ragged) {
    return { name, rowSplits: column.rowSplits, itemArrays: [column.values, column.weights ?? null], itemOffsets: null, bytes: null };
  }
  if (column instanceof ListColumn) {
    if (column.values instanceof StringColumn) return stringsSpec(name, column.values, column.rowSplits);
    return { name, rowSplits: column.rowSplits, itemArrays: [column.values], itemOffsets: null, bytes: null };
  }
  if (column instanceof StringColumn) return stringsSpec(name, column, null);
  return { name, rowSplits: null, itemArrays: [column], itemOffsets: null, bytes: null };
}

/** A block of the shuffle buffer: its columns in native memory, and what kind each is. */
export interface RowBlock {
  readonly native: NativeRowBlock;
  readonly kinds: readonly Kind[];
  /** Per column: a list of strings (not of numbers). */
  readonly strings: readonly boolean[];
  /** Per column: a ragged column with weights. */
  readonly weighted: readonly boolean[];
  /** Per column: strings with missing-value flags. */
  readonly hasFlags: readonly boolean[];
}

/** The block's columns copied into native memory now. */
export function rowBlock(names: readonly string[], columns: readonly Column[]): RowBlock {
  const stringsOfColumn = (c: Column) => (c instanceof StringColumn ? c : c instanceof ListColumn && c.values instanceof StringColumn ? c.values : undefined);
  return {
    native: native.rowBlock(columns.map((column, c) => describe(names[c], column))),
    kinds: columns.map(kindOf),
    strings: columns.map((c) => c instanceof ListColumn && c.values instanceof StringColumn),
    weighted: columns.map((c) => c instanceof Ragged && c.weights !== undefined),
    hasFlags: columns.map((c) => stringsOfColumn(c)?.valid !== undefined),
  };
}

/** Gives the block's memory back now; gathers already started keep what they read. */
export function releaseRowBlock(block: RowBlock): void {
  native.rowBlockRelease(block.native);
}

type ResultArray = NativeRowGatherResult['itemArrays'][number];
const constructors = { Uint8Array, Int32Array, Float32Array, Float64Array, BigInt64Array } as const;

/**
 * The array re-viewed (no copy) through this realm's constructor: arrays the addon makes
 * belong to the realm that loaded it, and the column classes check `instanceof` (which
 * fails across realms, e.g. in a vm context or jest's).
 */
function local<T extends ResultArray>(array: T): T {
  const tag = Object.prototype.toString.call(array).slice(8, -1) as keyof typeof constructors;
  const ctor = constructors[tag] as unknown as new (buffer: ArrayBufferLike, offset: number, length: number) => T;
  return array instanceof ctor ? array : new ctor(array.buffer, array.byteOffset, array.length);
}

function stringsOf(r: NativeRowGatherResult, flags: Uint8Array | undefined): StringColumn {
  return new StringColumn(local(r.bytes!), local(r.itemOffsets!), flags);
}

/**
 * Column c of the result: row i is row rows[i] of blocks[which[i]]. The blocks must
 * share their columns (names and kinds), as the blocks of one dataset do.
 */
export async function gatherColumns(blocks: readonly RowBlock[], which: Int32Array, rows: Int32Array): Promise<Column[]> {
  const first = blocks[0];
  // gatherRows refuses blocks whose columns differ in shape (each kind has its own), so
  // the first block's kinds are every block's.
  const results = await native.gatherRows(blocks.map((b) => b.native), which, rows);
  return results.map((r, c) => {
    const splits = r.rowSplits && local(r.rowSplits);
    switch (first.kinds[c]) {
      case 'ragged': {
        // Weights in some blocks only: none come back (as concatenating the blocks gives).
        const weighted = blocks.every((b) => b.weighted[c]);
        return new Ragged(local(r.itemArrays[0]) as BigInt64Array | Int32Array, splits!, weighted ? (local(r.itemArrays[1]) as Float32Array) : undefined);
      }
      case 'list':
        return new ListColumn(first.strings[c] ? stringsOf(r, flagsOf(blocks, c, r)) : (local(r.itemArrays[0]) as Float32Array | Float64Array), splits!);
      case 'strings':
        return stringsOf(r, flagsOf(blocks, c, r));
      default:
        return local(r.itemArrays[0]) as NumericColumn;
    }
  });
}

/** A gathered string column's flags: only when a block had any (else every string is present). */
function flagsOf(blocks: readonly RowBlock[], c: number, r: NativeRowGatherResult): Uint8Array | undefined {
  return blocks.some((b) => b.hasFlags[c]) ? (local(r.itemArrays[0]) as Uint8Array) : undefined;
}
