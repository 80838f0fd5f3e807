// What an op's lowering sees: value ids for tensors, and ways to emit plan steps.
import { Variable } from '../tensor/variable';
import { SymbolicTensor } from './graph';

export type PlanStepSpec =
  | { kind: 'kernel'; name: string; kernel: string; inputs: number[]; outputs: number[]; attrs: number[] }
  | { kind: 'lookup'; name: string; table: number; ids: number; rowSplits: number; weights: number; output: number; combiner: number; maxNorm: number }
  | { kind: 'sparseApply'; name: string; optimizer: number; variable: number; slots: number[]; lookups: number[]; grads: number[] }
  | { kind: 'denseApply'; name: string; optimizer: number; variable: number; slots: number[]; grads: number[] };

export interface LowerContext {
  /** The value id holding `t`. */
  value(t: SymbolicTensor): number;
  /** Makes `t` a view of `source`'s memory with t's shape (reshape: no copy). */
  alias(t: SymbolicTensor, source: number): void;
  /** Makes `t` the output of a native lookup (its memory is the lookup's own). */
  produced(t: SymbolicTensor): number;
  /** A value reading (and, for accumulators, writing) a variable kept in native memory. */
  paramValue(v: Variable): number;
  /** The plan parameter index of a variable (or constant) kept in native memory. */
  param(v: Variable): number;
  /** The plan step index of the lookup that node `nodeId` lowered to. */
  lookupStep(nodeId: number): number;
  /** The index of `optimizer` in the run's hyperparameter list. */
  optimizer(optimizer: unknown): number;
  kernel(kernel: string, inputs: number[], outputs: number[], attrs?: number[], name?: string): void;
  step(step: PlanStepSpec): number;
  readonly nodeName: string;
}
