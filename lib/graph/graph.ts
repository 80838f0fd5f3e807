// Symbolic tensors and the graph a modelFn builds. A tensor has a dtype and a shape whose
// dimensions may be -1 (BATCH: the batch size, known when a step runs) or, first, -2
// (DYNAMIC: known only once the value is computed, e.g. the unique ids of a batch).
// Nodes are numbered in creation order, which is also an order where every input comes
// before its consumers; a node may have several outputs (unique: ids and their index).
import type { Batch } from '../data/batch';
import { Initializer } from '../initializers/initializers';
import { ScopedValue } from '../tensor/scoped_value';
import { Variable, variable } from '../tensor/variable';
import { shownValue } from '../shown_value';
import type { StepPhase } from './plan_spec';

export type Shape = readonly number[];
export const BATCH = -1;
export const DYNAMIC = -2;

/** The dtypes graph values hold: dense float32, ids, and the wire dtypes of exchanged rows. */
export type GraphDType = 'float32' | 'int32' | 'int64' | 'float16' | 'bfloat16';

export interface OutputSpec {
  shape: Shape;
  dtype: GraphDType;
}

export interface Node {
  readonly id: number;
  readonly op: string;
  readonly name: string;
  readonly inputs: readonly SymbolicTensor[];
  readonly attrs: Readonly<Record<string, unknown>>;
  /** Empty for nodes run only for their effect (updates, metric accumulators). */
  readonly outputs: readonly SymbolicTensor[];
  /** outputs[0]. */
  readonly output?: SymbolicTensor;
  /** The part of the training step it belongs to (hb.profile's phases). */
  readonly phase: StepPhase;
}

export class SymbolicTensor {
  /** @internal */
  constructor(
    readonly graph: Graph,
    readonly node: Node,
    /** Which output of `node` this is. */
    readonly index: number,
    readonly shape: Shape,
    readonly dtype: GraphDType = 'float32',
  ) {}

  get name(): string {
    return this.index === 0 ? this.node.name : `${this.node.name}:${this.index}`;
  }

  get rank(): number {
    return this.shape.length;
  }

  toString(): string {
    return `SymbolicTensor('${this.name}', ${this.dtype} ${shapeString(this.shape)})`;
  }
}

export function isSymbolic(value: unknown): value is SymbolicTensor {
  return value instanceof SymbolicTensor;
}

/**
 * A model's variables and optimizer slots by name, shared by the graphs of one Estimator
 * (train, eval, predict). The names are the checkpoint's: `dense/kernel`,
 * `C1_embedding/embedding_weights`, `dense/kernel/Adagrad`, as TensorFlow names them.
 */
export class VariableStore {
  readonly variables = new Map<string, Variable>();
  /** Optimizer slots, by their variable's name and the optimizer's (`<variable>/Adagrad`). */
  readonly slots = new Map<string, Variable>();

  getOrCreate(name: string, shape: number[], initializer: Initializer, trainable: boolean, device: string): Variable {
    const existing = this.variables.get(name);
    if (existing) {
      if (existing.shape.join() !== shape.join()) {
        throw new Error(`variable '${name}' exists with shape [${existing.shape}] but [${shape}] was asked for`);
      }
      return existing;
    }
    const made = variable(initializer, { name, shape, trainable, device, exactName: true });
    this.variables.set(name, made);
    return made;
  }

  /**
   * Registers a variable made elsewhere (an embedding column's table) under `name`. A
   * table made again under the same name (a modelFn making its columns at each call)
   * gets the registered variable, as TF's variables are found by name; one of another
   * shape (`shape`, its width: two embedding columns of one categorical column with
   * different dimensions) is refused rather than read as the other.
   */
  adopt(name: string, made: () => Variable, shape?: readonly number[], conflict?: (existing: Variable) => string | undefined): Variable {
    const existing = this.variables.get(name);
    if (existing) {
      const why = conflict?.(existing);
      if (why !== undefined) throw new Error(`two embedding tables are named '${name}' in one model (${why}): give each its own categorical column`);
      // shape[0] -1: any number of rows (a dynamic table's pool).
      if (shape !== undefined && (existing.shape.slice(1).join() !== shape.slice(1).join() || (shape[0] >= 0 && existing.shape[0] !== shape[0]))) {
        throw new Error(
          `two embedding tables are named '${name}' in one model, [${existing.shape}] and [${shape}] (two embedding columns of one ` +
            'categorical column with different dimensions or bucket counts): give each its own categorical column',
        );
      }
      return existing;
    }
    const v = made();
    this.variables.set(name, v);
    return v;
  }

  /**
   * Names for `count` new slots of `variable` under `optimizerName`, unique in the store,
   * as TF names them: `v/Adam`, then `v/Adam_1`, ...
   */
  slotNames(variableName: string, optimizerName: string, count: number): string[] {
    const base = `${variableName}/${optimizerName}`;
    const taken = (name: string) => this.slots.has(name) || this.variables.has(name);
    const names: string[] = [];
    for (let i = 0; names.length < count; i++) {
      const name = i === 0 ? base : `${base}_${i}`;
      if (!taken(name)) names.push(name);
    }
    return names;
  }
}

/**
 * How a feed is made from a raw batch, as data (an export writes it, serving rebuilds the
 * feed from it without the modelFn): a numeric feature read as it is, a lookup column's
 * ids (one part of the ragged value its categorical column gives), or a dense column's
 * values. `column` is the feature column object; the export serializes it.
 */
