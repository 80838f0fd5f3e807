// The reader threads of one pass over a dataset: started on demand, one message queue
// each, ended together when the pass ends (or stops early, or fails).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
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

function startWorker(): Worker {
  const compiled = path.join(__dirname, 'worker.js');
  if (fs.existsSync(compiled)) return new Worker(compiled);
  const source = path.join(__dirname, 'worker.ts');
  return new Worker(TS_BOOTSTRAP, {
    eval: true,
    workerData: { entry: source, typescript: require.resolve('typescript'), cache: path.join(os.tmpdir(), 'hb-ts-worker-cache') },
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

export class WorkerPool {
  private readonly workers: Array<{ worker: Worker; inbox: Inbox } | undefined> = [];
  private closed = false;

  constructor(readonly size: number) {}

  private slot(i: number): { worker: Worker; inbox: Inbox } {
    if (this.closed) throw new Error('hb.data: the pass over the dataset has ended');
    let entry = this.workers[i];
    if (entry === undefined) {
      const worker = startWorker();
      const inbox = new Inbox();
      worker.on('message', (m: FromWorker) => inbox.push(m));
      worker.on('error', (e: Error) => inbox.fail(new Error(`hb.data reader thread failed: ${e.message}`)));
      worker.on('exit', (code) => {
        if (!this.closed) inbox.fail(new Error(`hb.data reader thread exited (code ${code})`));
      });
      entry = { worker, inbox };
      this.workers[i] = entry;
    }
    return entry;
  }

  send(i: number, message: ToWorker): void {
    this.slot(i).worker.postMessage(message);
  }

  receive(i: number): Promise<FromWorker> {
    return this.slot(i).inbox.next();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.workers.map((entry) => entry?.worker.terminate()));
  }
}
