// Saves and restores a model's variables in modelDir. Every tensor is streamed natively
// in row ranges (tables through their EmbeddingTable, which knows its rows and slots), so
// a table never passes through the JS heap; the newest checkpoint that verifies and fits
// the model is the one restored (refused newer ones are logged), its files hashed as they
// are read (one pass; a corrupt one is refused then and everything read again from an
// older one); keepMax rotates old ones out. A checkpoint that lacks a tensor the model
// has is refused, never half-restored.
//
// Under a job of W ranks each rank writes its own file in parallel (its shards of the
// sharded tables; rank 0 also every variable each rank holds whole), and rank 0 lists
// them in a layout once every rank's file is durable (Paddle's "each server saves its own
// part"). Any checkpoint restores at any world size: tables are described whole and each
// rank reads the rows it holds (lib/io/checkpoint_source.ts).
import { promises as fsp } from 'fs';
import * as path from 'path';
import { allgather, allreduce } from '../distribute/collectives';
import { DynamicEmbeddingTable } from '../embedding/dynamic_table';
import { EmbeddingTable } from '../embedding/embedding_table';
import { GraphWorld, VariableStore } from '../graph/graph';
import type { Optimizer } from '../train/optimizer';
import { Variable } from '../tensor/variable';
import { tensor } from '../tensor/tensor';
import { CheckpointDType, CheckpointTensor, listCheckpoints, recordShardedCheckpoint, saveCheckpoint, shardFileName, writeCheckpointShard } from '../io/checkpoint_file';
import { fileStamp } from '../io/file_stamp';
import { CheckpointSource, DELTA_BASE_KEY, deltaBaseOf, latestCheckpointSource, openCheckpoint, OWNER_RULE, SHARDED_FORMAT, ShardedLayout } from '../io/checkpoint_source';

/** A tensor as a checkpoint describes it: whole (a sharded table's logical shape). */
export interface SavedTensor {
  name: string;
  dtype: CheckpointDType;
  /** -1 first: any number of rows (a dynamic table's live rows). */
  shape: number[];
  /** 'concat': each rank saves its own rows, any number (a sharded dynamic table). */
  layout?: 'concat';
}

/** One thing a checkpoint holds: a variable, or a table with its slots. */
export interface CheckpointItem {
  /** The tensor names it saves. */
  readonly names: string[];
  /** Of `names`, the optimizer slots, each with the name of the variable it belongs to. */
  readonly slots: ReadonlyMap<string, string>;
  /** Saved as each rank's shard (a sharded table) rather than whole by rank 0. */
  readonly sharded: boolean;
  /** Its tensors, whole (`delta`: as a delta checkpoint holds them). */
  describe(delta?: boolean): SavedTensor[];
  /** What this rank writes of it: its shard's rows, or the whole tensors. */
  save(): CheckpointTensor[];
  /**
   * Reads the tensors among `wanted` that the checkpoint has; resolves to the names read.
   * `delta`: the source is a delta checkpoint put over its base, which was loaded first.
   */
  load(source: CheckpointSource, wanted: ReadonlySet<string>, delta?: boolean): Promise<string[]>;
  /**
   * Saved as changes in a delta checkpoint (a dynamic table: the rows changed since the
   * last full save); every other item is saved whole in a delta too.
   */
  readonly savesChanges?: boolean;
  /** Before save(): reads out what save() returns (a dynamic table's live rows, or with `delta` its changes). */
  prepare?(delta: boolean): Promise<void>;
  /** After the checkpoint of `globalStep` is durable. */
  saved?(globalStep: number, delta: boolean): Promise<void>;
}

