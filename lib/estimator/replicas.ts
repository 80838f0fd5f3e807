// Under a job of several ranks, the variables every rank holds whole (dense layers,
// replicated tables) start equal: rank 0's values are broadcast to all, once per
// variable, in name order on every rank, even from unseeded initializers. Shards are
// each rank's own and stay as they are.
import { allgather, broadcast } from '../distribute/collectives';
import { tensor } from '../tensor/tensor';
import { EmbeddingTable } from '../embedding/embedding_table';
import { VariableStore } from '../graph/graph';

/** Broadcasts each variable of `store` not in `shared` yet, and adds it there. Collective. */
export async function shareWholeVariables(store: VariableStore, shared: Set<string>): Promise<void> {
  const names = [...store.variables.keys()].filter((n) => !shared.has(n)).sort();
  for (const name of names) {
    const v = store.variables.get(name)!;
    if (!(v.slotOwner instanceof EmbeddingTable && v.slotOwner.isSharded)) {
      try {
        await v.assign(await broadcast(v, { root: 0 }));
      } catch (error) {
        // The ranks built different models (other columns, sizes or options).
        if (error instanceof Error) error.message = `variable '${name}' differs between the ranks' models: ${error.message}`;
        throw error;
      }
    }
    shared.add(name);
  }
}

/**
 * Under a job, after each rank restored from modelDir on its own: every rank must have
 * taken the same checkpoint (a file one rank could not read, or did not see yet, would
 * leave it on an older one). Collective; throws on every rank, naming each rank's step.
 */
export async function agreeOnRestoredStep(step: number, modelDir: string): Promise<void> {
  const steps = Array.from((await (await allgather(tensor(Float64Array.of(step), [1], 'float64', { device: 'cpu' }))).data()) as Float64Array);
  if (steps.some((s) => s !== step)) {
    throw new Error(
      `the ranks restored different checkpoints from ${modelDir} (${steps.map((s, r) => `rank ${r}: step ${s}`).join(', ')}): ` +
        'each rank must see the same files (a shared filesystem that has caught up); see each rank\'s log for the checkpoints it refused',
    );
  }
}
