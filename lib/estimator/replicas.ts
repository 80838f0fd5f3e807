// Under a job of several ranks, the variables every rank holds whole (dense layers,
// replicated tables) start equal: rank 0's values are broadcast to all, once per
// variable, in name order on every rank, even from unseeded initializers. Shards are
// each rank's own and stay as they are.
import { broadcast } from '../distribute/collectives';
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