/** `slotOf`: for an optimizer slot, the name of its variable. */
export function variableItem(v: Variable, slotOf?: string): CheckpointItem {
  return {
    names: [v.name],
    slots: new Map(slotOf === undefined ? [] : [[v.name, slotOf]]),
    sharded: false,
    describe: () => [{ name: v.name, dtype: 'float32', shape: [...v.shape] }],
    save: () => [{ name: v.name, dtype: 'float32', shape: [...v.shape], data: { tensor: v.handle } }],
    load: async (source, wanted) => {
      const entry = source.entries.get(v.name);
      if (!entry || !wanted.has(v.name)) return [];
      if (entry.shape.join() !== v.shape.join()) {
        throw new Error(`checkpoint ${source.path}: '${v.name}' has shape [${entry.shape}] but the model's variable is [${v.shape}]`);
      }
      await source.read(v.name, v.handle);
      return [v.name];
    },
  };
}

export function tableItem(table: EmbeddingTable): CheckpointItem {
  if (table instanceof DynamicEmbeddingTable) return dynamicTableItem(table);
  return {
    get names() {
      return [table.name, ...table.slots.keys()];
    },
    get slots() {
      return new Map([...table.slots.keys()].map((slot) => [slot, table.name]));
    },
    sharded: table.isSharded,
    describe: () => table.describeSaved(),
    save: () => table.save(),
    load: async (source, wanted) => (source.entries.has(table.name) ? table.restoreFrom(source, wanted) : []),
  };
}

function dynamicTableItem(table: DynamicEmbeddingTable): CheckpointItem {
  return {
    get names() {
      return table.savedNames;
    },
    get slots() {
      return new Map([...table.slots.keys()].map((slot) => [slot, table.name]));
    },
    sharded: table.isSharded,
    savesChanges: true,
    describe: (delta) => table.describeDynamic(delta).map((t) => ({ ...t, layout: 'concat' as const })),
    prepare: (delta) => table.prepareSave(delta),
    save: () => table.saveDynamic(),
    saved: (step, delta) => table.saved(step, delta),
    load: async (source, wanted, delta) => (source.entries.has(table.name) ? table.restoreDynamic(source, wanted, delta) : []),
  };
}

/** What a checkpoint of the model in `store` holds: each table with its slots, every other variable and slot. */
export function checkpointItemsOf(store: VariableStore): CheckpointItem[] {
  const items: CheckpointItem[] = [];
  const covered = new Set<string>();
  for (const v of store.variables.values()) {
    if (v.slotOwner instanceof EmbeddingTable) {
      const item = tableItem(v.slotOwner);
      item.names.forEach((n) => covered.add(n));
      items.push(item);
    } else {
      items.push(variableItem(v));
    }
  }
  // A slot belongs to the variable it is named after (`<variable>/<optimizer>[_n]`): the
  // longest name that prefixes it.
  const ownerOf = (slot: string) => {
    let owner: string | undefined;
    for (const name of store.variables.keys()) if (slot.startsWith(`${name}/`) && name.length > (owner?.length ?? -1)) owner = name;
    return owner;
  };
  for (const [name, slot] of store.slots) if (!covered.has(name)) items.push(variableItem(slot, ownerOf(name)));
  return items;
}

/**
 * Each optimizer's scalars (Adam's beta powers) from a checkpoint's `optimizer_state`; one
 * the checkpoint lacks is refused, as a missing slot is.
 */
export function restoreOptimizerState(file: string, saved: string | undefined, optimizers: Optimizer[]): void {
  let state: unknown;
  try {
    state = saved === undefined ? [] : JSON.parse(saved);
  } catch {
    state = undefined;
  }
  if (!Array.isArray(state)) throw new Error(`Checkpoint ${file}: its optimizer_state is not a JSON array`);
  optimizers.forEach((optimizer, i) => {
    const keys = Object.keys(optimizer.scalarState());
    const entry = state[i] as Record<string, unknown> | undefined;
    const lacking = keys.filter((k) => typeof entry?.[k] !== 'number' || !Number.isFinite(entry[k]));
    if (lacking.length > 0) {
      throw new Error(
        `Checkpoint ${file} lacks ${lacking.join(', ')} of optimizer ${i} (${optimizer.constructor.name} '${optimizer.name}'): ` +
          'it was written with other optimizers, or in another order; restore with the model and optimizers that wrote it, or train in another modelDir',
      );
    }
  });
  optimizers.forEach((optimizer, i) => optimizer.restoreScalarState(state[i]));
}

