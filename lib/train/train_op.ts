// What minimize() adds to a graph: one update node per variable, lowered to a fused
// native step (dense rule, or lookup backward + sparse rule for embedding tables).
import { currentGraph, Node, SymbolicTensor } from '../graph/graph';
import { defineOp } from '../graph/op_registry';
import { Variable } from '../tensor/variable';

export const denseApplyDef = defineOp({
  name: 'dense_apply',
  shape: () => [],
  lower: (node, ctx) => {
    ctx.step({
      kind: 'denseApply',
      name: node.name,
      optimizer: ctx.optimizer(node.attrs.optimizer),
      variable: ctx.param(node.attrs.variable as Variable),
      slots: (node.attrs.slots as Variable[]).map((s) => ctx.param(s)),
      grads: [ctx.value(node.inputs[0])],
    });
  },
});

export const sparseApplyDef = defineOp({
  name: 'sparse_apply',
  shape: () => [],
  lower: (node, ctx) => {
    ctx.step({
      kind: 'sparseApply',
      name: node.name,
      optimizer: ctx.optimizer(node.attrs.optimizer),
      variable: ctx.param(node.attrs.variable as Variable),
      slots: (node.attrs.slots as Variable[]).map((s) => ctx.param(s)),
      lookups: (node.attrs.lookups as Node[]).map((l) => ctx.lookupStep(l.id)),
      grads: node.inputs.map((g) => ctx.value(g)),
    });
  },
});

/** The train op EstimatorSpec takes: the updates of one minimize() call. */
export class TrainOp {
  /** @internal */
  constructor(
    readonly loss: SymbolicTensor,
    readonly optimizer: unknown,
    /** @internal */ readonly nodes: Node[],
    readonly variables: Variable[],
  ) {}
}

/** tf.train.get_or_create_global_step(): the Estimator counts steps; this names them. */
export class GlobalStep {
  readonly name = 'global_step';
}

const globalStep = new GlobalStep();

export function getOrCreateGlobalStep(): GlobalStep {
  return globalStep;
}

/** tf.trainable_variables(): the trainable variables the modelFn's graph has read so far. */
export function trainableVariables(): Variable[] {
  const graph = currentGraph('trainableVariables');
  return [...new Set(graph.variableOf.values())].filter((v) => v.trainable);
}
