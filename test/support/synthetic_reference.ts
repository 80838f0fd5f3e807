// The JS generator Dataset.synthetic ran before its rows were generated natively
// (native/data/synthetic_rows.h), kept as the reference the native rows are checked
// against: the same seed must give the same rows as it did (vocabularies up to about 2^40:
// native/data/synthetic_rows.h says why). A plain loop, for tests only.
import { mix, PlantedModel, SyntheticSpec } from '../../lib/data/synthetic_model';

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

export interface ReferenceBlock {
  label: Float32Array;
  dense: Float32Array[];
  splits: Int32Array[];
  ids: BigInt64Array[];
}

/** Rows [firstRow, firstRow + n) of Dataset.synthetic(spec), as the JS generator made them. */
export function referenceRows(spec: SyntheticSpec, firstRow: number, n: number): ReferenceBlock {
  const model = new PlantedModel(spec);
  const seed = spec.seed >>> 0;
  const tables = spec.tables;
  const tableKeys = tables.map((_, t) => mix(mix(seed, 0x7ab1e), t));
  const permutations = tables.map((table, t) => new IdPermutation(table.vocabularySize, mix(tableKeys[t], 0x9e37)));
  const powerLaws = tables.map((table) => new PowerLaw(table.vocabularySize, table.alpha));
  const dense = Array.from({ length: spec.numDense }, () => new Float32Array(n));
  const label = new Float32Array(n);
  const splits = tables.map(() => new Int32Array(n + 1));
  const ids = tables.map((t) => new BigInt64Array(n * t.hotness[1]));
  const contribution = new Float64Array(tables.length);
  for (let i = 0; i < n; i++) {
    const random = new RowRandom(seed, firstRow + i);
    let z = model.bias;
    for (let j = 0; j < dense.length; j++) {
      const x = Math.floor(Math.expm1(4 * random.next()));
      dense[j][i] = x;
      z += model.denseWeights[j] * PlantedModel.denseInput(x);
    }
    for (let t = 0; t < tables.length; t++) {
      const [low, high] = tables[t].hotness;
      const hotness = low === high ? low : low + Math.min(high - low, Math.floor(random.next() * (high - low + 1)));
      const at = splits[t][i];
      let sum = 0;
      for (let k = 0; k < hotness; k++) {
        const id = permutations[t].apply(powerLaws[t].rank(random.next()));
        ids[t][at + k] = BigInt(id);
        sum += model.idWeight(t, id);
      }
      splits[t][i + 1] = at + hotness;
      contribution[t] = hotness > 0 ? sum / hotness : 0;
    }
    for (let t = 0; t < tables.length; t++) z += model.tableScale * contribution[t];
    label[i] = random.next() < PlantedModel.sigmoid(z) ? 1 : 0;
  }
  return { label, dense, splits, ids: ids.map((values, t) => values.slice(0, splits[t][n])) };
}
