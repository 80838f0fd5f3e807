// The generative model behind Dataset.synthetic: power-law ids, a permutation that
// scatters the hot ones, and a planted logistic model that makes labels learnable.
// Shared by the reader worker (to generate) and the main thread (to score a batch with
// the planted model, for tests and for judging what training reached).

export interface SyntheticTableSpec {
  name: string;
  vocabularySize: number;
  /** Ids per row: a fixed count, or [min, max] drawn uniformly per row. */
  hotness: [number, number];
  alpha: number;
}

export interface SyntheticSpec {
  numDense: number;
  tables: SyntheticTableSpec[];
  seed: number;
}

/** A 32-bit mix of two words (murmur3's finalizer over a combined word). */
export function mix(a: number, b: number): number {
  let h = (Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(b, 0xc2b2ae35)) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const TWO32 = 4294967296;

/** A small fast generator (mulberry32), seeded per row so a row does not depend on how rows are split into blocks. */
export class RowRandom {
  private state: number;

  constructor(seed: number, row: number) {
    this.state = mix(mix(seed >>> 0, row % TWO32), Math.floor(row / TWO32));
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / TWO32;
  }
}

/**
 * Ranks in [0, vocabularySize) (0 the most frequent) by inverse-CDF sampling of a
 * continuous power law with density proportional to x^-alpha on [1, V + 1), floored:
 * P(rank < k) = F(k + 1) with F as in powerLawShare. The constants of the inverse CDF
 * are worked out once per table, leaving one pow per id.
 */
export class PowerLaw {
  private readonly span: number;
  private readonly exponent: number;
  private readonly kind: 'uniform' | 'log' | 'power';

  constructor(readonly vocabularySize: number, readonly alpha: number) {
    const top = vocabularySize + 1;
    this.kind = alpha === 0 ? 'uniform' : Math.abs(alpha - 1) < 1e-9 ? 'log' : 'power';
    this.span = this.kind === 'power' ? Math.pow(top, 1 - alpha) - 1 : this.kind === 'log' ? Math.log(top) : vocabularySize;
    this.exponent = this.kind === 'power' ? 1 / (1 - alpha) : 0;
  }

  rank(u: number): number {
    // exp(log) rather than pow: pow with a fractional exponent takes twice as long.
    const x = this.kind === 'power' ? Math.exp(this.exponent * Math.log(1 + u * this.span)) : this.kind === 'log' ? Math.exp(u * this.span) : 1 + u * this.span;
    const rank = Math.floor(x) - 1;
    return rank < 0 ? 0 : rank >= this.vocabularySize ? this.vocabularySize - 1 : rank;
  }
}

/** The share of lookups that fall on the `k` most frequent ids, as the sampling above predicts. */
export function powerLawShare(k: number, vocabularySize: number, alpha: number): number {
  const x = Math.min(k, vocabularySize) + 1;
  const top = vocabularySize + 1;
  if (alpha === 0) return (x - 1) / vocabularySize;
  if (Math.abs(alpha - 1) < 1e-9) return Math.log(x) / Math.log(top);
  return (Math.pow(x, 1 - alpha) - 1) / (Math.pow(top, 1 - alpha) - 1);
}

/**
 * A bijection of [0, n): a 4-round Feistel network over the smallest even number of
 * bits that covers n, walking the cycle until the value falls inside [0, n). Cheap per
 * id, needs no table, and works for any n up to 2^52.
 */
export class IdPermutation {
  private readonly half: number;
  private readonly scale: number;
  private readonly mask: number;
  private readonly keys: number[];

  constructor(readonly size: number, key: number) {
    let bits = 2;
    while (Math.pow(2, bits) < size) bits += 2;
    this.half = bits / 2;
    this.scale = Math.pow(2, this.half);
    this.mask = this.scale - 1;
    this.keys = [1, 2, 3, 4].map((i) => mix(key, i));
  }

  apply(x: number): number {
    if (this.size <= 1) return 0;
    do {
      let left = Math.floor(x / this.scale);
      let right = x - left * this.scale;
      for (let r = 0; r < 4; r++) {
        const f = mix(right, this.keys[r]) & this.mask;
        const next = (left ^ f) >>> 0;
        left = right;
        right = next;
      }
      x = left * this.scale + right;
    } while (x >= this.size);
    return x;
  }
}

/** The planted model: logit = bias + sum over tables of the mean hidden weight of the row's ids + dense weights . f(x). */
export class PlantedModel {
  readonly bias = -1;
  readonly denseWeights: Float64Array;
  readonly tableScale: number;
  readonly permutations: IdPermutation[];
  readonly powerLaws: PowerLaw[];
  private readonly tableKeys: number[];

  constructor(readonly spec: SyntheticSpec) {
    const seed = spec.seed >>> 0;
    this.denseWeights = new Float64Array(spec.numDense);
    const scale = spec.numDense > 0 ? 1.5 / Math.sqrt(spec.numDense) : 0;
    for (let j = 0; j < spec.numDense; j++) this.denseWeights[j] = (mix(mix(seed, 0x5eed), j) / TWO32) * 2 * scale - scale;
    this.tableScale = spec.tables.length > 0 ? 3 / Math.sqrt(spec.tables.length) : 0;
    this.tableKeys = spec.tables.map((_, t) => mix(mix(seed, 0x7ab1e), t));
    this.permutations = spec.tables.map((table, t) => new IdPermutation(table.vocabularySize, mix(this.tableKeys[t], 0x9e37)));
    this.powerLaws = spec.tables.map((table) => new PowerLaw(table.vocabularySize, table.alpha));
  }

  /** The hidden weight of an id of table t, uniform in [-1, 1). */
  idWeight(t: number, id: number): number {
    return (mix(mix(this.tableKeys[t], id % TWO32), Math.floor(id / TWO32)) / TWO32) * 2 - 1;
  }

  /** The dense feature as the model sees it: log1p scaled to about [-1, 1]. */
  static denseInput(x: number): number {
    return Math.log1p(Math.max(0, x)) / 2 - 1;
  }

  static sigmoid(z: number): number {
    return 1 / (1 + Math.exp(-z));
  }
}