/** A checkpoint opened (its headers verified; its data as restore() reads it) to restore from, with the newer ones refused on the way. */
export interface OpenedCheckpoint {
  path: string;
  source: CheckpointSource;
  /** A delta checkpoint's base: the full checkpoint it holds the changes since. */
  base?: CheckpointSource;
  /** Newer checkpoints that were refused, newest first, with the reason. */
  skipped: Array<{ path: string; error: string }>;
}



type Skipped = OpenedCheckpoint['skipped'];

/** The file's stamp now ('' when it cannot be read). */
async function fileIdentity(file: string): Promise<string> {
  const stat = await fsp.stat(file).catch(() => undefined);
  return stat ? fileStamp(stat) : '';
}

export class CheckpointManager {
  private chosen?: OpenedCheckpoint | null;
  /** The last full checkpoint written or restored (the base of the next delta), by file name. */
  private base?: { globalStep: number; file: string };
  /**
   * Files (a checkpoint, a delta's base) a restore found corrupt, by path, with the file's
   * identity then and why: refused when opened again (an evaluator looking for newer
   * checkpoints would read one in full before each evaluation), unless rewritten since.
   */
  private readonly corrupt = new Map<string, { identity: string; error: string }>();

  constructor(
    readonly modelDir: string,
    private readonly options: { keepMax: number; log: (line: string) => void },
  ) {}

  /**
   * Opens a checkpoint on its headers: its data is verified as restore() reads it (one
   * pass over each file), and one found corrupt there is refused and another read.
   */
  private async open(file: string): Promise<CheckpointSource> {
    const known = this.corrupt.get(file);
    if (known && known.identity === (await fileIdentity(file))) throw new Error(known.error);
    return openCheckpoint(file, { verifyWhileReading: true });
  }

  /**
   * The newest checkpoint that opens (its headers verified; its data is verified as
   * restore() reads it), looked for once (saves made since do not change it), or undefined
   * when modelDir has none; after fitting() or restore() moved on to an older one, that
   * one. Throws when it has some and none opens: starting from scratch would train over
   * what is left of the model.
   */
  async latest(): Promise<OpenedCheckpoint | undefined> {
    if (this.chosen === undefined) {
      const found = await latestCheckpointSource(this.modelDir, (file) => this.open(file));
      this.logRefused(found?.skipped ?? []);
      const newest = found ? { path: found.source.path, source: found.source, skipped: found.skipped } : undefined;
      this.chosen = (newest && (await this.withBase(newest))) ?? null;
    }
    return this.chosen ?? undefined;
  }

  /**
   * latest() looked for again when the directory lists a checkpoint of a later step than
   * `step` (another process trains there): undefined when it lists none, or when none of
   * them opens. Only names are read when nothing is newer.
   */
  async newerThan(step: number): Promise<OpenedCheckpoint | undefined> {
    const listed = await listCheckpoints(this.modelDir);
    if (!listed.some((c) => c.globalStep > step)) return undefined;
    this.chosen = undefined;
    const latest = await this.latest();
    return latest !== undefined && latest.source.globalStep > step ? latest : undefined;
  }

