// The reader thread: plans files and reads units for the main thread, posting columnar
// chunks with their buffers transferred. It runs ahead of the consumer by at most the
// credits the main thread grants, so a slow training step bounds the memory held here.
import { parentPort, workerData } from 'node:worker_threads';
import type { Reader, ReaderKind } from './reader';
import { lowerThisThreadsPriority } from './reader_priority';
import { checkChunk, transferList, UnitBase } from './wire';

export type ToWorker =
  | { type: 'plan'; id: number; kind: ReaderKind; file: string; task: unknown }
  | { type: 'read'; id: number; kind: ReaderKind; task: unknown; units: UnitBase[]; credits: number }
  | { type: 'credit'; id: number; n: number }
  // The consumer stopped early: end the read after the chunk at hand; 'stopped' answers.
  | { type: 'stop'; id: number };

export type FromWorker =
  | { type: 'planned'; id: number; result: unknown }
  | { type: 'chunk'; id: number; unit: number; chunk: import('./wire').WireChunk }
  | { type: 'unitEnd'; id: number; unit: number; skipped: number; why: string[] }
  | { type: 'done'; id: number }
  | { type: 'failed'; id: number; message: string; name: string; code?: string }
  // The answer to 'stop', the read's last message (also when there was none to stop).
  | { type: 'stopped'; id: number };

function readers(kind: ReaderKind): Reader<unknown, UnitBase> {
  // Loaded on first use, so a TSV or synthetic worker never loads Parquet's WebAssembly.
  /* eslint-disable @typescript-eslint/no-require-imports */
  switch (kind) {
    case 'parquet': {
      const m = require('./parquet_reader') as typeof import('./parquet_reader');
      return { plan: m.planParquetFile as Reader<unknown, UnitBase>['plan'], read: m.readParquetUnit as Reader<unknown, UnitBase>['read'] };
    }
    case 'criteoTsv': {
      const m = require('./criteo_tsv_reader') as typeof import('./criteo_tsv_reader');
      return { read: m.readCriteoTsvUnit as Reader<unknown, UnitBase>['read'] };
    }
    case 'synthetic': {
      const m = require('./synthetic_reader') as typeof import('./synthetic_reader');
      return { read: m.readSyntheticUnit as Reader<unknown, UnitBase>['read'] };
    }
  }
  /* eslint-enable @typescript-eslint/no-require-imports */
}

lowerThisThreadsPriority((workerData as { nice?: number } | null)?.nice ?? 0);

const port = parentPort!;
interface Credit {
  left: number;
  wake?: () => void;
  stopped?: boolean;
}
const credits = new Map<number, Credit>();

function post(message: FromWorker, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

// What a failure says across the thread boundary: its message, its class and its code,
// so the main thread throws the same kind of error the reader did.
function failure(error: unknown): { message: string; name: string; code?: string } {
  if (!(error instanceof Error)) return { message: String(error), name: 'Error' };
  const code = (error as Error & { code?: unknown }).code;
  return { message: error.message, name: error.name, code: typeof code === 'string' ? code : undefined };
}

async function plan(message: Extract<ToWorker, { type: 'plan' }>): Promise<void> {
  try {
    const reader = readers(message.kind);
    post({ type: 'planned', id: message.id, result: await reader.plan!(message.file, message.task) });
  } catch (error) {
    post({ type: 'failed', id: message.id, ...failure(error) });
  }
}

async function read(message: Extract<ToWorker, { type: 'read' }>): Promise<void> {
  const credit: Credit = { left: message.credits };
  credits.set(message.id, credit);
  try {
    const reader = readers(message.kind);
    for (const unit of message.units) {
      let skipped = 0;
      const why: string[] = [];
      const context = {
        skip(rows: number, reason: string) {
          skipped += rows;
          if (why.length < 10) why.push(reason);
        },
      };
      for await (const chunk of reader.read(unit, message.task, context)) {
        while (credit.left <= 0 && !credit.stopped) await new Promise<void>((resolve) => (credit.wake = resolve));
        if (credit.stopped) break;
        credit.left--;
        checkChunk(chunk);
        post({ type: 'chunk', id: message.id, unit: unit.index, chunk }, transferList(chunk));
      }
      if (credit.stopped) break;
      post({ type: 'unitEnd', id: message.id, unit: unit.index, skipped, why });
    }
    if (!credit.stopped) post({ type: 'done', id: message.id });
  } catch (error) {
    if (!credit.stopped) post({ type: 'failed', id: message.id, ...failure(error) });
  } finally {
    credits.delete(message.id);
    if (credit.stopped) post({ type: 'stopped', id: message.id });
  }
}

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'plan':
      void plan(message);
      break;
    case 'read':
      void read(message);
      break;
    case 'stop': {
      const credit = credits.get(message.id);
      if (credit === undefined) {
        post({ type: 'stopped', id: message.id });  // its read had ended already
      } else {
        credit.stopped = true;
        const wake = credit.wake;
        credit.wake = undefined;
        wake?.();
      }
      break;
    }
    case 'credit': {
      const credit = credits.get(message.id);
      if (credit !== undefined) {
        credit.left += message.n;
        const wake = credit.wake;
        credit.wake = undefined;
        wake?.();
      }
      break;
    }
  }
});
