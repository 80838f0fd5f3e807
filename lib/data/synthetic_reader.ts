// Generating Criteo-like rows in a worker. Each row draws from its own generator
// (seeded by the dataset seed and the row's index), so the data depends only on the
// seed, never on the number of workers, the block size or the partitioning.
import type { ReadContext } from './reader';
import { PlantedModel, RowRandom, SyntheticSpec } from './synthetic_model';
import type { UnitBase, WireChunk, WireColumn } from './wire';

export interface SyntheticTask extends SyntheticSpec {
  denseNames: string[];
  labelField: string;
  /** Rows per block handed over (a unit may hold many blocks). */
  blockRows: number;
}

export interface SyntheticUnit extends UnitBase {
  firstRow: number;
  rows: number;
}

const TWO32 = 4294967296;

let cached: { key: string; model: PlantedModel } | undefined;

function modelFor(task: SyntheticTask): PlantedModel {
  const key = JSON.stringify([task.seed, task.numDense, task.tables]);
  if (cached?.key !== key) cached = { key, model: new PlantedModel(task) };
  return cached.model;
}

export async function* readSyntheticUnit(unit: SyntheticUnit, task: SyntheticTask, _context: ReadContext): AsyncGenerator<WireChunk> {
  for (let done = 0; done < unit.rows; done += task.blockRows) {
    yield syntheticBlock(unit.firstRow + done, Math.min(task.blockRows, unit.rows - done), task);
  }
}

/** Rows [firstRow, firstRow + n) as one block. */
function syntheticBlock(firstRow: number, n: number, task: SyntheticTask): WireChunk {
  const model = modelFor(task);
  const tables = task.tables;
  const dense = task.denseNames.map(() => new Float32Array(n));
  const label = new Float32Array(n);
  const splits = tables.map(() => new Int32Array(n + 1));
  // Ids are written as two 32-bit words into the int64 buffer, to avoid a BigInt per id.
  let words = tables.map((t) => new Uint32Array(2 * n * t.hotness[1]));
  const contribution = new Float64Array(tables.length);
  for (let i = 0; i < n; i++) {
    const random = new RowRandom(task.seed, firstRow + i);
    let z = model.bias;
    for (let j = 0; j < dense.length; j++) {
      const x = Math.floor(Math.expm1(4 * random.next()));
      dense[j][i] = x;
      z += model.denseWeights[j] * PlantedModel.denseInput(x);
    }
    for (let t = 0; t < tables.length; t++) {
      const table = tables[t];
      const [low, high] = table.hotness;
      const hotness = low === high ? low : low + Math.min(high - low, Math.floor(random.next() * (high - low + 1)));
      const at = splits[t][i];
      const permutation = model.permutations[t];
      const powerLaw = model.powerLaws[t];
      let sum = 0;
      for (let k = 0; k < hotness; k++) {
        const id = permutation.apply(powerLaw.rank(random.next()));
        words[t][2 * (at + k)] = id % TWO32;
        words[t][2 * (at + k) + 1] = Math.floor(id / TWO32);
        sum += model.idWeight(t, id);
      }
      splits[t][i + 1] = at + hotness;
      contribution[t] = hotness > 0 ? sum / hotness : 0;
    }
    for (let t = 0; t < tables.length; t++) z += model.tableScale * contribution[t];
    label[i] = random.next() < PlantedModel.sigmoid(z) ? 1 : 0;
  }
  const columns: WireColumn[] = [{ kind: 'numeric', values: label }];
  for (const values of dense) columns.push({ kind: 'numeric', values });
  for (let t = 0; t < tables.length; t++) {
    const count = splits[t][n];
    const ids = new BigInt64Array(words[t].buffer, 0, words[t].length / 2);
    columns.push({ kind: 'ragged', values: count === ids.length ? ids : ids.slice(0, count), rowSplits: splits[t] });
  }
  words = [];
  return { rows: n, names: [task.labelField, ...task.denseNames, ...tables.map((t) => t.name)], columns };
}