  /**
   * `candidate` with its base opened when it is a delta; a delta whose base does not open
   * (rotated out, corrupt) is refused and the next older checkpoint tried, as a corrupt
   * one is. undefined for no candidate; throws when every one left was refused.
   */
  private async withBase(candidate: OpenedCheckpoint | undefined): Promise<OpenedCheckpoint | undefined> {
    const skipped = candidate?.skipped;
    while (candidate) {
      const baseFile = deltaBaseOf(candidate.source);
      if (baseFile === undefined) return candidate;
      try {
        if (path.basename(baseFile) !== baseFile) throw new Error(`its base '${baseFile}' is not a file name`);
        const base = await this.open(path.join(this.modelDir, baseFile));
        if (deltaBaseOf(base) !== undefined) throw new Error(`its base ${baseFile} is a delta itself`);
        if (base.globalStep >= candidate.source.globalStep) throw new Error(`its base ${baseFile} is not older than it`);
        return { ...candidate, base };
      } catch (err) {
        const refused = { path: candidate.path, error: `Checkpoint ${candidate.path} is a delta whose base cannot be used: ${err instanceof Error ? err.message : String(err)}` };
        candidate.skipped.push(refused);
        this.logRefused([refused]);
        candidate = await this.olderThan(candidate.path, candidate.skipped);
      }
    }
    // Checkpoints are there and none can be used: starting from scratch would train over
    // the model (and overwrite the base the deltas name), so nothing starts.
    if (skipped && skipped.length > 0) throw new Error(`No usable checkpoint in ${this.modelDir}:\n` + skipped.map((s) => `  ${s.error}`).join('\n'));
    return undefined;
  }

  /**
   * The checkpoint to restore `items` from: latest() when it holds each of their tensors
   * with the dtype and shape the model has, else the newest older one that opens and
   * does; one that does not fit is refused, logged and listed in `skipped` as a corrupt
   * one is (an edited header that was re-signed, a file of another model). Throws when
   * none fits, and when the checkpoint lacks tensors the model has: restoring it would
   * leave those at their initial values (a partial restore is not offered).
   */
  async fitting(items: CheckpointItem[]): Promise<OpenedCheckpoint | undefined> {
    let candidate = await this.latest();
    if (!candidate) return undefined;
    const expected = items.flatMap((item) => item.describe());
    const skipped: Skipped = [...candidate.skipped];
    for (;;) {
      // A delta and its base must each hold every tensor, as the model has it.
      const sources = candidate.base ? [candidate.base, candidate.source] : [candidate.source];
      const missing = [...new Set(sources.flatMap((source) => expected.filter((t) => !source.entries.has(t.name)).map((t) => t.name)))];
      if (missing.length > 0) throw new Error(missingMessage(candidate, missing, items));
      const misfits = sources.flatMap((source) =>
        expected.flatMap(({ name, dtype, shape }) => {
          const entry = source.entries.get(name)!;
          const which = source === candidate!.base ? ' (in its base)' : '';
          if (entry.dtype !== dtype) return [`'${name}'${which} is ${entry.dtype} but the model's is ${dtype}`];
          const rowsAny = shape[0] === -1 && entry.shape.length === shape.length;
          if (rowsAny ? entry.shape.slice(1).join() !== shape.slice(1).join() : entry.shape.join() !== shape.join()) return [`'${name}'${which} has shape [${entry.shape}] but the model's is [${shape}]`];
          return [];
        }),
      );
      if (misfits.length === 0) {
        this.chosen = { ...candidate, skipped };
        return this.chosen;
      }
      const refused = { path: candidate.path, error: `Checkpoint ${candidate.path} does not fit the model: ${listed(misfits, '; ')}` };
      skipped.push(refused);
      this.logRefused([refused]);
      candidate = await this.withBase(await this.olderThan(candidate.path, skipped));
      if (!candidate) {
        // Nothing is chosen: a retry looks again, and fails again unless the files changed.
        this.chosen = undefined;
        throw new Error(`No checkpoint in ${this.modelDir} fits the model:\n` + skipped.map((s) => `  ${s.error}`).join('\n'));
      }
    }
  }

