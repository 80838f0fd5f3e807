// TF's graph-level seed (tf.set_random_seed, RunConfig's tf_random_seed): an initializer
// made without a seed draws, while a graph-level seed is in effect, from a seed derived
// from that seed and the variable's name, so the same model with the same seed starts
// from the same values in every run; without one, each run differs. (TF derives from
// the op's creation order; the name does not depend on the order columns are built in.)
import { ScopedValue } from '../tensor/scoped_value';

// Followed through the build's awaits, so two models built at once keep their own seeds.
const graphSeed = new ScopedValue<{ seed: number | undefined }>();

/** Runs `body` with `seed` as the graph-level seed (the Estimator does, around modelFn). */
export function withGraphSeed<T>(seed: number | undefined, body: () => T | Promise<T>): Promise<T> {
  return graphSeed.run({ seed }, async () => body());
}

// cyrb53: a small, well-mixed 53-bit string hash.
function hash53(text: string, seed: number): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ Math.floor(seed / 2 ** 32);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 2097152 * (h2 >>> 0) + (h1 >>> 0);
}

/** The seed of an unseeded initializer for the variable `name`: derived when a graph-level seed is in effect, else random. */
export function seedFor(name: string): number {
  const active = graphSeed.get()?.seed;
  if (active === undefined) return Math.floor(Math.random() * 2 ** 48);
  return hash53(name, active);
}
