// Symbolic tensors and the graph a modelFn builds. Shapes use -1 for the batch
// dimension, which is only known when a step runs. Nodes are numbered in creation
// order, which is also an order where every input comes before its consumers.
import { currentDevice, DeviceSpec } from '../backend';
import { Initializer } from '../initializers/initializers';
import { Variable, variable } from '../tensor/variable';

export type Shape = readonly number[];
export const BATCH = -1;

export interface Node {
  readonly id: number;
  readonly op: string;
  readonly name: string;
  readonly inputs: readonly SymbolicTensor[];
  readonly attrs: Readonly<Record<string, unknown>>;
  /** undefined for nodes run only for their effect (updates, metric accumulators). */
  readonly output?: SymbolicTensor;
}

export class SymbolicTensor {
  /** @internal */
  constructor(
    readonly graph: Graph,
    readonly node: Node,
    readonly shape: Shape,
    readonly dtype: 'float32' = 'float32',
  ) {}

  get name(): string {
    return this.node.name;
  }

  get rank(): number {
    return this.shape.length;
  }

  toString(): string {
    return `SymbolicTensor('${this.name}', [${this.shape.map((d) => (d === BATCH ? 'batch' : d)).join(', ')}])`;
  }
}

export function isSymbolic(value: unknown): value is SymbolicTensor {
  return value instanceof SymbolicTensor;
}

/** Variables by name, shared by the graphs of one Estimator (train, eval, predict). */
export class VariableStore {
  readonly variables = new Map<string, Variable>();

  getOrCreate(name: string, shape: number[], initializer: Initializer, trainable: boolean, device: string = currentDevice()): Variable {
    const existing = this.variables.get(name);
    if (existing) {
      if (existing.shape.join() !== shape.join()) {
        throw new Error(`variable '${name}' exists with shape [${existing.shape}] but [${shape}] was asked for`);
      }
      return existing;
    }
    const made = variable(initializer, { name, shape, trainable, device });
    // hb.variable makes names unique within the process; the store keeps the graph's name.
    this.variables.set(name, made);
    return made;
  }

  /** Registers a variable made elsewhere (an embedding column's table) under `name`. */
  adopt(name: string, made: () => Variable): Variable {
    const existing = this.variables.get(name);
    if (existing) return existing;
    const v = made();
    this.variables.set(name, v);
    return v;
  }
}

export type FeedKind = 'dense' | 'ids' | 'rowSplits' | 'weights';

/** A per-step input: built from the raw batch by `build` before the step runs. */
export interface Feed {
  readonly name: string;
  readonly kind: FeedKind;
  build(batch: RawBatch): Promise<Float32Array | BigInt64Array | Int32Array> | Float32Array | BigInt64Array | Int32Array;
}

export interface RawBatch {
  features: Readonly<Record<string, unknown>>;
  labels?: unknown;
}

export class Graph {
  readonly nodes: Node[] = [];
  readonly feeds: Feed[] = [];
  /** The variable each 'variable' node stands for, by node id. */
  readonly variableOf = new Map<number, Variable>();
  private readonly usedNames = new Map<string, number>();
  private readonly variableNodes = new Map<Variable, SymbolicTensor>();

  /**
   * `device`: where the compiled plan runs, and where the graph's own variables,
   * constants and metric state are made (default: the current device).
   */
  constructor(
    readonly store: VariableStore = new VariableStore(),
    readonly mode: string = 'train',
    readonly device: DeviceSpec = currentDevice() as DeviceSpec,
  ) {}

  /** A unique node name: `base`, then `base_1`, ... as TF names ops and layers. */
  uniqueName(base: string): string {
    const count = this.usedNames.get(base) ?? 0;
    this.usedNames.set(base, count + 1);
    return count === 0 ? base : `${base}_${count}`;
  }

  addNode(op: string, inputs: SymbolicTensor[], attrs: Record<string, unknown>, shape: Shape | undefined, name?: string): Node {
    for (const input of inputs) {
      if (!(input instanceof SymbolicTensor)) throw new TypeError(`${name ?? op}: inputs must be symbolic tensors (inside a modelFn), got ${String(input)}`);
      if (input.graph !== this) throw new Error(`${name ?? op}: input '${input.name}' belongs to another graph (another modelFn call)`);
    }
    const node: { -readonly [K in keyof Node]: Node[K] } = {
      id: this.nodes.length,
      op,
      name: name ?? this.uniqueName(op),
      inputs,
      attrs,
    };
    if (shape !== undefined) node.output = new SymbolicTensor(this, node, Object.freeze([...shape]));
    this.nodes.push(node);
    return node;
  }

  /** The symbolic tensor reading `v` (one node per variable). */
  variableTensor(v: Variable): SymbolicTensor {
    let t = this.variableNodes.get(v);
    if (!t) {
      const node = this.addNode('variable', [], {}, [...v.shape], v.name);
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

// The graph a modelFn is building. Ops made outside one fail with a message saying so.
const graphStack: Graph[] = [];

export function currentGraph(what: string): Graph {
  const g = graphStack[graphStack.length - 1];
  if (!g) throw new Error(`${what}: symbolic ops run inside a modelFn (hb.estimator.Estimator), where features are symbolic`);
  return g;
}

export async function withGraph<T>(graph: Graph, body: () => Promise<T> | T): Promise<T> {
  graphStack.push(graph);
  try {
    return await body();
  } finally {
    graphStack.pop();
  }
}

export function shapeString(shape: Shape): string {
  return `[${shape.map((d) => (d === BATCH ? 'batch' : String(d))).join(', ')}]`;
}