  /**
   * Reads the tensors of `items` named in `wanted` from `checkpoint` (a delta: what its
   * base holds of the items saved as changes, then the delta over it), verifying the files
   * as they are read. One whose data does not match its SHA-256 is refused, logged and
   * listed in `skipped` as at open, and every item read again, whole, from the newest
   * older one that fits (fitting); throws when none is left. Resolves to the checkpoint
   * read and the names read; the full checkpoint read becomes the base of the next delta.
   */
  async restore(checkpoint: OpenedCheckpoint, items: CheckpointItem[], wanted: ReadonlySet<string>): Promise<{ checkpoint: OpenedCheckpoint; read: string[] }> {
    for (;;) {
      const outcome = await this.readVerified(checkpoint, items, wanted);
      if ('read' in outcome) {
        const full = checkpoint.base ?? checkpoint.source;
        this.base = { globalStep: full.globalStep, file: path.basename(full.path) };
        return { checkpoint, read: outcome.read };
      }
      this.corrupt.set(outcome.file, { identity: outcome.identity, error: outcome.error });
      const refused = { path: checkpoint.path, error: outcome.refused };
      checkpoint.skipped.push(refused);
      this.logRefused([refused]);
      try {
        const older = await this.withBase(await this.olderThan(checkpoint.path, checkpoint.skipped));
        if (!older) throw new Error(`No usable checkpoint in ${this.modelDir}:\n` + checkpoint.skipped.map((s) => `  ${s.error}`).join('\n'));
        this.chosen = older;
        // fitting starts from the chosen one, so it resolves to one or throws.
        checkpoint = (await this.fitting(items))!;
      } catch (err) {
        // Nothing is chosen: a retry looks again (and reads again).
        this.chosen = undefined;
        throw err;
      }
      // What was read came from the refused one: everything comes from this one.
      wanted = new Set(items.flatMap((item) => item.names));
    }
  }

  /**
   * The names read, or why the checkpoint is refused: a file (its own, or its base) whose
   * data does not match its digest, with that file's identity and error.
   */
  private async readVerified(
    checkpoint: OpenedCheckpoint,
    items: CheckpointItem[],
    wanted: ReadonlySet<string>,
  ): Promise<{ read: string[] } | { refused: string; file: string; identity: string; error: string }> {
    const { base, source } = checkpoint;
    const read: string[] = [];
    let failure: { error: unknown } | undefined;
    try {
      if (base) for (const item of items) if (item.savesChanges) await item.load(base, wanted, false);
      for (const item of items) read.push(...(await item.load(source, wanted, base !== undefined)));
    } catch (error) {
      // Values from a corrupt file can fail a load (a dynamic table's keys): the file is
      // refused then, not the load's error thrown.
      failure = { error };
    }
    for (const file of base ? [base, source] : [source]) {
      try {
        await file.verified();
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        const refused = file === base ? `Checkpoint ${checkpoint.path} is a delta whose base cannot be used: ${why}` : why;
        return { refused, file: file.path, identity: await fileIdentity(file.path), error: why };
      }
    }
    if (failure) throw failure.error;
    return { read };
  }

  /**
   * Whether a save at `globalStep` asked for as a delta can be one: a full checkpoint of
   * this run (written or restored) is there to be its base, and some item saves changes.
   */
  private deltaBase(globalStep: number, items: CheckpointItem[], delta: boolean): { globalStep: number; file: string } | undefined {
    if (!delta || !items.some((item) => item.savesChanges)) return undefined;
    return this.base && this.base.globalStep < globalStep ? this.base : undefined;
  }

  /**
   * Writes every item's tensors at `globalStep`; resolves to the file written. `delta`:
   * a delta checkpoint against the last full one (a full one when there is none yet).
   */
  async save(globalStep: number, items: CheckpointItem[], metadata: Record<string, string>, delta = false): Promise<string> {
    const base = this.deltaBase(globalStep, items, delta);
    for (const item of items) await item.prepare?.(base !== undefined);
    const tensors = items.flatMap((item) => item.save());
    const info = await saveCheckpoint(this.modelDir, globalStep, tensors, {
      keepMax: this.options.keepMax,
      metadata: base ? { ...metadata, [DELTA_BASE_KEY]: base.file } : metadata,
      deltaBase: base?.file,
    });
    for (const item of items) await item.saved?.(globalStep, base !== undefined);
    if (!base) this.base = { globalStep, file: path.basename(info.path) };
    return info.path;
  }

