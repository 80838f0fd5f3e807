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
 * restored, and taken the same checkpoint (a file one rank could not read, or did not
 * see yet, would leave it on an older one). Collective; throws on every rank (a rank
 * whose restore failed, `failure`, throws that), naming what differs.
 */
export async function agreeOnRestoredStep(step: number, modelDir: string, failure?: Error): Promise<void> {
  const mine = Float64Array.of(failure ? 1 : 0, step);
  const all = (await (await allgather(tensor(mine, [1, 2], 'float64', { device: 'cpu' }))).data()) as Float64Array;
  if (failure) throw failure;
  const ranks = Array.from({ length: all.length / 2 }, (_, r) => r);
  const failed = ranks.filter((r) => all[2 * r] !== 0);
  if (failed.length > 0) {
    throw new Error(`rank${failed.length > 1 ? 's' : ''} ${failed.join(', ')} could not restore from ${modelDir} (see ${failed.length > 1 ? 'their' : 'its'} error); no rank trains`);
  }
  const steps = ranks.map((r) => all[2 * r + 1]);
  if (steps.some((s) => s !== step)) {
    throw new Error(
      `the ranks restored different checkpoints from ${modelDir} (${steps.map((s, r) => `rank ${r}: step ${s}`).join(', ')}): ` +
        'each rank must see the same files (a shared filesystem that has caught up); see each rank\'s log for the checkpoints it refused',
    );
  }
}
