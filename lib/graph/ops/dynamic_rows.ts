// dynamic_rows: a dynamic table's rows for distinct int64 ids (native/exec/dynamic_rows_kernel.cc),
// row numbers into the table's row pool, -1 for an id without a row. In TRAIN it counts,
// admits and makes rows (dated by the step's global step); otherwise it only reads. No
// gradient: the rows it names are where gather_rows' gradient goes.
import { DYNAMIC, Graph, SymbolicTensor } from '../graph';
import { Tensor } from '../../tensor/tensor';
import { applyOp, defineOp } from '../op_registry';

const dynamicRowsDef = defineOp({
  name: 'dynamic_rows',
  kernels: ['dynamic_rows'],
  noGradient: true,
  lower: (node, ctx) => {
    const [handle, ids, inverse] = node.inputs;
    ctx.kernel('dynamic_rows', [ctx.value(handle), ctx.value(ids), inverse ? ctx.value(inverse) : -1], [ctx.value(node.output!)], ctx.kernelAttrs('dynamic_rows', node.attrs));
  },
  outputs: ([, ids], _attrs, name) => {
    if (ids.dtype !== 'int64' || ids.rank !== 1) throw new TypeError(`${name}: a dynamic table takes 1-D int64 ids, got ${ids}`);
    return [{ shape: [DYNAMIC], dtype: 'int64' }];
  },
});

/**
 * The int64 [1] tensor naming the table in a plan, as a constant of `graph`; `table` (its
 * name) marks it, so an export binds a table of its own there.
 */
export function tableHandle(graph: Graph, handle: Tensor, name: string, table: string): SymbolicTensor {
  return graph.addNode('constant', [], { tensor: handle, shape: [1], dynamicTable: table }, [{ shape: [1], dtype: 'int64' }], graph.uniqueName(`${name}/handle`)).output as SymbolicTensor;
}

/** `inverse` (unique's): counts each id's entries for admission; training only. */
export function dynamicRows(handle: SymbolicTensor, ids: SymbolicTensor, options: { train: boolean; inverse?: SymbolicTensor; name: string }): SymbolicTensor {
  const inputs = options.train && options.inverse ? [handle, ids, options.inverse] : [handle, ids];
  return applyOp(dynamicRowsDef, inputs, { train: options.train, dtype: 'int64' }, options.name);
}
