// Which units of work one partition (a rank of a job) reads: the dataset's units laid end
// to end by size (rows, or bytes of a text file) and cut into partitionCount contiguous
// spans that differ by at most one, a unit on a cut shared by the partitions beside it.
// Dealing whole units out in turn made the shares differ by up to a unit each (a file of
// one row group went to one rank whole; 3 pieces between 2 ranks gave one twice the
// other's rows), and a job stops when its first rank's input ends, so what the larger
// shares held beyond the smallest was never trained on.
import type { UnitBase } from './wire';

/** A source's units by size, and the part [from, to) of a unit's size as a unit of its own. */
export interface UnitMeasure<U extends UnitBase> {
  size(unit: U): number;
  part(unit: U, from: number, to: number): U;
}

/** The span [begin, end) of `total` that partition `index` of `count` gets. */
export function partitionSpan(total: number, count: number, index: number): { begin: number; end: number } {
  // Exact in integers: the first `total % count` partitions get one more.
  const share = Math.floor(total / count);
  const extra = total % count;
  const begin = share * index + Math.min(index, extra);
  return { begin, end: begin + share + (index < extra ? 1 : 0) };
}

/** Partition `index` of `count`'s units, in the dataset's order; every unit of the whole, when count is 1. */
export function partitionUnits<U extends UnitBase>(units: readonly U[], count: number, index: number, measure: UnitMeasure<U>): U[] {
  if (count === 1) return [...units];
  const sizes = units.map((u) => measure.size(u));
  const { begin, end } = partitionSpan(
    sizes.reduce((a, b) => a + b, 0),
    count,
    index,
  );
  const mine: U[] = [];
  let offset = 0;
  units.forEach((unit, k) => {
    const from = Math.max(begin, offset) - offset;
    const to = Math.min(end, offset + sizes[k]) - offset;
    if (to > from) mine.push(from === 0 && to === sizes[k] ? unit : measure.part(unit, from, to));
    offset += sizes[k];
  });
  return mine;
}
