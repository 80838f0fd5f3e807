// The compiled form of a graph that planCreate takes: plain, serializable data (the
// export of a model writes it to disk as is). Tensors are not in it: a plan's parameters
// are described here and bound separately, in order, when the plan is made.

/** Every dtype a plan value may hold (float16 / bfloat16: rows on the wire between workers). */
export type PlanDType = 'float32' | 'float64' | 'int32' | 'int64' | 'float16' | 'bfloat16';

/** A kernel attr: numbers, booleans, enum names, or lists of numbers / names. */
export type KernelAttrValue = number | boolean | string | number[] | string[];

/** -1: the batch size of the run; -2: sized when the value is written (or fed). */
export type PlanDim = number;

export interface PlanValueSpec {
  /**
   * temp: a storage slot (index), shared by values whose lives do not overlap;
   * param: spec.params[index]; feed: spec.feeds[index]; alias: value `index` with this
   * shape (a reshape); dynamic: sized by the kernel that writes it (index -1).
   */
  kind: 'temp' | 'param' | 'feed' | 'alias' | 'dynamic';
  dtype: PlanDType;
  shape: PlanDim[];
  index: number;
}

export interface PlanParamSpec {
  /** The variable's (checkpoint) name. */
  name: string;
  dtype: PlanDType;
  shape: number[];
}

export interface PlanFeedSpec {
  name: string;
  dtype: 'float32' | 'int32' | 'int64';
  shape: PlanDim[];
}

/** The parts of a training step a profile reports; a plan step that exchanges with other ranks counts as 'exchange'. */
export type StepPhase = 'forward' | 'backward' | 'update';

export interface PlanStepSpec {
  /** The graph node's name, for messages. */
  name: string;
  kernel: string;
  /** Value ids; -1 for an absent optional input or output. */
  inputs: number[];
  outputs: number[];
  attrs: Record<string, KernelAttrValue>;
  /** Its node's part of the training step, for profiles (absent: forward). */
  phase?: StepPhase;
}

export interface PlanSpec {
  /** The kernel registry version it was compiled against (lib/native.ts). */
  version: number;
  /** Where the plan runs: 'cpu' or 'cuda:N'. */
  device: string;
  values: PlanValueSpec[];
  params: PlanParamSpec[];
  feeds: PlanFeedSpec[];
  steps: PlanStepSpec[];
  storageCount: number;
}
