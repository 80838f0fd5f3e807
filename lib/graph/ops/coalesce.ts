// The ops of a coalesced lookup (native/exec/coalesce_kernels.cc): a group of columns'
// ids and rows travel in one exchange each, every rank's part laid out column by column.
//
//   packByOwner     each column's ids grouped by owner -> one int64 run per destination,
//                   led by the columns' counts; the k x W counts it packed (the layout)
//   unpackBySource  what arrived -> each column's ids, and the k x W counts per source
//   packRows        columns' float rows, split per rank by a layout -> one flat run and
//                   its counts per rank; its gradient is unpackRows with the same layout
//   unpackRows      the inverse; its gradient is packRows
import { DYNAMIC, SymbolicTensor } from '../graph';
import { applyOpOutputs, defineOp } from '../op_registry';

const packByOwnerDef = defineOp({
  name: 'pack_by_owner',
  kernel: 'pack_by_owner',
  noGradient: true,
  outputs: (inputs, _attrs, name) => {
    if (inputs.length < 2 || inputs.length % 2 !== 0) throw new Error(`${name}: takes (ids, sizes) pairs`);
    const W = inputs[1].shape[0];
    return [
      { shape: [DYNAMIC], dtype: 'int64' },
      { shape: [W], dtype: 'int32' },
      { shape: [inputs.length / 2, W], dtype: 'int32' },
    ];
  },
});

export function packByOwner(parts: Array<{ ids: SymbolicTensor; sizes: SymbolicTensor }>, name: string): { packed: SymbolicTensor; sendCounts: SymbolicTensor; layout: SymbolicTensor } {
  const [packed, sendCounts, layout] = applyOpOutputs(packByOwnerDef, parts.flatMap((p) => [p.ids, p.sizes]), {}, name);
  return { packed, sendCounts, layout };
}

const unpackBySourceDef = defineOp({
  name: 'unpack_by_source',
  kernel: 'unpack_by_source',
  noGradient: true,
  outputs: ([, counts], attrs) => {
    const k = attrs.columns as number;
    return [{ shape: [k, counts.shape[0]], dtype: 'int32' }, ...Array.from({ length: k }, () => ({ shape: [DYNAMIC], dtype: 'int64' as const }))];
  },
});

export function unpackBySource(received: SymbolicTensor, recvCounts: SymbolicTensor, columns: number, name: string): { layout: SymbolicTensor; ids: SymbolicTensor[] } {
  const [layout, ...ids] = applyOpOutputs(unpackBySourceDef, [received, recvCounts], { columns }, name);
  return { layout, ids: [...ids] };
}

// packRows and unpackRows are each other's gradients: defined together.
const unpackRowsDef = defineOp({
  name: 'unpack_rows',
  kernel: 'unpack_rows',
  outputs: (_inputs, attrs) => (attrs.dims as number[]).map((d) => ({ shape: [DYNAMIC, d], dtype: 'float32' as const })),
  grad: (node, _dy, dys) => {
    const [, layout] = node.inputs;
    const parts = node.outputs.map((t, i) => dys[i] ?? zerosLikeRows(t));
    return [packRows(layout, parts, `${node.name}/grad`).packed, null];
  },
});

const packRowsDef = defineOp({
  name: 'pack_rows',
  kernel: 'pack_rows',
  outputs: ([layout]) => [
    { shape: [DYNAMIC], dtype: 'float32' },
    { shape: [layout.shape[1]], dtype: 'int32' },
  ],
  grad: (node, dy) => {
    const [layout, ...rows] = node.inputs;
    const parts = unpackRows(dy, layout, rows.map((r) => r.shape[1]), `${node.name}/grad`);
    return [null, ...parts];
  },
});

export function packRows(layout: SymbolicTensor, rows: SymbolicTensor[], name: string): { packed: SymbolicTensor; sendCounts: SymbolicTensor } {
  const [packed, sendCounts] = applyOpOutputs(packRowsDef, [layout, ...rows], {}, name);
  return { packed, sendCounts };
}

export function unpackRows(packed: SymbolicTensor, layout: SymbolicTensor, dims: number[], name: string): SymbolicTensor[] {
  return [...applyOpOutputs(unpackRowsDef, [packed, layout], { dims }, name)];
}

// A column of the group the loss does not read: zero gradients would still move its
// table under optimizers whose update of a zero gradient is not a no-op (momentum, FTRL,
// non-lazy Adam), so it is refused.
function zerosLikeRows(t: SymbolicTensor): SymbolicTensor {
  throw new Error(
    `coalesced lookup: the loss does not depend on '${t.name}'; every column of a coalesced group must feed the loss ` +
      '(leave the column out, or give it a group of its own with embNumGroups)',
  );
}
