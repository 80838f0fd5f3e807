// The reader threads of a dataset's passes: started on demand, one message queue each,
// kept from a pass for the next one (lib/data/source.ts), ended together when a pass
// fails (or its threads do not stop), or when the dataset is collected.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { readerNice } from './reader_priority';
import type { FromWorker, ToWorker } from './worker';

// When hb-ts runs from its TypeScript sources (its own tests), worker.ts has no .js next
// to it: the thread then compiles each module as it loads it, with the typescript
// package the sources need anyway, keeping the output in a cache keyed by the source
// text so that later threads skip loading the compiler.
const TS_BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
let ts;
require.extensions['.ts'] = (module, filename) => {
  const source = fs.readFileSync(filename, 'utf8');
  const key = crypto.createHash('sha256').update(filename).update('\\0').update(source).digest('hex');
  const cached = path.join(workerData.cache, key + '.js');
  let output;
  try {
    output = fs.readFileSync(cached, 'utf8');
  } catch {
    ts ??= require(workerData.typescript);
    output = ts.transpileModule(source, {
      fileName: filename,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true, sourceMap: false },
    }).outputText;
    try {
      fs.mkdirSync(workerData.cache, { recursive: true });
      const temporary = cached + '.' + process.pid + '.' + require('node:worker_threads').threadId;
      fs.writeFileSync(temporary, output);
      fs.renameSync(temporary, cached);
    } catch {}
  }
  module._compile(output, filename);
};
require(workerData.entry);
`;

let readerThreadsStarted = 0;

/** @internal Reader threads started in this process so far (tests: threads kept across passes). */
export function readerThreadsStartedSoFar(): number {
  return readerThreadsStarted;
}

// A thread starts at the niceness of the thread that creates it, and libuv's thread pool
// (the process's async fs, crypto and zlib work) starts on its first request: a reader at
// nice 19 that made the first one (Parquet's reads do) put the pool at 19 for the whole
// process, checkpoint writes included. A request from this thread first starts it here.
let libuvPoolStarted = false;
function startLibuvPoolHere(): void {
  if (libuvPoolStarted) return;
  libuvPoolStarted = true;
  fs.stat(__filename, () => undefined);
}

function startWorker(): Worker {
  // Read before the thread starts, so a bad HB_READER_NICE fails the pass here, by name.
  const nice = readerNice();
  if (nice > 0) startLibuvPoolHere();
  readerThreadsStarted++;
  const compiled = path.join(__dirname, 'worker.js');
  if (fs.existsSync(compiled)) return new Worker(compiled, { workerData: { nice } });
  const source = path.join(__dirname, 'worker.ts');
  return new Worker(TS_BOOTSTRAP, {
    eval: true,
    workerData: { entry: source, typescript: require.resolve('typescript'), cache: path.join(os.tmpdir(), 'hb-ts-worker-cache'), nice },
  });
}

/** Messages from one worker, awaited one at a time. */
class Inbox {
  private readonly queue: FromWorker[] = [];
  private waiting?: { resolve: (m: FromWorker) => void; reject: (e: Error) => void };
  private failure?: Error;

  push(message: FromWorker): void {
    if (this.waiting !== undefined) {
      const { resolve } = this.waiting;
      this.waiting = undefined;
      resolve(message);
    } else this.queue.push(message);
  }

  fail(error: Error): void {
    this.failure ??= error;
    if (this.waiting !== undefined) {
      const { reject } = this.waiting;
      this.waiting = undefined;
      reject(error);
    }
  }

  next(): Promise<FromWorker> {
    const message = this.queue.shift();
    if (message !== undefined) return Promise.resolve(message);
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }
}

interface PoolState {
  closed: boolean;
  /** A thread failed or exited: the pool cannot serve another pass. */
  broken: boolean;
  workers: Array<{ worker: Worker; inbox: Inbox; waiting: number } | undefined>;
}

// A pass whose iterator was dropped without return() ends its threads when the
// iterator is collected. (The listeners hold only the state, never the pool, so the
// running threads do not keep the pool alive.)
const abandoned = new FinalizationRegistry<PoolState>((state) => {
  state.closed = true;
  for (const entry of state.workers) void entry?.worker.terminate();
});

export class WorkerPool {
  private readonly state: PoolState = { closed: false, broken: false, workers: [] };

  constructor(readonly size: number) {
    abandoned.register(this, this.state, this);
  }

  private slot(i: number): { worker: Worker; inbox: Inbox; waiting: number } {
    const state = this.state;
    if (state.closed) throw new Error('hb.data: the pass over the dataset has ended');
    let entry = state.workers[i];
    if (entry === undefined) {
      const worker = startWorker();
      const inbox = new Inbox();
      worker.on('message', (m: FromWorker) => inbox.push(m));
      worker.on('error', (e: Error) => {
        state.broken = true;
        inbox.fail(new Error(`hb.data reader thread failed: ${e.message}`));
      });
      worker.on('exit', (code) => {
        state.broken = true;
        if (!state.closed) inbox.fail(new Error(`hb.data reader thread exited (code ${code})`));
      });
      // A thread keeps the process alive only while someone waits for it: an iterator
      // left half-read (a loop that broke without return(), a dropped iterator) must not
      // stop the process from exiting. Only after the listeners: Node refs a worker's
      // port again when its first 'message' listener is added, which held the process
      // until a GC happened to collect the pass (seconds later) for a thread that was
      // never waited on.
      worker.unref();
      entry = { worker, inbox, waiting: 0 };
      state.workers[i] = entry;
    }
    return entry;
  }

  /** Whether another pass can run on these threads (none failed, exited or was closed). */
  get usable(): boolean {
    return !this.state.closed && !this.state.broken;
  }

  send(i: number, message: ToWorker): void {
    this.slot(i).worker.postMessage(message);
  }

  /** The thread's next message; `keepAlive` false: the wait does not keep the process alive. */
  async receive(i: number, keepAlive = true): Promise<FromWorker> {
    const entry = this.slot(i);
    if (!keepAlive) return entry.inbox.next();
    if (entry.waiting++ === 0) entry.worker.ref();
    try {
      return await entry.inbox.next();
    } finally {
      if (--entry.waiting === 0) entry.worker.unref();
    }
  }

  async close(): Promise<void> {
    if (this.state.closed) return;
    this.state.closed = true;
    abandoned.unregister(this);
    await Promise.all(this.state.workers.map((entry) => entry?.worker.terminate()));
  }
}
