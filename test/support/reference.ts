// Plain-JS references the native results are checked against. Every float op is
// rounded to float32 (Math.fround) in the order the kernels use, so results compare
// bit for bit.
const f = Math.fround;

export type CombinerName = 'sum' | 'mean' | 'sqrtn';

export interface LookupCase {
  table: Float32Array; // [rows, dim]
  rows: number;
  dim: number;
  ids: ArrayLike<bigint | number>;
  rowSplits: Int32Array;
  weights?: Float32Array;
  combiner: CombinerName;
  maxNorm?: number;
}

/** tf.nn.safe_embedding_lookup_sparse, written out element by element. */
export function lookupReference(c: LookupCase): Float32Array {
  const batch = c.rowSplits.length - 1;
  const out = new Float32Array(batch * c.dim);
  const maxNorm = c.maxNorm === undefined ? undefined : f(c.maxNorm);
  for (let b = 0; b < batch; b++) {
    const acc = new Float32Array(c.dim);
    let weightSum = 0;
    let squaredWeightSum = 0;
    let any = false;
    for (let j = c.rowSplits[b]; j < c.rowSplits[b + 1]; j++) {
      const id = Number(c.ids[j]);
      const w = c.weights ? c.weights[j] : 1;
      if (id < 0) continue;
      if (c.weights && c.combiner !== 'sum' && !(w > 0)) continue;
      any = true;
      const row = c.table.subarray(id * c.dim, (id + 1) * c.dim);
      let clipDivisor = 1;
      if (maxNorm !== undefined) {
        let squares = 0;
        for (let k = 0; k < c.dim; k++) squares = f(squares + f(row[k] * row[k]));
        const norm = squares > 0 ? f(Math.sqrt(squares)) : squares;
        clipDivisor = norm > maxNorm ? norm : maxNorm;
      }
      for (let k = 0; k < c.dim; k++) {
        let x = row[k];
        if (maxNorm !== undefined) x = f(f(x * maxNorm) / clipDivisor);
        acc[k] = f(acc[k] + (c.weights || maxNorm !== undefined ? f(x * w) : x));
      }
      weightSum = f(weightSum + w);
      squaredWeightSum = f(squaredWeightSum + f(w * w));
    }
    if (any && c.combiner !== 'sum') {
      const divisor = c.combiner === 'mean' ? weightSum : f(Math.sqrt(squaredWeightSum));
      for (let k = 0; k < c.dim; k++) acc[k] = f(acc[k] / divisor);
    }
    out.set(acc, b * c.dim);
  }
  return out;
}

/** A small deterministic generator (mulberry32) for test inputs. */
export function randomSource(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Random ragged ids: some empty rows, duplicates, a few negative ids. */
export function randomRagged(random: () => number, batch: number, rows: number, maxPerRow: number, withWeights: boolean) {
  const splits = new Int32Array(batch + 1);
  const ids: bigint[] = [];
  const weights: number[] = [];
  for (let b = 0; b < batch; b++) {
    const n = random() < 0.15 ? 0 : Math.floor(random() * (maxPerRow + 1));
    for (let j = 0; j < n; j++) {
      const r = random();
      // ~5% negative (pruned), ~20% repeats of the row's first id, the rest uniform.
      const id = r < 0.05 ? -1 - Math.floor(random() * 5) : r < 0.25 && j > 0 ? Number(ids[splits[b]]) : Math.floor(random() * rows);
      ids.push(BigInt(id));
      // ~10% non-positive weights, pruned by mean and sqrtn.
      weights.push(random() < 0.1 ? -random() : random() * 2);
    }
    splits[b + 1] = ids.length;
  }
  return {
    values: BigInt64Array.from(ids),
    rowSplits: splits,
    weights: withWeights ? Float32Array.from(weights) : undefined,
  };
}

/** The constructor name of a typed array (instanceof fails across jest's realms). */
export function typeName(value: unknown): string {
  return Object.prototype.toString.call(value).slice(8, -1);
}

/**
 * A row's sum of many terms as hb-ts takes it (native/kernels/lookup_gradient.h): in term
 * order, 256 terms a block, each block summed from 0 in float32 and the block sums added in
 * order. `plain` sums every term in order instead, to show where the two differ.
 */
export class BlockedRowSum {
  private readonly total: Float32Array;
  private readonly block: Float32Array;
  private terms = 0;

  constructor(width: number, private readonly plain = false) {
    this.total = new Float32Array(width);
    this.block = new Float32Array(width);
  }

  add(term: (k: number) => number): void {
    if (!this.plain && this.terms > 0 && this.terms % 256 === 0) this.fold();
    for (let k = 0; k < this.block.length; k++) this.block[k] = Math.fround(this.block[k] + term(k));
    this.terms++;
  }

  value(): Float32Array {
    if (this.plain || this.terms <= 256) return Float32Array.from(this.block);
    return this.total.map((t, k) => Math.fround(t + this.block[k]));
  }

  private fold(): void {
    for (let k = 0; k < this.block.length; k++) {
      this.total[k] = Math.fround(this.total[k] + this.block[k]);
      this.block[k] = 0;
    }
  }
}
