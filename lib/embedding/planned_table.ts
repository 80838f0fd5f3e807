// A table as a planned model holds it (hb.estimator.memoryPlan): its rows a variable
// without memory, owned by a stand-in of the table that records the optimizer slots made
// beside them without touching the real table (which stays unmade and slot-less).
import { plannedVariable, Variable } from '../tensor/variable';

/** What a stand-in needs of the table (embedding_table.ts's EmbeddingTable). */
interface TableLike {
  readonly name: string;
  readonly spec: { readonly dim: number; readonly trainable: boolean };
}

/** The stand-in: the table's own methods over planned rows and slots. */
export interface PlannedTable {
  readonly planned: true;
  /** The real table it stands for. */
  readonly table: TableLike;
  readonly rows: number;
  readonly device: string;
  readonly plannedSlots: Map<string, Variable>;
}

export function isPlannedTable(owner: unknown): owner is PlannedTable {
  return typeof owner === 'object' && owner !== null && (owner as Partial<PlannedTable>).planned === true;
}

/** The planned rows of `table` ([rows, dim] on `device`), owned by its stand-in. */
export function plannedTableRows(table: TableLike, rows: number, device: string): Variable {
  const { dim, trainable } = table.spec;
  const stand = Object.create(table) as PlannedTable;
  const pool = plannedVariable(table.name, [rows, dim], 'float32', device, trainable);
  const slots = new Map<string, Variable>();
  Object.defineProperties(stand, {
    planned: { value: true },
    table: { value: table },
    rows: { value: rows },
    device: { value: device },
    plannedSlots: { value: slots },
    // The table's methods read their rows and slots here, not from the real table.
    storage: { value: pool, writable: true },
    slotVariables: { value: slots },
    createSlot: {
      value: (name: string, _initialValue: number, perRow: boolean) => {
        const slot = plannedVariable(name, perRow ? [rows] : [rows, dim], 'float32', device, false);
        slots.set(name, slot);
        return slot;
      },
    },
  });
  pool.slotOwner = stand as unknown as Variable['slotOwner'];
  return pool;
}