  /**
   * Under a job, on every rank at the same step (collective): writes this rank's file,
   * learns that every rank's is durable (or which could not write), then rank 0 lists
   * them in the step's layout; resolves, on every rank, once the checkpoint is complete.
   */
  async saveSharded(globalStep: number, items: CheckpointItem[], metadata: Record<string, string>, world: GraphWorld, delta = false): Promise<string> {
    const { size: W, rank } = world;
    // Every rank saved and restored the same checkpoints, so every rank picks the same base.
    const base = this.deltaBase(globalStep, items, delta);
    if (base) metadata = { ...metadata, [DELTA_BASE_KEY]: base.file };
    const ours = items.filter((item) => item.sharded || rank === 0);
    for (const item of ours) await item.prepare?.(base !== undefined);
    const mine = ours.flatMap((item) => item.save());
    let written: { sha256: string; bytes: number } | undefined;
    let failure: Error | undefined;
    try {
      written = await writeCheckpointShard(this.modelDir, globalStep, { rank, worldSize: W }, mine, rank === 0 ? metadata : {});
    } catch (error) {
      failure = error as Error;
    }
    // Each rank's outcome: ok, its file's SHA-256 (8 words), its size (2 words), and the
    // step it saved (2 words): every rank must have written the same step.
    const WORDS = 13;
    const record = new Int32Array(WORDS);
    if (written) {
      record[0] = 1;
      for (let i = 0; i < 8; i++) record[1 + i] = Number.parseInt(written.sha256.slice(8 * i, 8 * i + 8), 16) | 0;
      record[9] = Math.floor(written.bytes / 2 ** 32);
      record[10] = written.bytes % 2 ** 32 | 0;
    }
    record[11] = Math.floor(globalStep / 2 ** 32);
    record[12] = globalStep % 2 ** 32 | 0;
    const all = (await (await allgather(tensor(record, [1, WORDS], 'int32', { device: 'cpu' }))).data()) as Int32Array;
    if (failure) throw failure;
    const ranks = Array.from({ length: W }, (_, r) => r);
    const failed = ranks.filter((r) => all[r * WORDS] !== 1);
    if (failed.length > 0) {
      throw new Error(`checkpoint at step ${globalStep} was not written: rank${failed.length > 1 ? 's' : ''} ${failed.join(', ')} could not write ${failed.length > 1 ? 'their files' : 'its file'} (see ${failed.length > 1 ? 'their' : 'its'} error); the previous checkpoint stays the latest`);
    }
    const steps = ranks.map((r) => (all[r * WORDS + 11] >>> 0) * 2 ** 32 + (all[r * WORDS + 12] >>> 0));
    if (steps.some((step) => step !== globalStep)) {
      throw new Error(`checkpoint not written: the ranks are at different global steps (${steps.map((step, r) => `rank ${r}: ${step}`).join(', ')}); the previous checkpoint stays the latest`);
    }
    const name = `model.ckpt-${globalStep}.sharded.json`;
    let listed: Error | undefined;
    if (rank === 0) {
      const layout: ShardedLayout = {
        format: SHARDED_FORMAT,
        globalStep,
        worldSize: W,
        ownerRule: OWNER_RULE,
        shards: ranks.map((r) => {
          const words = Array.from(all.subarray(r * WORDS + 1, r * WORDS + 9), (w) => (w >>> 0).toString(16).padStart(8, '0'));
          return { file: shardFileName(globalStep, r, W), sha256: words.join(''), bytes: (all[r * WORDS + 9] >>> 0) * 2 ** 32 + (all[r * WORDS + 10] >>> 0) };
        }),
        tensors: Object.fromEntries(items.flatMap((item) => item.describe(base !== undefined).map((t) => [t.name, { dtype: t.dtype, shape: t.shape, layout: t.layout ?? (item.sharded ? 'sharded' : 'whole') }] as const))),
        metadata,
      };
      try {
        await recordShardedCheckpoint(this.modelDir, globalStep, JSON.stringify(layout, null, 1) + '\n', this.options.keepMax, W, base?.file);
      } catch (error) {
        listed = error as Error;
      }
    }
    // Every rank learns whether rank 0 listed it: the checkpoint is complete, on every
    // rank, before any goes on.
    const outcome = (await (await allreduce(tensor(Int32Array.of(listed ? 1 : 0), [1], 'int32', { device: 'cpu' }), { op: 'max' })).data()) as Int32Array;
    if (listed) throw listed;
    if (outcome[0] !== 0) throw new Error(`checkpoint at step ${globalStep} was not written: rank 0 could not write its layout (see its error); the previous checkpoint stays the latest`);
    for (const item of ours) await item.saved?.(globalStep, base !== undefined);
    if (!base) this.base = { globalStep, file: name };
    return `${this.modelDir}/${name}`;
  }

