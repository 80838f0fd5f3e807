// partition_by_owner: ids grouped by the worker that owns them (id floormod worldSize,
// HybridBackend's rule), stable within each owner; how many go to each owner; and the
// permutation restore_order takes to put rows back in the ids' order.
import { SymbolicTensor } from '../graph';
import { applyOpOutputs, defineOp } from '../op_registry';
import { shownValue } from '../../shown_value';

const partitionByOwnerDef = defineOp({
  name: 'partition_by_owner',
  kernel: 'partition_by_owner',
  noGradient: true,
  outputs: ([ids], attrs, name) => {
    const worldSize = attrs.worldSize as number;
    if (!Number.isSafeInteger(worldSize) || worldSize < 1) {
      const message = `${name}: worldSize must be an integer >= 1, got ${shownValue(worldSize)}`;
      throw typeof worldSize === 'number' ? new RangeError(message) : new TypeError(message);
    }
    if (ids.dtype !== 'int32' && ids.dtype !== 'int64') throw new TypeError(`${name}: ids must be int32 or int64, got ${ids.dtype}`);
    return [
      { shape: [...ids.shape], dtype: ids.dtype },
      { shape: [worldSize], dtype: 'int32' },
      { shape: [...ids.shape], dtype: 'int32' },
    ];
  },
});

export function partitionByOwner(ids: SymbolicTensor, worldSize: number, name?: string): { ids: SymbolicTensor; sizes: SymbolicTensor; restore: SymbolicTensor } {
  const [grouped, sizes, restore] = applyOpOutputs(partitionByOwnerDef, [ids], { worldSize }, name);
  return { ids: grouped, sizes, restore };
}
