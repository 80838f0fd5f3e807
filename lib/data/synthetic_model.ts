// The planted model behind Dataset.synthetic, as the main thread scores a batch with it
// (for tests and for judging what training reached). The rows themselves are generated
// natively (native/data/synthetic_rows.h: power-law ids, a permutation that scatters the
// hot ones, labels drawn from this model), with the same integer mixing as here.

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

/**
 * The share of lookups that fall on the `k` most frequent ids, as the generator's
 * sampling predicts: ranks by inverse-CDF sampling of a continuous power law with density
 * proportional to x^-alpha on [1, V + 1), floored, so P(rank < k) = F(k + 1).
 */
export function powerLawShare(k: number, vocabularySize: number, alpha: number): number {
  const x = Math.min(k, vocabularySize) + 1;
  const top = vocabularySize + 1;
  if (alpha === 0) return (x - 1) / vocabularySize;
  if (Math.abs(alpha - 1) < 1e-9) return Math.log(x) / Math.log(top);
  return (Math.pow(x, 1 - alpha) - 1) / (Math.pow(top, 1 - alpha) - 1);
}

/** The planted model: logit = bias + sum over tables of the mean hidden weight of the row's ids + dense weights . f(x). */
export class PlantedModel {
  readonly bias = -1;
  readonly denseWeights: Float64Array;
  readonly tableScale: number;
  private readonly tableKeys: number[];

  constructor(readonly spec: SyntheticSpec) {
    const seed = spec.seed >>> 0;
    this.denseWeights = new Float64Array(spec.numDense);
    const scale = spec.numDense > 0 ? 1.5 / Math.sqrt(spec.numDense) : 0;
    for (let j = 0; j < spec.numDense; j++) this.denseWeights[j] = (mix(mix(seed, 0x5eed), j) / TWO32) * 2 * scale - scale;
    this.tableScale = spec.tables.length > 0 ? 3 / Math.sqrt(spec.tables.length) : 0;
    this.tableKeys = spec.tables.map((_, t) => mix(mix(seed, 0x7ab1e), t));
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