export type FeedRecipe =
  | { kind: 'numeric'; key: string; width: number }
  | { kind: 'column_ids'; part: 'ids' | 'row_splits' | 'weights'; column: unknown }
  | { kind: 'column_dense'; column: unknown };

/** A per-step input: built from the raw batch by `build` before the step runs. */
export interface Feed {
  readonly name: string;
  readonly dtype: 'float32' | 'int32' | 'int64';
  /** BATCH and DYNAMIC dims allowed (ids: [DYNAMIC]; dense features: [BATCH, n]). */
  readonly shape: Shape;
  build(batch: Batch): Promise<Float32Array | BigInt64Array | Int32Array> | Float32Array | BigInt64Array | Int32Array;
  /** Its value for a batch of no rows (default: no values): a ragged feed's row splits are [0]. */
  empty?(): Float32Array | BigInt64Array | Int32Array;
  /** How it is made from a raw batch, as data; absent for feeds no export can rebuild (labels, a step's flags). */
  readonly recipe?: FeedRecipe;
}

/** The ranks a graph's step runs on: its exchanges are compiled for this world. */
export interface GraphWorld {
  readonly size: number;
  readonly rank: number;
}

export class Graph {
  readonly nodes: Node[] = [];
  readonly feeds: Feed[] = [];
  /** The train ops minimize() made on this graph, in order (their optimizers' checkpoint order). */
  readonly trainOps: unknown[] = [];
  /** Under a job, the step's first exchange (lib/graph/ops/exchange.ts stepSync), made first. */
  stepSync?: { agreed: SymbolicTensor; feed: Feed };
  /** The variable each variable-source node stands for, by node id. */
  readonly variableOf = new Map<number, Variable>();
  private readonly usedNames = new Map<string, number>();
  private readonly variableNodes = new Map<Variable, SymbolicTensor>();
  private phase: StepPhase = 'forward';

  /**
   * `device`: where the compiled plan runs, and where the graph's own variables, constants
   * and metric state are made. `world`: the job it runs in (default: one process).
   */
  constructor(
    readonly store: VariableStore,
    readonly mode: string,
    readonly device: string,
    readonly world: GraphWorld = { size: 1, rank: 0 },
  ) {}

  /** A unique node name: `base`, then `base_1`, ... as TF names ops and layers. */
  uniqueName(base: string): string {
    const count = this.usedNames.get(base) ?? 0;
    this.usedNames.set(base, count + 1);
    return count === 0 ? base : `${base}_${count}`;
  }

  /** Runs `make` with the nodes it adds marked as part of `phase` (gradients, updates). */
  inPhase<T>(phase: StepPhase, make: () => T): T {
    const outer = this.phase;
    this.phase = phase;
    try {
      return make();
    } finally {
      this.phase = outer;
    }
  }

  addNode(op: string, inputs: SymbolicTensor[], attrs: Record<string, unknown>, outputs: readonly OutputSpec[], name?: string): Node {
    for (const input of inputs) {
      if (!(input instanceof SymbolicTensor)) throw new TypeError(`${name ?? op}: inputs must be symbolic tensors (inside a modelFn), got ${shownValue(input)}`);
      if (input.graph !== this) throw new Error(`${name ?? op}: input '${input.name}' belongs to another graph (another modelFn call)`);
    }
    const node: { -readonly [K in keyof Node]: Node[K] } = {
      id: this.nodes.length,
      op,
      name: name ?? this.uniqueName(op),
      inputs,
      attrs,
      outputs: [],
      phase: this.phase,
    };
    node.outputs = outputs.map((o, i) => new SymbolicTensor(this, node, i, Object.freeze([...o.shape]), o.dtype));
    node.output = node.outputs[0];
    this.nodes.push(node);
    return node;
  }

  /** The symbolic tensor reading `v` (one node per variable). */
  variableTensor(v: Variable): SymbolicTensor {
    let t = this.variableNodes.get(v);
    if (!t) {
      const node = this.addNode('variable', [], {}, [{ shape: [...v.shape], dtype: 'float32' }], v.name);
      this.variableOf.set(node.id, v);
      t = node.output as SymbolicTensor;
      this.variableNodes.set(v, t);
    }
    return t;
  }

  addFeed(feed: Feed): number {
    this.feeds.push(feed);
    return this.feeds.length - 1;
  }
}

// The graph a modelFn is building, followed through the modelFn's awaits: two models
// built at once (an async modelFn, two Estimators) each add their ops to their own graph.
// Ops made outside one fail with a message saying so.
const buildingGraph = new ScopedValue<Graph>();

export function currentGraph(what: string, ErrorClass: ErrorConstructor = Error): Graph {
  const g = buildingGraph.get();
  if (!g) throw new ErrorClass(`${what}: symbolic ops run inside a modelFn (hb.estimator.Estimator), where features are symbolic`);
  return g;
}

/** The graph a modelFn is building, if one is. */
export function maybeCurrentGraph(): Graph | undefined {
  return buildingGraph.get();
}

export function withGraph<T>(graph: Graph, body: () => Promise<T> | T): Promise<T> {
  return buildingGraph.run(graph, async () => body());
}

export function shapeString(shape: Shape): string {
  return `[${shape.map((d) => (d === BATCH ? 'batch' : d === DYNAMIC ? '?' : String(d))).join(', ')}]`;
}