  /** The newest checkpoint listed before `file` that opens; those that do not go to `skipped`. */
  private async olderThan(file: string, skipped: Skipped): Promise<OpenedCheckpoint | undefined> {
    const listed = (await listCheckpoints(this.modelDir)).map((c) => c.path);
    for (let i = listed.indexOf(file) - 1; i >= 0; i--) {
      try {
        return { path: listed[i], source: await this.open(listed[i]), skipped };
      } catch (err) {
        const refused = { path: listed[i], error: err instanceof Error ? err.message : String(err) };
        skipped.push(refused);
        this.logRefused([refused]);
      }
    }
    return undefined;
  }

  private logRefused(skipped: Skipped): void {
    for (const s of skipped) this.options.log(`checkpoint ${s.path} was refused (${s.error}); using an older one`);
  }
}

/**
 * What the checkpoint lacks: the model's variables, and apart from them the slots of
 * variables it does have, with the slots it has for those (another optimizer's).
 */
function missingMessage(checkpoint: OpenedCheckpoint, missing: string[], items: CheckpointItem[]): string {
  const slotOf = new Map(items.flatMap((item) => [...item.slots]));
  const variables = missing.filter((n) => !slotOf.has(n)).sort();
  const lost = new Set(variables);
  // A missing variable's slots are missing with it; they would only repeat it.
  const slots = missing.filter((n) => slotOf.has(n) && !lost.has(slotOf.get(n)!));
  const parts: string[] = [];
  if (variables.length > 0) parts.push(`lacks ${variables.length} tensor${variables.length === 1 ? '' : 's'} the model has: ${listed(variables.map(quote))}`);
  if (slots.length > 0) {
    const owners = new Set(slots.map((n) => slotOf.get(n)!));
    const modelNames = new Set(items.flatMap((item) => item.names));
    const expected = [...slotOf].filter(([, owner]) => owners.has(owner)).map(([slot]) => slot).sort();
    const found = [...checkpoint.source.entries.keys()].filter((n) => !modelNames.has(n) && [...owners].some((o) => n.startsWith(`${o}/`))).sort();
    parts.push(
      `lacks optimizer slots: the model's optimizers expect ${listed(expected.map(quote))} but the checkpoint has ${found.length > 0 ? listed(found.map(quote)) : 'none'} ` +
        'for the same variables (it was written with another optimizer, or an optimizer of another name)',
    );
  }
  return (
    `Checkpoint ${checkpoint.path} ${parts.join('; it also ')}. Restoring it would leave them at their initial values, so nothing is restored: ` +
    'restore with the model and optimizers that wrote it, or train this model in another modelDir'
  );
}

const quote = (name: string) => `'${name}'`;

/** The first 20 of `items` joined, then how many in all: a big model's list stays readable. */
function listed(items: string[], separator = ', '): string {
  return items.length <= 20 ? items.join(separator) : `${items.slice(0, 20).join(separator)}${separator}... (${items.length} in all)`;
}
