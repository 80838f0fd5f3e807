// The updates minimize() adds, one per variable, by the optimizer's TF 1.15 rule with the
// hyperparameters each step passes: dense_apply for a dense gradient, sparse_apply for
// IndexedSlices (an embedding table's rows seen, every read of the table in one update,
// as TF aggregates them). Both write variables, so the compiler runs them after every
// op that reads one.
import { Tensor } from '../../tensor/tensor';
import { SymbolicTensor } from '../graph';
import { applyEffect, defineOp } from '../op_registry';

type Named = Tensor & { name: string };

function targets(node: { attrs: Readonly<Record<string, unknown>> }, ctx: { param(t: Tensor, name: string): number }): number[] {
  const variable = node.attrs.variable as Named;
  const slots = node.attrs.slots as Named[];
  return [ctx.param(variable, variable.name), ...slots.map((s) => ctx.param(s, s.name))];
}

export const denseApplyDef = defineOp({
  name: 'dense_apply',
  kernels: ['dense_apply'],
  effect: true,
  stateful: true,
  noGradient: true,
  lower: (node, ctx) =>
    ctx.kernel('dense_apply', [ctx.value(node.inputs[0])], targets(node, ctx), { optimizer: ctx.optimizer(node.attrs.optimizer) }),
});

// inputs: (indices, values) pairs.
export const sparseApplyDef = defineOp({
  name: 'sparse_apply',
  kernels: ['sparse_apply'],
  effect: true,
  stateful: true,
  noGradient: true,
  lower: (node, ctx) =>
    ctx.kernel('sparse_apply', node.inputs.map((x) => ctx.value(x)), targets(node, ctx), {
      optimizer: ctx.optimizer(node.attrs.optimizer),
      // A dynamic table's lookups name ids without a row (not admitted) -1: no update.
      skipMissing: (node.attrs.variable as { slotOwner?: { dynamic?: boolean } }).slotOwner?.dynamic === true,
    }),
});

export interface UpdateTarget {
  variable: Named;
  slots: Named[];
  optimizer: unknown;
}

export function denseApply(grad: SymbolicTensor, target: UpdateTarget, name: string) {
  return applyEffect(denseApplyDef, [grad], { ...target }, name);
}

export function sparseApply(slices: Array<{ indices: SymbolicTensor; values: SymbolicTensor }>, target: UpdateTarget, name: string) {
  return applyEffect(sparseApplyDef, slices.flatMap((s) => [s.indices, s.values]), { ...target }, name);
}
